// NIP-19 bech32 encodings of keys (npub), used for configuration.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "messages/nostr/event.hpp"

namespace graspd::nostr {

/// "npub1..." for a public key (bech32, not bech32m).
std::string encode_npub(const Pubkey& pubkey);

/// The key inside an npub; nullopt on a wrong prefix, checksum, length, mixed
/// case or padding.
std::optional<Pubkey> decode_npub(std::string_view npub);

/// Accepts an npub or 64 hex digits (either case), surrounding whitespace
/// ignored. For operator-supplied configuration values.
std::optional<Pubkey> parse_pubkey(std::string_view text);

namespace detail {
/// Generic bech32 of a 32-byte payload (also used for note/nsec in tools).
std::string bech32_encode_32(std::string_view hrp, const Bytes32& data);
std::optional<Bytes32> bech32_decode_32(std::string_view expected_hrp, std::string_view text);
}  // namespace detail

}  // namespace graspd::nostr
