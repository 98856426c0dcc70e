// End-to-end NIP-01 tests against the real graspd binary with the project's
// own WebSocket client: publish, query, live subscriptions, CLOSE, COUNT,
// ephemeral events, compression, restart durability.
#include <gtest/gtest.h>

#include <set>

#include "relay_test_helpers.hpp"
#include "tests/support/graspd_process.hpp"
#include "tests/support/http_client.hpp"

namespace graspd::test {
namespace {

using namespace std::chrono_literals;

class RelayE2E : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(graspd_.start()) << graspd_.stderr_text(); }
  void TearDown() override {
    if (graspd_.running()) {
      EXPECT_EQ(graspd_.stop(), 0) << graspd_.stderr_text();
    }
  }
  std::unique_ptr<TestClient> client(bool compression = false) {
    return TestClient::connect(graspd_.port(), compression);
  }
  GraspdProcess graspd_{relay_options()};
};

TEST_F(RelayE2E, PublishThenQueryReturnsTheStoredEvent) {
  auto c = client();
  ASSERT_TRUE(c);
  auto ev = make_event(1, "hello graspd", {{"t", "greeting"}});
  auto ok = c->publish(ev);
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->event_id, ev.id);
  EXPECT_TRUE(ok->accepted) << ok->message;

  auto by_author = c->query("a", "{\"authors\":[\"" + nostr::to_hex(ev.pubkey) + "\"]}");
  ASSERT_TRUE(by_author);
  ASSERT_EQ(by_author->size(), 1u);
  EXPECT_EQ((*by_author)[0], ev);

  auto by_tag = c->query("t", "{\"#t\":[\"greeting\"]}");
  ASSERT_TRUE(by_tag);
  EXPECT_EQ(by_tag->size(), 1u);
  auto none = c->query("n", "{\"#t\":[\"other\"]}");
  ASSERT_TRUE(none);
  EXPECT_TRUE(none->empty());
}

TEST_F(RelayE2E, DuplicateIsAcceptedWithDuplicatePrefix) {
  auto c = client();
  ASSERT_TRUE(c);
  auto ev = make_event(1, "twice");
  ASSERT_TRUE(c->publish(ev)->accepted);
  auto again = c->publish(ev);
  ASSERT_TRUE(again);
  EXPECT_TRUE(again->accepted);
  EXPECT_EQ(again->message.rfind("duplicate:", 0), 0u) << again->message;
}

TEST_F(RelayE2E, InvalidSignatureAndIdAreRefusedWithInvalidPrefix) {
  auto c = client();
  ASSERT_TRUE(c);
  auto bad_sig = make_event(1, "tampered");
  bad_sig.sig[10] ^= 0x01;
  auto ok = c->publish(bad_sig);
  ASSERT_TRUE(ok);
  EXPECT_FALSE(ok->accepted);
  EXPECT_EQ(ok->message.rfind("invalid:", 0), 0u) << ok->message;

  auto bad_id = make_event(1, "content changed after signing");
  bad_id.content = "something else";
  ok = c->publish(bad_id);
  ASSERT_TRUE(ok);
  EXPECT_FALSE(ok->accepted);
  EXPECT_EQ(ok->message.rfind("invalid:", 0), 0u) << ok->message;
  auto stored = c->query("x", "{\"kinds\":[1]}");
  ASSERT_TRUE(stored);
  EXPECT_TRUE(stored->empty());
}

