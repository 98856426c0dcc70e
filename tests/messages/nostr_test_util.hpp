// Helpers shared by the messages/nostr tests.
#pragma once

#include <string>

#include "messages/nostr/event.hpp"
#include "messages/nostr/verify.hpp"
#include "tests/support/nostr_builders.hpp"

namespace graspd::nostr::testing {

/// The messages tests' default key is `secret_key(0x11)`.
inline SecretKey test_secret_key(std::uint8_t fill = 0x11) {
  return test::secret_key(fill);
}

inline Event unsigned_event(std::string content, Tags tags = {}, std::uint32_t kind = 1,
                            std::int64_t created_at = 1700000000) {
  Event ev;
  ev.kind = kind;
  ev.created_at = created_at;
  ev.tags = std::move(tags);
  ev.content = std::move(content);
  return ev;
}

/// A note (content first, kind 1 by default) signed with the default key: test::signed_event in
/// the argument order these tests read best.
inline Event signed_note(std::string content, Tags tags = {}, std::uint32_t kind = 1,
                         std::int64_t created_at = 1700000000) {
  return test::signed_event(kind, std::move(tags), created_at, std::move(content), 0x11);
}

/// Every tricky string the id serialization must get right: each ASCII
/// character alone (all controls, quote, backslash, '/', DEL), all of them
/// together, and non-ASCII text (BMP, astral, U+2028/2029, BOM).
inline std::vector<std::string> tricky_strings() {
  std::vector<std::string> out;
  std::string all;
  for (int c = 0; c < 128; ++c) {
    out.push_back(std::string("a") + static_cast<char>(c) + "b");
    all += static_cast<char>(c);
  }
  out.push_back(all);
  out.push_back(
      "\xc3\xa9\xe4\xb8\xad\xe6\x96\x87\xf0\x9f\x98\x80\xe2\x80\xa8\xe2\x80\xa9"
      "\xef\xbb\xbf\xc2\xa0\xf4\x8f\xbf\xbf/\\\"");
  out.push_back("");
  return out;
}

}  // namespace graspd::nostr::testing
