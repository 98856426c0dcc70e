// Builders for Nostr test data: deterministic secret keys, signed events and NIP-01 frames.
#pragma once

#include <cstdint>
#include <string>
#include <utility>

#include "messages/nostr/event.hpp"
#include "messages/nostr/json.hpp"
#include "messages/nostr/verify.hpp"

namespace graspd::test {

/// A secret key with every byte set to `fill` (valid for 1..0xfe).
inline nostr::SecretKey secret_key(std::uint8_t fill) {
  nostr::SecretKey key{};
  key.fill(fill);
  return key;
}

/// An event signed by `secret_key(key)`. The id depends only on the arguments; the signature
/// uses fresh auxiliary randomness, so sign once and copy when two copies must be identical.
inline nostr::Event signed_event(std::uint32_t kind, nostr::Tags tags, std::int64_t created_at,
                                 std::string content, std::uint8_t key) {
  nostr::Event ev;
  ev.kind = kind;
  ev.tags = std::move(tags);
  ev.created_at = created_at;
  ev.content = std::move(content);
  return nostr::sign_event(std::move(ev), secret_key(key));
}

/// A kind-`kind` event with content "hello", signed by `secret_key(author)`: the actor tests'
/// event.
inline nostr::Event signed_event(std::uint32_t kind, nostr::Tags tags, std::int64_t created_at,
                                 std::uint8_t author = 7) {
  return signed_event(kind, std::move(tags), created_at, "hello", author);
}

/// The client frame `["EVENT",<event>]`.
inline std::string event_frame(const nostr::Event& ev) {
  return "[\"EVENT\"," + nostr::serialize_event(ev) + "]";
}

}  // namespace graspd::test