TEST_F(RelayE2E, LiveSubscriptionReceivesNewMatchingEventsUntilClosed) {
  auto subscriber = client();
  auto publisher = client();
  ASSERT_TRUE(subscriber && publisher);
  auto stored = subscriber->query("live", "{\"kinds\":[1]}");
  ASSERT_TRUE(stored);
  EXPECT_TRUE(stored->empty());

  auto other_kind = make_event(7, "+");
  ASSERT_TRUE(publisher->publish(other_kind)->accepted);
  auto ev = make_event(1, "live one");
  ASSERT_TRUE(publisher->publish(ev)->accepted);
  auto got = subscriber->next_as<nostr::RelayEvent>();
  ASSERT_TRUE(got);
  EXPECT_EQ(got->subscription_id, "live");
  EXPECT_EQ(got->event, ev);

  subscriber->send(R"(["CLOSE","live"])");
  // The CLOSE and a REQ ride the same ordered connection: once this REQ's
  // EOSE arrives the CLOSE has been processed.
  ASSERT_TRUE(subscriber->query("sync", "{\"limit\":0}"));
  ASSERT_TRUE(publisher->publish(make_event(1, "after close"))->accepted);
  auto late = subscriber->next(500ms);
  // Only the still-open "sync" subscription (limit 0 = live only, all events) may see it.
  if (late) {
    auto* e = std::get_if<nostr::RelayEvent>(&*late);
    ASSERT_NE(e, nullptr) << subscriber->last_text();
    EXPECT_EQ(e->subscription_id, "sync");
  }
}

TEST_F(RelayE2E, EventIsDeliveredOncePerSubscriptionEvenWhenSeveralFiltersMatch) {
  auto subscriber = client();
  auto publisher = client();
  ASSERT_TRUE(subscriber && publisher);
  auto key_author = make_event(1, "probe");  // only to learn the author's hex
  ASSERT_TRUE(subscriber->query("s", "{\"kinds\":[1]},{\"authors\":[\"" +
                                         nostr::to_hex(key_author.pubkey) +
                                         "\"]},{\"#t\":[\"x\"]}"));
  ASSERT_TRUE(publisher->publish(make_event(1, "matches all three", {{"t", "x"}}))->accepted);
  ASSERT_TRUE(subscriber->next_as<nostr::RelayEvent>());
  EXPECT_FALSE(subscriber->next(300ms)) << subscriber->last_text();
}

TEST_F(RelayE2E, ReplacedEventIsNotBroadcastAsNewAndOlderVersionIsRefused) {
  auto subscriber = client();
  auto publisher = client();
  ASSERT_TRUE(subscriber && publisher);
  ASSERT_TRUE(subscriber->query("p", "{\"kinds\":[0]}"));
  auto newer = make_event(0, "{\"name\":\"new\"}", {}, 1700000100);
  auto older = make_event(0, "{\"name\":\"old\"}", {}, 1700000000);
  ASSERT_TRUE(publisher->publish(newer)->accepted);
  auto got = subscriber->next_as<nostr::RelayEvent>();
  ASSERT_TRUE(got);
  EXPECT_EQ(got->event, newer);
  auto ok = publisher->publish(older);
  ASSERT_TRUE(ok);
  EXPECT_FALSE(ok->accepted) << ok->message;
  EXPECT_FALSE(subscriber->next(300ms)) << "older version broadcast: " << subscriber->last_text();
}

TEST_F(RelayE2E, EphemeralEventsAreBroadcastButNeverStored) {
  auto subscriber = client();
  auto publisher = client();
  ASSERT_TRUE(subscriber && publisher);
  ASSERT_TRUE(subscriber->query("e", "{\"kinds\":[20001]}"));
  auto ev = make_event(20001, "now only");
  auto ok = publisher->publish(ev);
  ASSERT_TRUE(ok && ok->accepted);
  auto got = subscriber->next_as<nostr::RelayEvent>();
  ASSERT_TRUE(got);
  EXPECT_EQ(got->event, ev);
  auto stored = publisher->query("later", "{\"kinds\":[20001]}");
  ASSERT_TRUE(stored);
  EXPECT_TRUE(stored->empty());
}

TEST_F(RelayE2E, CountAnswersTheNumberOfMatchingEvents) {
  auto c = client();
  ASSERT_TRUE(c);
  for (int i = 0; i < 3; ++i)
    ASSERT_TRUE(c->publish(make_event(1, "n" + std::to_string(i)))->accepted);
  ASSERT_TRUE(c->publish(make_event(7, "+"))->accepted);
  c->send(R"(["COUNT","c",{"kinds":[1]}])");
  auto count = c->next_as<nostr::RelayCount>();
  ASSERT_TRUE(count);
  EXPECT_EQ(count->subscription_id, "c");
  EXPECT_EQ(count->count, 3u);
}

