// NIP-19 bech32 encodings: keys (npub), used for configuration, and addresses (naddr), used by
// the status page.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "messages/nostr/event.hpp"

namespace graspd::nostr {

/// "npub1..." for a public key (bech32, not bech32m).
std::string encode_npub(const Pubkey& pubkey);

/// "naddr1..." for the address `kind:author:identifier` with optional relay hints (TLV types 0-3).
std::string encode_naddr(std::uint32_t kind, const Pubkey& author, std::string_view identifier,
                         const std::vector<std::string>& relays = {});

/// The key inside an npub; nullopt on a wrong prefix, checksum, length, mixed
/// case or padding.
std::optional<Pubkey> decode_npub(std::string_view npub);

/// Accepts an npub or 64 hex digits (either case), surrounding whitespace
/// ignored. For operator-supplied configuration values.
std::optional<Pubkey> parse_pubkey(std::string_view text);

/// "nsec1..." for a secret key (the relay key's file format, as ngit-grasp writes it).
std::string encode_nsec(const Bytes32& secret_key);

/// Accepts an nsec or 64 hex digits (either case), surrounding whitespace ignored; nullopt
/// otherwise. Does not check that the bytes are a valid secp256k1 scalar (see verify.hpp).
std::optional<Bytes32> parse_secret_key(std::string_view text);

namespace detail {
/// Generic bech32 of a 32-byte payload (also used for note/nsec in tools).
std::string bech32_encode_32(std::string_view hrp, const Bytes32& data);
std::optional<Bytes32> bech32_decode_32(std::string_view expected_hrp, std::string_view text);
}  // namespace detail

}  // namespace graspd::nostr
