// An `npub1...` key as lowercase hex, for configuration validation and the NIP-11 pubkey.
// (Thin adapter over messages/nostr/nip19.hpp, which does the bech32 work.)
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace graspd::runtime {

/// The 64 hex digits of the 32-byte key in `npub`; std::nullopt unless `npub` is a valid npub
/// (prefix, charset, single case, checksum, 32-byte payload).
std::optional<std::string> decode_npub_hex(std::string_view npub);

}  // namespace graspd::runtime
