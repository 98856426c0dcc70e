// Helpers for store tests: unsigned event builders (the store trusts its caller
// to have verified signatures) and store options over a temporary directory.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <random>
#include <string>

#include "messages/nostr/event.hpp"
#include "store/lmdb/event_store.hpp"
#include "tests/support/temp_dir.hpp"

namespace graspd::store::test {

using TempDir = graspd::test::TempDir;

inline nostr::Bytes32 bytes_of(std::uint64_t n, std::uint8_t salt = 0) {
  nostr::Bytes32 out{};
  for (int i = 0; i < 8; ++i)
    out[static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(n >> (56 - 8 * i));
  out[31] = salt;
  return out;
}

/// An unsigned event with a chosen id (so ordering ties are controllable); the store does not
/// check signatures. Signed events come from tests/support/nostr_builders.hpp.
inline nostr::EventPtr unsigned_event(std::uint64_t id, std::uint64_t author,
                                      std::int64_t created_at, std::uint32_t kind,
                                      nostr::Tags tags = {}, std::string content = "") {
  auto ev = std::make_shared<nostr::Event>();
  ev->id = bytes_of(id, 0xee);
  ev->pubkey = bytes_of(author, 0xaa);
  ev->created_at = created_at;
  ev->kind = kind;
  ev->tags = std::move(tags);
  ev->content = std::move(content);
  return ev;
}

inline StoreOptions options_for(const TempDir& dir, std::int64_t* now = nullptr) {
  StoreOptions options;
  options.path = dir.path();
  if (now) options.clock = [now] { return *now; };
  return options;
}

}  // namespace graspd::store::test
