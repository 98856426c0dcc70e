// NIP-98 `Authorization` headers for tests: a signed kind 27235 event, base64-encoded.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "messages/nostr/canonical.hpp"
#include "messages/nostr/json.hpp"
#include "messages/nostr/nip98.hpp"
#include "tests/support/nostr_builders.hpp"

namespace graspd::test {

inline std::string base64_encode(std::string_view bytes) {
  static constexpr char alphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  std::size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    auto n = (std::uint32_t(std::uint8_t(bytes[i])) << 16) |
             (std::uint32_t(std::uint8_t(bytes[i + 1])) << 8) | std::uint8_t(bytes[i + 2]);
    for (int shift : {18, 12, 6, 0}) out += alphabet[(n >> shift) & 63];
  }
  if (i + 1 == bytes.size()) {
    auto n = std::uint32_t(std::uint8_t(bytes[i])) << 16;
    out += alphabet[(n >> 18) & 63];
    out += alphabet[(n >> 12) & 63];
    out += "==";
  } else if (i + 2 == bytes.size()) {
    auto n = (std::uint32_t(std::uint8_t(bytes[i])) << 16) |
             (std::uint32_t(std::uint8_t(bytes[i + 1])) << 8);
    out += alphabet[(n >> 18) & 63];
    out += alphabet[(n >> 12) & 63];
    out += alphabet[(n >> 6) & 63];
    out += '=';
  }
  return out;
}

/// What a NIP-98 token says; each field can be set wrong on purpose.
struct HttpAuthToken {
  std::string url;
  std::string method = "POST";
  /// The body whose SHA-256 goes into `payload`; unset = no payload tag.
  std::optional<std::string> payload_of;
  std::int64_t created_at = 0;
  std::uint8_t key = 0x21;
  std::uint32_t kind = nostr::nip98::kind_http_auth;
};

inline nostr::Event http_auth_event(const HttpAuthToken& token) {
  nostr::Tags tags{{"u", token.url}, {"method", token.method}};
  if (token.payload_of)
    tags.push_back({"payload", nostr::to_hex(nostr::sha256(*token.payload_of))});
  return signed_event(token.kind, std::move(tags), token.created_at, "", token.key);
}

/// The header value "Nostr <base64 of the event JSON>".
inline std::string http_auth_header(const nostr::Event& ev) {
  return "Nostr " + base64_encode(nostr::serialize_event(ev));
}

inline std::string http_auth_header(const HttpAuthToken& token) {
  return http_auth_header(http_auth_event(token));
}

}  // namespace graspd::test
