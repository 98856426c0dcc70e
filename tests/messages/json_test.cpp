#include <gtest/gtest.h>

#include <rapidjson/document.h>

#include <map>

#include "messages/nostr/canonical.hpp"
#include "messages/nostr/json.hpp"
#include "nostr_test_util.hpp"

namespace graspd::nostr {
namespace {

const std::string kHex64 = std::string(64, 'a');
const std::string kHex128 = std::string(128, 'b');

// An event object built from raw JSON member texts, in a fixed order, with
// members replaced, removed (empty text) or added.
std::string event_json(std::map<std::string, std::string> changes = {}) {
  std::vector<std::pair<std::string, std::string>> members = {
      {"id", "\"" + kHex64 + "\""},  {"pubkey", "\"" + kHex64 + "\""},
      {"created_at", "1700000000"},  {"kind", "1"},
      {"tags", "[[\"e\",\"x\"]]"},   {"content", "\"hi\""},
      {"sig", "\"" + kHex128 + "\""}};
  for (auto& [key, text] : members)
    if (auto it = changes.find(key); it != changes.end()) {
      text = it->second;
      changes.erase(it);
    }
  for (auto& change : changes) members.push_back(change);
  std::string out = "{";
  for (const auto& [key, text] : members) {
    if (text.empty()) continue;
    if (out.size() > 1) out += ',';
    out += "\"" + key + "\":" + text;
  }
  return out + "}";
}

struct Rejection {
  const char* name;
  std::string json;
  const char* error;  // expected complete error message
};

std::vector<Rejection> event_rejections() {
  return {
      {"not_json", "{", "invalid: malformed JSON: Missing a name for object member."},
      {"not_object", "[]", "invalid: event must be a JSON object"},
      {"trailing_garbage", event_json() + "x",
       "invalid: malformed JSON: The document root must not be followed by other values."},
      {"raw_nul_after_object", event_json() + std::string(1, '\0') + "x",
       "invalid: malformed JSON: raw NUL byte"},
      {"id_missing", event_json({{"id", ""}}), "invalid: missing field id"},
      {"id_short", event_json({{"id", "\"" + std::string(63, 'a') + "\""}}), "invalid: bad id"},
      {"id_long", event_json({{"id", "\"" + std::string(65, 'a') + "\""}}), "invalid: bad id"},
      {"id_uppercase", event_json({{"id", "\"" + std::string(64, 'A') + "\""}}), "invalid: bad id"},
      {"id_non_hex", event_json({{"id", "\"" + std::string(63, 'a') + "g\""}}), "invalid: bad id"},
      {"id_number", event_json({{"id", "1"}}), "invalid: bad id"},
      {"pubkey_missing", event_json({{"pubkey", ""}}), "invalid: missing field pubkey"},
      {"pubkey_short", event_json({{"pubkey", "\"abc\""}}), "invalid: bad pubkey"},
      {"pubkey_npub", event_json({{"pubkey", "\"npub1xyz\""}}), "invalid: bad pubkey"},
      {"sig_missing", event_json({{"sig", ""}}), "invalid: missing field sig"},
      {"sig_64_hex", event_json({{"sig", "\"" + kHex64 + "\""}}), "invalid: bad sig"},
      {"sig_uppercase", event_json({{"sig", "\"" + std::string(128, 'B') + "\""}}),
       "invalid: bad sig"},
      {"created_at_missing", event_json({{"created_at", ""}}), "invalid: missing field created_at"},
      {"created_at_string", event_json({{"created_at", "\"1\""}}), "invalid: bad created_at"},
      {"created_at_float", event_json({{"created_at", "1.0"}}), "invalid: bad created_at"},
      {"created_at_exponent", event_json({{"created_at", "1e9"}}), "invalid: bad created_at"},
      {"created_at_negative", event_json({{"created_at", "-1"}}), "invalid: bad created_at"},
      {"created_at_above_2_53", event_json({{"created_at", "9007199254740992"}}),
       "invalid: bad created_at"},
      {"created_at_above_int64", event_json({{"created_at", "18446744073709551615"}}),
       "invalid: bad created_at"},
      {"created_at_null", event_json({{"created_at", "null"}}), "invalid: bad created_at"},
      {"kind_missing", event_json({{"kind", ""}}), "invalid: missing field kind"},
      {"kind_negative", event_json({{"kind", "-1"}}), "invalid: bad kind"},
      {"kind_65536", event_json({{"kind", "65536"}}), "invalid: bad kind"},
      {"kind_float", event_json({{"kind", "1.5"}}), "invalid: bad kind"},
      {"kind_string", event_json({{"kind", "\"1\""}}), "invalid: bad kind"},
      {"tags_missing", event_json({{"tags", ""}}), "invalid: missing field tags"},
      {"tags_object", event_json({{"tags", "{}"}}), "invalid: tags must be an array"},
      {"tag_not_array", event_json({{"tags", "[\"e\"]"}}),
       "invalid: each tag must be an array of strings"},
      {"tag_number", event_json({{"tags", "[[\"e\",1]]"}}),
       "invalid: each tag must be an array of strings"},
      {"tag_null", event_json({{"tags", "[[\"e\",null]]"}}),
       "invalid: each tag must be an array of strings"},
      {"tag_nested", event_json({{"tags", "[[[\"e\"]]]"}}),
       "invalid: each tag must be an array of strings"},
      {"tag_lone_high_surrogate", event_json({{"tags", "[[\"e\",\"\\ud800\"]]"}}),
       "invalid: malformed JSON: The surrogate pair in string is invalid."},
      {"tag_lone_low_surrogate", event_json({{"tags", "[[\"e\",\"\\udc00\"]]"}}),
       "invalid: unpaired UTF-16 surrogate in tag"},
      {"content_missing", event_json({{"content", ""}}), "invalid: missing field content"},
      {"content_number", event_json({{"content", "1"}}), "invalid: content must be a string"},
      {"content_lone_low_surrogate", event_json({{"content", "\"a\\udfffb\""}}),
       "invalid: unpaired UTF-16 surrogate in content"},
      {"content_lone_high_surrogate", event_json({{"content", "\"\\ud83d x\""}}),
       "invalid: malformed JSON: The surrogate pair in string is invalid."},
      {"content_invalid_utf8", event_json({{"content", "\"\xff\""}}),
       "invalid: malformed JSON: Invalid encoding in string."},
      {"content_raw_surrogate_utf8", event_json({{"content", "\"\xed\xa0\x80\""}}),
       "invalid: malformed JSON: Invalid encoding in string."},
      {"content_overlong_utf8", event_json({{"content", "\"\xc0\xaf\""}}),
       "invalid: malformed JSON: Invalid encoding in string."},
      {"content_raw_control", event_json({{"content", "\"a\nb\""}}),
       "invalid: malformed JSON: Invalid escape character in string."},
      {"content_raw_nul", event_json({{"content", std::string("\"a\0b\"", 5)}}),
       "invalid: malformed JSON: raw NUL byte"},
      // RapidJSON keeps repeated keys; graspd refuses a repeated known field.
      {"duplicate_id", "{\"id\":\"" + kHex64 + "\"," + event_json().substr(1),
       "invalid: duplicate field id"},
      {"duplicate_kind", "{\"kind\":1," + event_json().substr(1), "invalid: duplicate field kind"},
  };
}

TEST(ParseEvent, AcceptsTheTemplate) {
  auto ev = parse_event(event_json(), ParseLimits{});
  ASSERT_TRUE(ev.ok()) << ev.error();
  EXPECT_EQ(ev->kind, 1u);
  EXPECT_EQ(ev->created_at, 1700000000);
  EXPECT_EQ(ev->content, "hi");
  EXPECT_EQ(ev->tags, (Tags{{"e", "x"}}));
  EXPECT_EQ(to_hex(ev->id), kHex64);
  EXPECT_EQ(to_hex(ev->sig), kHex128);
}

TEST(ParseEvent, RejectsEveryMalformation) {
  for (const auto& r : event_rejections()) {
    auto ev = parse_event(r.json, ParseLimits{});
    EXPECT_FALSE(ev.ok()) << r.name;
    if (!ev.ok()) {
      EXPECT_EQ(ev.error(), r.error) << r.name;
    }
  }
}

TEST(ParseEvent, BoundaryValuesAreAccepted) {
  for (const auto& [key, text] :
       std::vector<std::pair<std::string, std::string>>{{"created_at", "0"},
                                                        {"created_at", "9007199254740991"},
                                                        {"kind", "0"},
                                                        {"kind", "65535"},
                                                        {"tags", "[]"},
                                                        {"tags", "[[]]"},
                                                        {"content", "\"\""},
                                                        {"content", "\"\\ud83d\\ude00\""},
                                                        {"content", "\"\\u0000\""}}) {
    auto ev = parse_event(event_json({{key, text}}), ParseLimits{});
    EXPECT_TRUE(ev.ok()) << key << "=" << text << ": " << (ev.ok() ? "" : ev.error());
  }
}

TEST(ParseEvent, UnknownFieldsAreIgnored) {
  auto ev =
      parse_event(event_json({{"extra", "{\"nested\":[1,2]}"}, {"seenOn", "[]"}}), ParseLimits{});
  EXPECT_TRUE(ev.ok());
}

TEST(ParseEvent, EmbeddedNulAndSurrogatePairsDecodeByLength) {
  auto ev = parse_event(event_json({{"content", "\"a\\u0000b\\ud83d\\ude00\""}}), ParseLimits{});
  ASSERT_TRUE(ev.ok()) << ev.error();
  EXPECT_EQ(ev->content, std::string("a\0b\xf0\x9f\x98\x80", 7));
}

TEST(ParseEvent, LimitsAreEnforced) {
  ParseLimits limits;
  limits.max_event_tags = 2;
  limits.max_tag_elements = 2;
  limits.max_content_length = 3;
  EXPECT_EQ(parse_event(event_json({{"tags", "[[],[],[]]"}}), limits).error(),
            "invalid: too many tags");
  EXPECT_EQ(parse_event(event_json({{"tags", "[[\"a\",\"b\",\"c\"]]"}}), limits).error(),
            "invalid: tag has too many elements");
  EXPECT_EQ(parse_event(event_json({{"content", "\"abcd\""}}), limits).error(),
            "invalid: content too large");
  EXPECT_TRUE(parse_event(event_json({{"content", "\"abc\""}}), limits).ok());
  limits.max_event_bytes = event_json().size() - 1;
  EXPECT_EQ(parse_event(event_json(), limits).error(), "invalid: event too large");
}

TEST(ParseEvent, DeepNestingIsRefusedBeforeParsing) {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  EXPECT_EQ(parse_event(deep, ParseLimits{}).error(), "invalid: JSON nested too deeply");
  // Brackets inside strings do not count.
  EXPECT_TRUE(
      parse_event(event_json({{"content", "\"" + std::string(50, '[') + "\""}}), ParseLimits{})
          .ok());
}

TEST(ParseEvent, NestingDepthScanner) {
  EXPECT_EQ(detail::nesting_depth("[]", 10), 1u);
  EXPECT_EQ(detail::nesting_depth("[{\"a\":[[]]}]", 10), 4u);
  EXPECT_EQ(detail::nesting_depth("[\"[[[\\\"[[\"]", 10), 1u);
  EXPECT_EQ(detail::nesting_depth("[[[[[", 2), 3u) << "stops early past the limit";
}

TEST(SerializeEvent, KeyOrderAndEscaping) {
  Event ev = testing::signed_note("a\x1f\"/\\", {{"t", "\x0b"}});
  const std::string json = serialize_event(ev);
  EXPECT_EQ(json, "{\"id\":\"" + to_hex(ev.id) + "\",\"pubkey\":\"" + to_hex(ev.pubkey) +
                      "\",\"created_at\":1700000000,\"kind\":1,\"tags\":[[\"t\",\"\\u000b\"]],"
                      "\"content\":\"a\\u001f\\\"/\\\\\",\"sig\":\"" +
                      to_hex(ev.sig) + "\"}");
  auto back = parse_event(json, ParseLimits{});
  ASSERT_TRUE(back.ok()) << back.error();
  EXPECT_EQ(*back, ev);
}

// --- filters ----------------------------------------------------------------

TEST(ParseFilter, AcceptsEveryField) {
  auto f = parse_filter("{\"ids\":[\"" + std::string(64, 'B') + "\",\"" + kHex64 +
                            "\"],\"authors\":[\"" + kHex64 +
                            "\"],\"kinds\":[30617,1,1],\"#d\":[\"x\",\"a\"],\"#E\":[],"
                            "\"since\":0,\"until\":10,\"limit\":500}",
                        ParseLimits{});
  ASSERT_TRUE(f.ok()) << f.error();
  ASSERT_TRUE(f->ids && f->authors && f->kinds);
  EXPECT_EQ(f->ids->size(), 2u);
  EXPECT_EQ(*f->kinds, (std::vector<std::uint32_t>{1, 30617})) << "normalized";
  EXPECT_EQ(f->tags.at('d'), (std::vector<std::string>{"a", "x"}));
  EXPECT_TRUE(f->tags.at('E').empty());
  EXPECT_EQ(f->since, 0);
  EXPECT_EQ(f->until, 10);
  EXPECT_EQ(f->limit, 500u);
  EXPECT_TRUE(parse_filter("{}", ParseLimits{}).ok());
}

TEST(ParseFilter, RejectsEveryMalformation) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"[]", "invalid: filter must be a JSON object"},
      {"{\"ids\":\"x\"}", "invalid: ids must be an array of 64-hex strings"},
      {"{\"ids\":[\"abc\"]}", "invalid: ids must be an array of 64-hex strings"},
      {"{\"ids\":[1]}", "invalid: ids must be an array of 64-hex strings"},
      {"{\"authors\":[\"" + std::string(63, 'a') + "\"]}",
       "invalid: authors must be an array of 64-hex strings"},
      {"{\"kinds\":[-1]}", "invalid: kinds must be an array of integers 0..65535"},
      {"{\"kinds\":[65536]}", "invalid: kinds must be an array of integers 0..65535"},
      {"{\"kinds\":[\"1\"]}", "invalid: kinds must be an array of integers 0..65535"},
      {"{\"kinds\":1}", "invalid: kinds must be an array of integers 0..65535"},
      {"{\"#e\":\"x\"}", "invalid: #e must be an array of strings"},
      {"{\"#e\":[1]}", "invalid: #e must be an array of strings"},
      {"{\"#e\":[\"\\udc00\"]}", "invalid: #e must be an array of strings"},
      {"{\"#ee\":[]}", "invalid: unsupported filter field \"#ee\""},
      {"{\"#1\":[]}", "invalid: unsupported filter field \"#1\""},
      {"{\"search\":\"x\"}", "invalid: unsupported filter field \"search\""},
      {"{\"since\":-1}", "invalid: since must be a non-negative integer"},
      {"{\"until\":1.5}", "invalid: until must be a non-negative integer"},
      {"{\"limit\":\"5\"}", "invalid: limit must be a non-negative integer"},
      {"{\"limit\":1,\"limit\":2}", "invalid: duplicate limit"},
      {"{\"#e\":[],\"#e\":[]}", "invalid: duplicate #e"},
      {"{\"kinds\":[],\"kinds\":[]}", "invalid: duplicate kinds"},
      {"{\"" + std::string(100, 'k') + "\":1}",
       "invalid: unsupported filter field \"" + std::string(32, 'k') + "...\""},
  };
  for (const auto& [json, error] : cases) {
    auto f = parse_filter(json, ParseLimits{});
    EXPECT_FALSE(f.ok()) << json;
    if (!f.ok()) {
      EXPECT_EQ(f.error(), error) << json;
    }
  }
}

