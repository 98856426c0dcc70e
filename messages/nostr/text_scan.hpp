// Eight-bytes-at-a-time tests for the scanners of JSON text (escaping, the nesting pre-scan,
// UTF-8): most of an event is plain ASCII without quotes or escapes, which these skip in one step.
// Each test is exact for the word as a whole (the classic "has a zero byte" and "has a byte less
// than n" bit tricks), which is all the callers ask.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

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

/// Whether `text` is well-formed UTF-8 (RFC 3629: no overlong forms, no encoded surrogates,
/// nothing above U+10FFFF), exactly what RapidJSON's validator accepts; ASCII eight bytes at a
/// time.
inline bool valid_utf8(std::string_view text) {
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  const auto* const end = p + text.size();
  while (p < end) {
    if (end - p >= 8 && (load_word(reinterpret_cast<const char*>(p)) & kHighs) == 0) {
      p += 8;
      continue;
    }
    const unsigned lead = *p;
    if (lead < 0x80) {
      ++p;
      continue;
    }
    std::size_t tail = 0;  // continuation bytes; the first one is bounded by [low, high]
    unsigned low = 0x80;
    unsigned high = 0xbf;
    if (lead >= 0xc2 && lead <= 0xdf) {
      tail = 1;
    } else if (lead >= 0xe0 && lead <= 0xef) {
      tail = 2;
      if (lead == 0xe0) low = 0xa0;   // overlong below U+0800
      if (lead == 0xed) high = 0x9f;  // U+D800..U+DFFF
    } else if (lead >= 0xf0 && lead <= 0xf4) {
      tail = 3;
      if (lead == 0xf0) low = 0x90;   // overlong below U+10000
      if (lead == 0xf4) high = 0x8f;  // above U+10FFFF
    } else {
      return false;  // a continuation byte, C0/C1 or F5..FF
    }
    if (static_cast<std::size_t>(end - p) <= tail || p[1] < low || p[1] > high) return false;
    for (std::size_t i = 2; i <= tail; ++i) {
      if ((p[i] & 0xc0) != 0x80) return false;
    }
    p += tail + 1;
  }
  return true;
}

}  // namespace graspd::nostr::scan
