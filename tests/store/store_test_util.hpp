// Helpers for store tests: a temporary directory and unsigned event builders
// (the store trusts its caller to have verified signatures).
#pragma once

#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <random>
#include <string>

#include "messages/nostr/event.hpp"
#include "store/event_store.hpp"

namespace graspd::store::test {

class TempDir {
 public:
  TempDir() {
    static std::atomic<int> counter{0};
    path_ = std::filesystem::temp_directory_path() /
            ("graspd-store-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

inline nostr::Bytes32 bytes_of(std::uint64_t n, std::uint8_t salt = 0) {
  nostr::Bytes32 out{};
  for (int i = 0; i < 8; ++i)
    out[static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(n >> (56 - 8 * i));
  out[31] = salt;
  return out;
}

/// An event with a chosen id (so ordering ties are controllable).
inline nostr::EventPtr make_event(std::uint64_t id, std::uint64_t author, std::int64_t created_at,
                                  std::uint32_t kind, nostr::Tags tags = {},
                                  std::string content = "") {
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
