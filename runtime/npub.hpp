// Minimal bech32 (BIP-173) decoding of an `npub1...` key into lowercase hex, for configuration
// validation and the NIP-11 pubkey. Full NIP-19 support lives in messages/nostr/nip19.hpp.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace graspd::runtime {

/// The 64 hex digits of the 32-byte key in `npub`; std::nullopt unless `npub` is a valid npub
/// (prefix, charset, single case, checksum, 32-byte payload).
std::optional<std::string> decode_npub_hex(std::string_view npub);

}  // namespace graspd::runtime
