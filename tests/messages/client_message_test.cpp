#include <gtest/gtest.h>

#include "messages/nostr/client_message.hpp"
#include "messages/nostr/json.hpp"
#include "nostr_test_util.hpp"

namespace graspd::nostr {
namespace {

using Kind = ClientMessageError::Kind;

ParsedClientMessage parse(std::string_view frame, const ParseLimits& limits = {}) {
  return parse_client_message(frame, limits);
}

void expect_error(std::string_view frame, Kind kind, std::string_view message,
                  const ParseLimits& limits = {}) {
  auto m = parse(frame, limits);
  ASSERT_FALSE(m.ok()) << frame;
  EXPECT_EQ(m.error().kind, kind) << frame;
  EXPECT_EQ(m.error().message, message) << frame;
}

TEST(ClientMessage, Event) {
  const Event ev = testing::signed_note("hello", {{"t", "x"}});
  auto m = parse("[\"EVENT\"," + serialize_event(ev) + "]");
  ASSERT_TRUE(m.ok()) << m.error().message;
  ASSERT_TRUE(std::holds_alternative<ClientEvent>(*m));
  EXPECT_EQ(std::get<ClientEvent>(*m).event, ev);
}

TEST(ClientMessage, AuthCarriesItsEvent) {
  const Event ev = testing::signed_note("", {{"relay", "ws://x.com"}, {"challenge", "c"}}, 22242);
  auto m = parse("[\"AUTH\"," + serialize_event(ev) + "]");
  ASSERT_TRUE(m.ok()) << m.error().message;
  ASSERT_TRUE(std::holds_alternative<ClientAuth>(*m));
  EXPECT_EQ(std::get<ClientAuth>(*m).event, ev);
}

TEST(ClientMessage, MalformedAuthIsAnsweredLikeAnEvent) {
  expect_error("[\"AUTH\"]", Kind::malformed, "invalid: AUTH must be [\"AUTH\", <event>]");
  // A relay's challenge frame sent back is not an AUTH event.
  expect_error("[\"AUTH\",\"challenge\"]", Kind::invalid_event,
               "invalid: event must be a JSON object");
  Event ev = testing::signed_note("", {}, 22242);
  std::string json = serialize_event(ev);
  json.replace(json.find("\"kind\""), 6, "\"kinx\"");
  auto m = parse("[\"AUTH\"," + json + "]");
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.error().kind, Kind::invalid_event);
  EXPECT_EQ(m.error().verb, "AUTH");
  EXPECT_EQ(m.error().event_id, ev.id) << "answered with OK for the readable id";
}

TEST(ClientMessage, ReqWithSeveralFilters) {
  auto m = parse(" [\"REQ\", \"sub 1\", {\"kinds\":[1]}, {\"#d\":[\"x\"],\"limit\":0}] ");
  ASSERT_TRUE(m.ok()) << m.error().message;
  const auto& req = std::get<ClientReq>(*m);
  EXPECT_EQ(req.subscription_id, "sub 1");
  ASSERT_EQ(req.filters.size(), 2u);
  EXPECT_EQ(req.filters[0].kinds, (std::vector<std::uint32_t>{1}));
  EXPECT_EQ(req.filters[1].limit, 0u);
}

TEST(ClientMessage, CountAndClose) {
  auto count = parse("[\"COUNT\",\"c\",{}]");
  ASSERT_TRUE(count.ok());
  EXPECT_EQ(std::get<ClientCount>(*count).subscription_id, "c");
  EXPECT_EQ(std::get<ClientCount>(*count).filters.size(), 1u);
  auto close = parse("[\"CLOSE\",\"c\"]");
  ASSERT_TRUE(close.ok());
  EXPECT_EQ(std::get<ClientClose>(*close).subscription_id, "c");
}

TEST(ClientMessage, MalformedFramesAnswerNotice) {
  expect_error("", Kind::malformed, "invalid: malformed JSON: The document is empty.");
  expect_error("[\"REQ\"", Kind::malformed,
               "invalid: malformed JSON: Missing a comma or ']' after an array element.");
  expect_error("{}", Kind::malformed, "invalid: message must be a JSON array starting with a verb");
  expect_error("[]", Kind::malformed, "invalid: message must be a JSON array starting with a verb");
  expect_error("[1]", Kind::malformed,
               "invalid: message must be a JSON array starting with a verb");
  expect_error("[\"EVENT\"]", Kind::malformed, "invalid: EVENT must be [\"EVENT\", <event>]");
  expect_error("[\"EVENT\",{},{}]", Kind::malformed, "invalid: EVENT must be [\"EVENT\", <event>]");
  expect_error("[\"REQ\"]", Kind::malformed, "invalid: REQ needs a subscription id");
  expect_error("[\"REQ\",\"\",{}]", Kind::malformed,
               "invalid: subscription id must be a string of 1..64 bytes");
  expect_error("[\"REQ\"," + std::string("\"") + std::string(65, 's') + "\",{}]", Kind::malformed,
               "invalid: subscription id must be a string of 1..64 bytes");
  expect_error("[\"COUNT\",7,{}]", Kind::malformed,
               "invalid: subscription id must be a string of 1..64 bytes");
  expect_error("[\"CLOSE\"]", Kind::malformed,
               "invalid: CLOSE must be [\"CLOSE\", <subscription id>]");
  expect_error("[\"CLOSE\",\"\\udc00\"]", Kind::malformed, "invalid: bad subscription id");
  expect_error("[\"EVENT\",\"\xff\"]", Kind::malformed,
               "invalid: malformed JSON: Invalid encoding in string.");
  expect_error(std::string(20, '[') + std::string(20, ']'), Kind::malformed,
               "invalid: JSON nested too deeply");
}

TEST(ClientMessage, UnknownVerbsAreReportedWithTheVerb) {
  for (const char* verb : {"AUTHX", "NEG-FOO", "event"}) {
    auto m = parse(std::string("[\"") + verb + "\",\"x\"]");
    ASSERT_FALSE(m.ok());
    EXPECT_EQ(m.error().kind, Kind::unknown_verb);
    EXPECT_EQ(m.error().verb, verb);
    EXPECT_EQ(m.error().message, "error: unsupported message type");
  }
  auto long_verb = parse("[\"" + std::string(1000, 'V') + "\"]");
  EXPECT_EQ(long_verb.error().verb, std::string(16, 'V')) << "echoed verbs are bounded";
}

TEST(ClientMessage, NegentropyMessagesParseAndDecodeTheirHex) {
  auto open = parse(R"(["NEG-OPEN","n",{"kinds":[1]},"6100000200"])");
  ASSERT_TRUE(open.ok()) << open.error().message;
  const auto& o = std::get<ClientNegOpen>(*open);
  EXPECT_EQ(o.subscription_id, "n");
  ASSERT_TRUE(o.filter.kinds);
  EXPECT_EQ(o.message, std::string("\x61\x00\x00\x02\x00", 5));
  auto msg = parse(R"(["NEG-MSG","n","61AB"])");
  ASSERT_TRUE(msg.ok());
  EXPECT_EQ(std::get<ClientNegMsg>(*msg).message, std::string("\x61\xab", 2));
  auto close = parse(R"(["NEG-CLOSE","n"])");
  ASSERT_TRUE(close.ok());
  EXPECT_EQ(std::get<ClientNegClose>(*close).subscription_id, "n");
}

TEST(ClientMessage, BadNegentropyPayloadsAnswerWithTheSubscriptionId) {
  for (const char* frame : {R"(["NEG-OPEN","n",[{}],"61"])", R"(["NEG-OPEN","n",{},"6"])",
                            R"(["NEG-OPEN","n",{"kinds":"x"},"61"])", R"(["NEG-MSG","n","zz"])"}) {
    auto m = parse(frame);
    ASSERT_FALSE(m.ok()) << frame;
    EXPECT_EQ(m.error().kind, Kind::invalid_negentropy) << frame;
    EXPECT_EQ(m.error().subscription_id, "n") << frame;
    EXPECT_EQ(m.error().message.rfind("invalid:", 0), 0u) << m.error().message;
  }
  for (const char* frame :
       {R"(["NEG-OPEN","n",{}])", R"(["NEG-MSG",1,"61"])", R"(["NEG-CLOSE"])"}) {
    auto m = parse(frame);
    ASSERT_FALSE(m.ok()) << frame;
    EXPECT_EQ(m.error().kind, Kind::malformed) << frame;
  }
}

TEST(ClientMessage, InvalidEventExposesItsIdWhenReadable) {
  const Event ev = testing::signed_note("hello");
  std::string json = serialize_event(ev);
  json.replace(json.find("\"kind\":1"), 8, "\"kind\":-1");
  auto m = parse("[\"EVENT\"," + json + "]");
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.error().kind, Kind::invalid_event);
  EXPECT_EQ(m.error().message, "invalid: bad kind");
  EXPECT_EQ(m.error().verb, "EVENT");
  EXPECT_EQ(m.error().event_id, ev.id);