TEST(ParseFilter, ValueCountIsLimited) {
  ParseLimits limits;
  limits.max_values_per_filter = 2;
  EXPECT_EQ(parse_filter("{\"kinds\":[1,2,3]}", limits).error(), "invalid: too many kinds");
  EXPECT_EQ(parse_filter("{\"#t\":[\"a\",\"b\",\"c\"]}", limits).error(),
            "invalid: too many #t values");
  EXPECT_TRUE(parse_filter("{\"kinds\":[1,2]}", limits).ok());
}

TEST(SerializeFilter, RoundTrips) {
  const std::string json = "{\"ids\":[\"" + kHex64 + "\"],\"authors\":[\"" + kHex64 +
                           "\"],\"kinds\":[1,7],\"#A\":[\"q\"],\"#e\":[\"x\\u000b\"],"
                           "\"since\":1,\"until\":2,\"limit\":3}";
  auto f = parse_filter(json, ParseLimits{});
  ASSERT_TRUE(f.ok()) << f.error();
  EXPECT_EQ(serialize_filter(*f), json);
  EXPECT_EQ(serialize_filter(Filter{}), "{}");
}

}  // namespace
}  // namespace graspd::nostr

namespace graspd::nostr {
namespace {

TEST(ParseValue, EventAndFilterFromAnExistingDocument) {
  const Event ev = testing::signed_note("from a DOM", {{"d", "x"}});
  const std::string json = "[" + serialize_event(ev) + ",{\"#d\":[\"x\"],\"kinds\":[1]}]";
  rapidjson::Document doc;
  doc.Parse(json.data(), json.size());
  ASSERT_FALSE(doc.HasParseError());
  auto parsed_event = parse_event(doc[0], ParseLimits{});
  ASSERT_TRUE(parsed_event.ok()) << parsed_event.error();
  EXPECT_EQ(*parsed_event, ev);
  auto parsed_filter = parse_filter(doc[1], ParseLimits{});
  ASSERT_TRUE(parsed_filter.ok()) << parsed_filter.error();
  EXPECT_TRUE(parsed_filter->matches(*parsed_event));
  EXPECT_FALSE(parse_filter(doc[0], ParseLimits{}).ok()) << "an event is not a filter";
}

}  // namespace
}  // namespace graspd::nostr
