// The string escaper, the nesting pre-scan and the UTF-8 check skip eight bytes at a time; these
// tests compare them, on random inputs with the special bytes at random offsets, with
// byte-at-a-time references (RapidJSON's own validator for UTF-8).
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>

#include <rapidjson/encodings.h>
#include <rapidjson/memorystream.h>
#include <rapidjson/stringbuffer.h>

#include "messages/nostr/canonical.hpp"
#include "messages/nostr/json.hpp"
#include "messages/nostr/text_scan.hpp"

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
    ASSERT_EQ(out, escaped_byte_at_a_time(s)) << ::testing::PrintToString(s);
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
        << ::testing::PrintToString(s);
  }
}

// What RapidJSON's kParseValidateEncodingFlag accepts, one character at a time.
bool rapidjson_accepts_utf8(const std::string& s) {
  rapidjson::MemoryStream in(s.data(), s.size());
  rapidjson::StringBuffer out;
  while (in.Tell() < s.size()) {
    if (!rapidjson::UTF8<>::Validate(in, out)) return false;
  }
  return true;
}

// ASCII runs around sequences built from lead and continuation bytes near every boundary of
// RFC 3629 (overlongs, surrogates, above U+10FFFF, truncated at the end of the text).
std::string random_utf8ish(std::mt19937& rng) {
  static const unsigned char interesting[] = {0x7f, 0x80, 0x8f, 0x90, 0x9f, 0xa0, 0xbf, 0xc0,
                                              0xc1, 0xc2, 0xdf, 0xe0, 0xe1, 0xec, 0xed, 0xee,
                                              0xef, 0xf0, 0xf1, 0xf3, 0xf4, 0xf5, 0xff};
  std::string s;
  for (int piece = rng() % 4; piece >= 0; --piece) {
    s += std::string(rng() % 20, 'x');
    for (unsigned n = rng() % 5; n > 0; --n)
      s += static_cast<char>(rng() % 2 ? interesting[rng() % sizeof interesting]
                                       : 0x80 + rng() % 64);
  }
  return s;
}

TEST(TextScan, Utf8CheckAcceptsExactlyWhatRapidJsonsValidatorAccepts) {
  std::mt19937 rng(17);
  std::size_t accepted = 0;
  for (int n = 0; n < 200000; ++n) {
    const std::string s = random_utf8ish(rng);
    const bool expected = rapidjson_accepts_utf8(s);
    accepted += expected;
    ASSERT_EQ(scan::valid_utf8(s), expected) << ::testing::PrintToString(s);
  }
  EXPECT_GT(accepted, 1000u) << "the inputs must exercise valid text too";
  for (const char* valid : {"", "plain", "\xc2\x80", "\xe0\xa0\x80", "\xed\x9f\xbf",
                            "\xf0\x90\x80\x80", "\xf4\x8f\xbf\xbf"})
    EXPECT_TRUE(scan::valid_utf8(valid)) << valid;
  for (const char* invalid : {"\xc0\xaf", "\xe0\x9f\xbf", "\xed\xa0\x80", "\xf4\x90\x80\x80",
                              "\xf5\x80\x80\x80", "abcdefgh\x80", "\xe2\x82"})
    EXPECT_FALSE(scan::valid_utf8(invalid)) << invalid;
}

}  // namespace
}  // namespace graspd::nostr
