#include <gtest/gtest.h>

#include "messages/nostr/canonical.hpp"
#include "messages/nostr/json.hpp"
#include "nostr_test_util.hpp"

namespace graspd::nostr {
namespace {

std::string escaped(std::string_view text) {
  std::string out;
  append_json_string(out, text);
  return out;
}

std::string sanitized(std::string_view text) {
  std::string out;
  append_json_string_sanitized(out, text);
  return out;
}

// What JSON.stringify produces for one ASCII character (ECMA-262
// QuoteJSONString), written out independently of the implementation.
std::string json_stringify_char(int c) {
  switch (c) {
    case 0x08:
      return "\"\\b\"";
    case 0x09:
      return "\"\\t\"";
    case 0x0a:
      return "\"\\n\"";
    case 0x0c:
      return "\"\\f\"";
    case 0x0d:
      return "\"\\r\"";
    case '"':
      return "\"\\\"\"";
    case '\\':
      return "\"\\\\\"";
    default:
      break;
  }
  if (c < 0x20) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "\"\\u%04x\"", c);
    return buf;
  }
  return std::string("\"") + static_cast<char>(c) + "\"";
}

TEST(Canonical, EveryAsciiCharacterEscapesLikeJsonStringify) {
  for (int c = 0; c < 128; ++c)
    EXPECT_EQ(escaped(std::string(1, static_cast<char>(c))), json_stringify_char(c))
        << "character " << c;
}

TEST(Canonical, ControlCharactersWithHexLettersUseLowercase) {
  // The characters RapidJSON's Writer gets wrong (uppercase hex).
  EXPECT_EQ(escaped("\x0b"), "\"\\u000b\"");
  EXPECT_EQ(escaped("\x0e\x0f"), "\"\\u000e\\u000f\"");
  EXPECT_EQ(escaped("\x1a\x1b\x1c\x1d\x1e\x1f"), "\"\\u001a\\u001b\\u001c\\u001d\\u001e\\u001f\"");
}

TEST(Canonical, SlashDelAndNonAsciiAreVerbatim) {
  EXPECT_EQ(escaped("/"), "\"/\"");
  EXPECT_EQ(escaped("\x7f"), "\"\x7f\"");
  const std::string text = "\xc3\xa9\xf0\x9f\x98\x80\xe2\x80\xa8\xe2\x80\xa9\xef\xbb\xbf";
  EXPECT_EQ(escaped(text), "\"" + text + "\"");
}

TEST(Canonical, EmbeddedNulIsEscapedNotTruncated) {
  EXPECT_EQ(escaped(std::string("a\0b", 3)), "\"a\\u0000b\"");
}

TEST(Canonical, SanitizedReplacesInvalidUtf8) {
  EXPECT_EQ(sanitized("ok\xff"), "\"ok\xef\xbf\xbd\"");
  EXPECT_EQ(sanitized("\xed\xa0\x80"), "\"\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\"");  // surrogate
  EXPECT_EQ(sanitized("\xc0\xaf"), "\"\xef\xbf\xbd\xef\xbf\xbd\"");                  // overlong
  EXPECT_EQ(sanitized("\xf0\x9f\x98"), "\"\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\"");  // cut
  EXPECT_EQ(sanitized("\xf0\x9f\x98\x80\n"), "\"\xf0\x9f\x98\x80\\n\"");
}

TEST(Canonical, SerializationLayout) {
  Event ev = testing::unsigned_event("hi\n", {{"e", "x"}, {"p"}, {}}, 1, 42);
  ev.pubkey.fill(0xab);
  EXPECT_EQ(canonical_serialization(ev),
            "[0,\"abababababababababababababababababababababababababababababababab\",42,1,"
            "[[\"e\",\"x\"],[\"p\"],[]],\"hi\\n\"]");
}

TEST(Canonical, KnownIdFromNostrTools) {
  // Computed with nostr-tools 2.25.2 getEventHash (also cross-checked live by
  // interop_test): content and tag hold \x0b, which RapidJSON would escape
  // as \u000B.
  Event ev = testing::unsigned_event(std::string("a\x0b"
                                                 "b"),
                                     {{"t",
                                       "a\x0b"
                                       "b"}},
                                     1, 1700000011);
  ASSERT_TRUE(
      from_hex("142715675faf8da1ecc4d51e0b9e539fa0d52fdd96ed60dbe99adb15d6b05ad9", ev.pubkey));
  EXPECT_EQ(to_hex(compute_id(ev)),
            "ed7b695992a5667a0a33851e6864f5feaeed768204034b03263cf166bbe14d84");
}

TEST(Canonical, Sha256OfEmptyInput) {
  EXPECT_EQ(to_hex(sha256("")), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

TEST(Canonical, ParsedEventReserializesToSameId) {
  for (const auto& text : testing::tricky_strings()) {
    const Event ev = testing::signed_note(text, {{"t", text}});
    auto parsed = parse_event(serialize_event(ev), ParseLimits{});
    ASSERT_TRUE(parsed.ok()) << parsed.error();
    EXPECT_EQ(*parsed, ev);
    EXPECT_EQ(compute_id(*parsed), ev.id);
  }
}

}  // namespace
}  // namespace graspd::nostr
