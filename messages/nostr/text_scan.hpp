// Eight-bytes-at-a-time tests for the scanners of JSON text (escaping, the nesting pre-scan): most
// of an event is plain ASCII without quotes or escapes, which these skip in one step. Each test is
// exact for the word as a whole (the classic "has a zero byte" and "has a byte less than n" bit
// tricks), which is all the callers ask.
#pragma once

#include <cstdint>
#include <cstring>

namespace graspd::nostr::scan {

inline constexpr std::uint64_t kOnes = 0x0101010101010101ull;
inline constexpr std::uint64_t kHighs = 0x8080808080808080ull;

inline std::uint64_t load_word(const char* p) {
  std::uint64_t w;
  std::memcpy(&w, p, sizeof w);
  return w;
}

inline bool has_zero_byte(std::uint64_t w) {
  return ((w - kOnes) & ~w & kHighs) != 0;
}

inline bool has_byte(std::uint64_t w, unsigned char c) {
  return has_zero_byte(w ^ (kOnes * c));
}

/// None of the eight bytes at `p` is `"` or `\` (string contents the nesting scan may skip).
inline bool no_quote_or_backslash(const char* p) {
  const auto w = load_word(p);
  return !has_byte(w, '"') && !has_byte(w, '\\');
}

/// None of the eight bytes at `p` needs a JSON escape (`"`, `\`, below 0x20).
inline bool none_needs_escape(const char* p) {
  const auto w = load_word(p);
  const bool control = ((w - kOnes * 0x20) & ~w & kHighs) != 0;
  return !control && !has_byte(w, '"') && !has_byte(w, '\\');
}

}  // namespace graspd::nostr::scan
