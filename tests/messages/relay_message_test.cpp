#include <gtest/gtest.h>

#include "messages/nostr/json.hpp"
#include "messages/nostr/relay_message.hpp"
#include "nostr_test_util.hpp"

namespace graspd::nostr {
namespace {

TEST(RelayMessage, Builders) {
  EventId id{};
  id.fill(0x0f);
  const std::string hex = to_hex(id);
  EXPECT_EQ(relay_event("s", "{}"), "[\"EVENT\",\"s\",{}]");
  EXPECT_EQ(relay_ok(id, true, ""), "[\"OK\",\"" + hex + "\",true,\"\"]");
  EXPECT_EQ(relay_ok(id, false, "invalid: bad \"sig\""),
            "[\"OK\",\"" + hex + "\",false,\"invalid: bad \\\"sig\\\"\"]");
  EXPECT_EQ(relay_eose("s"), "[\"EOSE\",\"s\"]");
  EXPECT_EQ(relay_closed("s", "error: x"), "[\"CLOSED\",\"s\",\"error: x\"]");
  EXPECT_EQ(relay_notice("n"), "[\"NOTICE\",\"n\"]");
  EXPECT_EQ(relay_auth("00ff"), "[\"AUTH\",\"00ff\"]");
  EXPECT_EQ(relay_count("s", 42), "[\"COUNT\",\"s\",{\"count\":42}]");
  EXPECT_EQ(relay_count("s", 42, true), "[\"COUNT\",\"s\",{\"count\":42,\"approximate\":true}]");
}

TEST(RelayMessage, UntrustedTextIsEscapedIntoValidJson) {
  const std::string hostile = std::string("\"]\n\\\x01\xff", 6);
  const std::string frame = relay_closed(hostile, hostile);
  EXPECT_EQ(frame,
            "[\"CLOSED\",\"\\\"]\\n\\\\\\u0001\xef\xbf\xbd\",\"\\\"]\\n\\\\\\u0001\xef\xbf\xbd\"]");
  auto parsed = parse_relay_message(frame, ParseLimits{});
  ASSERT_TRUE(parsed.ok()) << parsed.error();
  EXPECT_EQ(std::get<RelayClosed>(*parsed).message, "\"]\n\\\x01\xef\xbf\xbd");
}

TEST(RelayMessage, ParsesEveryVerb) {
  const Event ev = testing::signed_note("x");
  const ParseLimits limits;
  auto event = parse_relay_message(relay_event("s", serialize_event(ev)), limits);
  ASSERT_TRUE(event.ok()) << event.error();
  EXPECT_EQ(std::get<RelayEvent>(*event).subscription_id, "s");
  EXPECT_EQ(std::get<RelayEvent>(*event).event, ev);

  auto ok = parse_relay_message(relay_ok(ev.id, false, "rate-limited: slow"), limits);
  ASSERT_TRUE(ok.ok()) << ok.error();
  EXPECT_EQ(std::get<RelayOk>(*ok).event_id, ev.id);
  EXPECT_FALSE(std::get<RelayOk>(*ok).accepted);
  EXPECT_EQ(std::get<RelayOk>(*ok).message, "rate-limited: slow");

  EXPECT_EQ(std::get<RelayEose>(*parse_relay_message(relay_eose("e"), limits)).subscription_id,
            "e");
  EXPECT_EQ(std::get<RelayNotice>(*parse_relay_message(relay_notice("hi"), limits)).message, "hi");
  auto closed = parse_relay_message(relay_closed("c", "blocked: no"), limits);
  EXPECT_EQ(std::get<RelayClosed>(*closed).subscription_id, "c");
  EXPECT_EQ(std::get<RelayClosed>(*closed).message, "blocked: no");
  auto count = parse_relay_message(relay_count("c", 7, true), limits);
  EXPECT_EQ(std::get<RelayCount>(*count).count, 7u);
  EXPECT_TRUE(std::get<RelayCount>(*count).approximate);
}

TEST(RelayMessage, ParsesNegentropyAnswers) {
  const ParseLimits limits;
  auto msg = parse_relay_message(relay_neg_msg("n", "6100"), limits);
  ASSERT_TRUE(msg.ok());
  EXPECT_EQ(std::get<RelayNegMsg>(*msg).subscription_id, "n");
  EXPECT_EQ(std::get<RelayNegMsg>(*msg).hex, "6100");

  auto blocked =
      parse_relay_message(relay_neg_err("n", "blocked: too many query results", 1000), limits);
  ASSERT_TRUE(blocked.ok());
  const auto& err = std::get<RelayNegErr>(*blocked);
  EXPECT_EQ(err.reason, "blocked: too many query results");
  EXPECT_EQ(err.limit, 1000u);

  auto closed =
      parse_relay_message(relay_neg_err("n", "closed: unknown subscription handle"), limits);
  ASSERT_TRUE(closed.ok());
  EXPECT_FALSE(std::get<RelayNegErr>(*closed).limit.has_value());
}

TEST(RelayMessage, RejectsMalformedFrames) {
  const ParseLimits limits;
  for (const char* frame :
       {"", "{}", "[]", "[\"EVENT\",\"s\"]", "[\"EVENT\",\"s\",{}]", "[\"OK\",\"x\",true,\"\"]",
        "[\"OK\",\"0000000000000000000000000000000000000000000000000000000000000000\",1,\"\"]",
        "[\"EOSE\"]", "[\"EOSE\",1]", "[\"CLOSED\",\"s\"]", "[\"NOTICE\",1]",
        "[\"COUNT\",\"s\",{\"count\":-1}]", "[\"COUNT\",\"s\",5]", "[\"AUTH\",\"challenge\"]",
        "[\"NEG-MSG\",\"s\"]", "[\"NEG-MSG\",\"s\",\"61zz\"]", "[\"NEG-MSG\",\"s\",61]",
        "[\"NEG-ERR\",\"s\"]", "[\"NEG-ERR\",\"s\",1]"}) {
    auto m = parse_relay_message(frame, limits);
    EXPECT_FALSE(m.ok()) << frame;
  }
  EXPECT_EQ(parse_relay_message("[\"AUTH\",\"x\"]", limits).error(),
            "error: unsupported message type");
}

}  // namespace
}  // namespace graspd::nostr
