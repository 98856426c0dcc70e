// The string escaper and the nesting pre-scan skip eight bytes at a time; these tests compare
// them, on random inputs with the special bytes at random offsets, with byte-at-a-time references.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>

#include "messages/nostr/canonical.hpp"
#include "messages/nostr/json.hpp"

namespace graspd::nostr {
namespace {

std::string escaped_byte_at_a_time(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"')
      out += "\\\"";
    else if (c == '\\')
      out += "\\\\";
    else if (c == '\n')
      out += "\\n";
    else if (c == '\r')
      out += "\\r";
    else if (c == '\t')
      out += "\\t";
    else if (c == '\b')
      out += "\\b";
    else if (c == '\f')
      out += "\\f";
    else if (c < 0x20) {
      static constexpr char hex[] = "0123456789abcdef";
      out += "\\u00";
      out += hex[c >> 4];
      out += hex[c & 15];
    } else
      out += static_cast<char>(c);
  }
  return out + "\"";
}

// Mostly ASCII text (long clean runs) with a rare byte from `specials` at a random offset.
std::string random_text(std::mt19937& rng, const std::string& specials) {
  std::string s(rng() % 40, 'a');
  for (auto& c : s) c = static_cast<char>(' ' + 1 + rng() % 90);
  for (unsigned n = rng() % 3; n > 0 && !s.empty(); --n)
    s[rng() % s.size()] = specials[rng() % specials.size()];
  return s;
}

TEST(TextScan, EscapingSkipsCleanRunsButEscapesEveryByteThatNeedsIt) {
  std::mt19937 rng(11);
  const std::string specials = std::string("\"\\\n\r\t\b\f\x01\x1f\x7f\x20", 11) + '\0';
  for (int n = 0; n < 100000; ++n) {
    std::string s = random_text(rng, specials);
    std::string out;
    append_json_string(out, s);
    ASSERT_EQ(out, escaped_byte_at_a_time(s)) << testing::PrintToString(s);
  }
}

std::size_t nesting_byte_at_a_time(const std::string& json) {
  std::size_t depth = 0, max_depth = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < json.size(); ++i) {
    const char c = json[i];
    if (in_string) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      max_depth = std::max(max_depth, ++depth);
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return max_depth;
}

TEST(TextScan, NestingScanSkipsStringContentsButNotTheirEnds) {
  std::mt19937 rng(13);
  const std::string specials = "\"\\[]{}";
  for (int n = 0; n < 100000; ++n) {
    std::string s;
    for (int piece = 0; piece < 4; ++piece) s += random_text(rng, specials);
    ASSERT_EQ(detail::nesting_depth(s, 1000), nesting_byte_at_a_time(s))
        << testing::PrintToString(s);
  }
}

}  // namespace
}  // namespace graspd::nostr