TEST_F(RelayE2E, LimitReturnsNewestFirst) {
  auto c = client();
  ASSERT_TRUE(c);
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(c->publish(make_event(1, "t" + std::to_string(i), {}, 1700000000 + i))->accepted);
  }
  auto got = c->query("l", "{\"kinds\":[1],\"limit\":2}");
  ASSERT_TRUE(got);
  ASSERT_EQ(got->size(), 2u);
  EXPECT_EQ((*got)[0].created_at, 1700000004);
  EXPECT_EQ((*got)[1].created_at, 1700000003);
}

TEST_F(RelayE2E, CompressionIsNegotiatedWhenOffered) {
  auto c = client(/*compression=*/true);
  ASSERT_TRUE(c);
  EXPECT_TRUE(c->ws().compressed());
  auto ev = make_event(1, std::string(5000, 'z'));
  ASSERT_TRUE(c->publish(ev)->accepted);
  auto got = c->query("z", "{\"ids\":[\"" + nostr::to_hex(ev.id) + "\"]}");
  ASSERT_TRUE(got);
  ASSERT_EQ(got->size(), 1u);
  EXPECT_EQ((*got)[0], ev);
  auto plain = client(false);
  ASSERT_TRUE(plain);
  EXPECT_FALSE(plain->ws().compressed());
}

TEST_F(RelayE2E, Nip11AdvertisesTheRelayLimits) {
  auto reply = http_get(graspd_.port(), "/", {{"Accept", "application/nostr+json"}});
  ASSERT_EQ(reply.status, 200);
  for (const char* key : {"\"max_message_length\"", "\"max_subscriptions\"", "\"max_filters\"",
                          "\"max_limit\"", "\"default_limit\"", "\"max_subid_length\"",
                          "\"max_event_tags\"", "\"max_content_length\""}) {
    EXPECT_NE(reply.body.find(key), std::string::npos) << key << " in " << reply.body;
  }
  EXPECT_NE(reply.body.find("45"), std::string::npos) << reply.body;
}

TEST_F(RelayE2E, MetricsCountConnectionsMessagesAndEvents) {
  auto c = client();
  ASSERT_TRUE(c);
  ASSERT_TRUE(c->publish(make_event(1, "metered"))->accepted);
  ASSERT_TRUE(c->query("m", "{\"kinds\":[1]}"));
  auto metrics = http_get(graspd_.port(), "/metrics");
  ASSERT_EQ(metrics.status, 200);
  EXPECT_NE(metrics.body.find("graspd_relay_connections 1"), std::string::npos) << metrics.body;
  EXPECT_NE(metrics.body.find("graspd_relay_events_total{result=\"stored\"} 1"), std::string::npos);
  EXPECT_NE(metrics.body.find("graspd_relay_messages_received_total{type=\"req\"} 1"),
            std::string::npos);
  EXPECT_NE(metrics.body.find("graspd_relay_req_seconds_count 1"), std::string::npos);
  // The event's write transaction, observed by the store writer before the OK left.
  EXPECT_NE(metrics.body.find("graspd_store_commits_total{result=\"ok\"} 1"), std::string::npos)
      << metrics.body;
  EXPECT_NE(metrics.body.find("graspd_store_batch_events_count 1"), std::string::npos);
  EXPECT_NE(metrics.body.find("graspd_store_commit_seconds_count 1"), std::string::npos);
  std::string output;
  EXPECT_EQ(promtool_check_metrics(metrics.body, &output), 0) << output;
}