  auto no_id = parse("[\"EVENT\",{\"id\":\"nope\"}]");
  ASSERT_FALSE(no_id.ok());
  EXPECT_EQ(no_id.error().kind, Kind::invalid_event);
  EXPECT_EQ(no_id.error().message, "invalid: bad id");
  EXPECT_FALSE(no_id.error().event_id.has_value());

  auto not_object = parse("[\"EVENT\",[]]");
  EXPECT_EQ(not_object.error().kind, Kind::invalid_event);
  EXPECT_EQ(not_object.error().message, "invalid: event must be a JSON object");
}

TEST(ClientMessage, EventSizeLimitKeepsTheId) {
  const Event ev = testing::signed_note(std::string(2000, 'x'));
  ParseLimits limits;
  limits.max_event_bytes = 1000;
  auto m = parse("[\"EVENT\"," + serialize_event(ev) + "]", limits);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.error().kind, Kind::invalid_event);
  EXPECT_EQ(m.error().message, "invalid: event too large");
  EXPECT_EQ(m.error().event_id, ev.id);
}

TEST(ClientMessage, MessageSizeLimit) {
  ParseLimits limits;
  limits.max_message_bytes = 10;
  expect_error("[\"REQ\",\"s\",{}]", Kind::malformed, "invalid: message too large", limits);
}

TEST(ClientMessage, BadFiltersAnswerClosedWithTheSubscription) {
  auto m = parse("[\"REQ\",\"sub\",{},{\"kinds\":[\"x\"]}]");
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.error().kind, Kind::invalid_filter);
  EXPECT_EQ(m.error().subscription_id, "sub");
  EXPECT_EQ(m.error().message, "invalid: kinds must be an array of integers 0..65535");

  auto none = parse("[\"COUNT\",\"c\"]");
  EXPECT_EQ(none.error().kind, Kind::invalid_filter);
  EXPECT_EQ(none.error().subscription_id, "c");
  EXPECT_EQ(none.error().message, "invalid: COUNT needs at least one filter");

  ParseLimits limits;
  limits.max_filters = 2;
  auto many = parse("[\"REQ\",\"s\",{},{},{}]", limits);
  EXPECT_EQ(many.error().kind, Kind::invalid_filter);
  EXPECT_EQ(many.error().message, "invalid: too many filters");

  auto not_object = parse("[\"REQ\",\"s\",[]]");
  EXPECT_EQ(not_object.error().kind, Kind::invalid_filter);
  EXPECT_EQ(not_object.error().message, "invalid: filter must be a JSON object");
}

}  // namespace
}  // namespace graspd::nostr