// The default acceptance policy (GRASP-01) sits between validation and the
// store: an event unrelated to any repository is refused with `blocked:`.
TEST(RelayAcceptanceHook, DefaultPolicyRefusesOrphansThroughTheRelay) {
  GraspdProcess graspd{GraspdOptions{{{"NGIT_SYNC_ENABLED", "false"}}, {}}};
  ASSERT_TRUE(graspd.start()) << graspd.stderr_text();
  auto c = TestClient::connect(graspd.port());
  ASSERT_TRUE(c);
  auto ok = c->publish(make_event(1, "orphan"));
  ASSERT_TRUE(ok);
  EXPECT_FALSE(ok->accepted);
  EXPECT_EQ(ok->message.rfind("blocked:", 0), 0u) << ok->message;
  auto stored = c->query("q", "{\"kinds\":[1]}");
  ASSERT_TRUE(stored);
  EXPECT_TRUE(stored->empty());
  EXPECT_EQ(graspd.stop(), 0) << graspd.stderr_text();
}

// The transport merges the frames of a burst (a commit's OKs, a REQ's stored events) into few
// socket writes: every frame must still arrive whole, once and in order, with and without
// compression.
TEST(RelayBursts, PipelinedPublishesAndLargeAnswersArriveWholeAndInOrder) {
  GraspdProcess graspd{relay_options()};
  ASSERT_TRUE(graspd.start()) << graspd.stderr_text();
  constexpr int count = 1200;
  auto publisher = TestClient::connect(graspd.port());
  ASSERT_TRUE(publisher);
  std::set<std::string> sent;
  for (int i = 0; i < count; ++i) {
    auto ev = make_event(1, "burst " + std::to_string(i), {}, 1700000000 + i);
    sent.insert(nostr::to_hex(ev.id));
    publisher->send(event_frame(ev));
  }
  std::set<std::string> acknowledged;
  for (int i = 0; i < count; ++i) {
    auto ok = publisher->next_as<nostr::RelayOk>();
    ASSERT_TRUE(ok) << "after " << i << " OKs";
    ASSERT_TRUE(ok->accepted) << ok->message;
    acknowledged.insert(nostr::to_hex(ok->event_id));
  }
  EXPECT_EQ(acknowledged, sent);

  for (bool compression : {false, true}) {
    auto reader = TestClient::connect(graspd.port(), compression);
    ASSERT_TRUE(reader);
    for (int round = 0; round < 3; ++round) {
      auto got = reader->query("all" + std::to_string(round),
                               "{\"kinds\":[1],\"limit\":" + std::to_string(count) + "}");
      ASSERT_TRUE(got) << "compression " << compression;
      ASSERT_EQ(got->size(), static_cast<std::size_t>(count));
      for (int i = 0; i < count; ++i)
        ASSERT_EQ((*got)[static_cast<std::size_t>(i)].created_at, 1700000000 + count - 1 - i);
    }
  }
  EXPECT_EQ(graspd.stop(), 0) << graspd.stderr_text();
}

TEST(RelayRestart, EverythingAcknowledgedIsServedAfterRestart) {
  GraspdProcess graspd{relay_options()};
  ASSERT_TRUE(graspd.start()) << graspd.stderr_text();
  std::set<std::string> acknowledged;
  {
    auto c = TestClient::connect(graspd.port());
    ASSERT_TRUE(c);
    for (int i = 0; i < 50; ++i)
      c->send(event_frame(make_event(1, "durable " + std::to_string(i))));
    for (int i = 0; i < 50; ++i) {
      auto ok = c->next_as<nostr::RelayOk>();
      ASSERT_TRUE(ok);
      ASSERT_TRUE(ok->accepted) << ok->message;
      acknowledged.insert(nostr::to_hex(ok->event_id));
    }
  }
  graspd.kill();  // no graceful shutdown: OK true must already mean committed
  ASSERT_TRUE(graspd.restart()) << graspd.stderr_text();
  auto c = TestClient::connect(graspd.port());
  ASSERT_TRUE(c);
  auto events = c->query("all", "{\"kinds\":[1],\"limit\":100}");
  ASSERT_TRUE(events);
  std::set<std::string> served;
  for (const auto& ev : *events) served.insert(nostr::to_hex(ev.id));
  EXPECT_EQ(served, acknowledged);
  EXPECT_EQ(graspd.stop(), 0);
}

}  // namespace
}  // namespace graspd::test
