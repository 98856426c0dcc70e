// Deterministic tests of the fan-out actor: buffering between registration
// and going live (no loss, no duplicate of what the stored query sent),
// delivery only to matching subscriptions, CLOSE and disconnect.
#include "actors/relay/fanout.hpp"

#include <gtest/gtest.h>

#include <caf/all.hpp>

#include <set>

#include "messages/nostr/relay_message.hpp"
#include "tests/support/actor_fixture.hpp"
#include "tests/support/recording_sink.hpp"

namespace graspd {
namespace {

using test::RecordingSink;

nostr::EventPtr event(std::uint32_t kind, std::uint8_t id_byte) {
  auto ev = std::make_shared<nostr::Event>();
  ev->kind = kind;
  ev->id.fill(id_byte);
  return ev;
}

StoreCommits committed(const nostr::EventPtr& ev, std::uint64_t seq = 0) {
  return StoreCommits::of({StoreCommitted{
      ev, std::make_shared<const std::string>("{\"id\":" + std::to_string(ev->id[0]) + "}"),
      WriteOutcome::stored, seq}});
}

nostr::Filters kind_filter(std::uint32_t kind) {
  nostr::Filter f;
  f.kinds = std::vector<std::uint32_t>{kind};
  return {f};
}

/// Keeps the frames themselves (pieces and shared bodies), as a transport queue would hold them.
struct HoldingSink : FrameSink {
  void send(Frame frame) override { held.push_back(std::move(frame)); }
  void close(Frame) override {}
  std::vector<Frame> held;
};

class FanoutTest : public test::ActorTest {
 protected:
  FanoutTest() : fanout_(spawn(fanout_behavior, FanoutOptions{})) { run(); }

  void subscribe(std::uint64_t conn, const std::string& subid, nostr::Filters filters,
                 const FrameSinkPtr& sink) {
    auto ack = request<bool>(fanout_, FanoutSubscribe{conn, subid, std::move(filters), sink});
    ASSERT_TRUE(ack && *ack);
  }
  void send(auto&&... msg) {
    caf::anon_send(fanout_, std::forward<decltype(msg)>(msg)...);
    run();
  }

  fanout_actor fanout_;
};

TEST_F(FanoutTest, BuffersUntilLiveThenSkipsWhatTheQueryDelivered) {
  auto sink = std::make_shared<RecordingSink>();
  subscribe(1, "s", kind_filter(1), sink);
  auto a = event(1, 0xa1), b = event(1, 0xb2);
  send(committed(a));
  send(committed(b));
  EXPECT_TRUE(sink->take().empty()) << "nothing before EOSE";
  send(FanoutLive{1, "s", {a->id}});  // the stored query already sent `a`
  EXPECT_EQ(sink->take(), std::vector<std::string>{nostr::relay_event("s", "{\"id\":178}")});
  auto c = event(1, 0xc3);
  send(committed(c));
  EXPECT_EQ(sink->take(), std::vector<std::string>{nostr::relay_event("s", "{\"id\":195}")});
}

// The stored query saw every event committed below its horizon: those are its to send or to leave
// out (past its limit). Their commit notices may reach the fan-out before or after FanoutLive.
TEST_F(FanoutTest, EventsTheStoredQueryCouldSeeAreNeverSentLive) {
  auto sink = std::make_shared<RecordingSink>();
  subscribe(1, "s", kind_filter(1), sink);
  auto beyond_limit = event(1, 0x05);
  send(committed(beyond_limit, 5));
  send(FanoutLive{1, "s", {}, /*horizon=*/7});
  EXPECT_TRUE(sink->take().empty()) << "an event the query left out came live";
  send(committed(event(1, 0x06), 6));  // committed before the query, notice late
  EXPECT_TRUE(sink->take().empty()) << "an event the query saw came again as live";
  send(committed(event(1, 0x07), 7));  // committed after the query's snapshot
  EXPECT_EQ(sink->take(), std::vector<std::string>{nostr::relay_event("s", "{\"id\":7}")});
  send(FanoutEphemeral{event(1, 0x08), std::make_shared<const std::string>("{}")});
  EXPECT_EQ(sink->take().size(), 1u) << "ephemeral events are never in a stored query";
}

TEST_F(FanoutTest, DeliversOnlyToMatchingSubscriptionsOfEachConnection) {
  auto one = std::make_shared<RecordingSink>(), two = std::make_shared<RecordingSink>();
  subscribe(1, "k1", kind_filter(1), one);
  subscribe(2, "k7", kind_filter(7), two);
  send(FanoutLive{1, "k1", {}});
  send(FanoutLive{2, "k7", {}});
  send(committed(event(7, 0x01)));
  EXPECT_TRUE(one->take().empty());
  EXPECT_EQ(two->take().size(), 1u);
  send(FanoutEphemeral{event(1, 0x02), std::make_shared<const std::string>("{}")});
  EXPECT_EQ(one->take(), std::vector<std::string>{nostr::relay_event("k1", "{}")});
}

TEST_F(FanoutTest, UnsubscribeAndDisconnectStopDelivery) {
  auto sink = std::make_shared<RecordingSink>();
  subscribe(1, "a", kind_filter(1), sink);
  subscribe(1, "b", kind_filter(1), sink);
  subscribe(2, "a", kind_filter(1), sink);
  for (auto [conn, subid] : {std::pair{1, "a"}, {1, "b"}, {2, "a"}})
    send(FanoutLive{std::uint64_t(conn), subid, {}});
  send(committed(event(1, 1)));
  EXPECT_EQ(sink->take().size(), 3u);
  send(FanoutUnsubscribe{1, "a"});
  send(committed(event(1, 2)));
  EXPECT_EQ(sink->take().size(), 2u);
  send(FanoutDisconnect{1});
  send(committed(event(1, 3)));
  EXPECT_EQ(sink->take().size(), 1u);
  send(FanoutDisconnect{2});
  send(committed(event(1, 4)));
  EXPECT_TRUE(sink->take().empty());
}

TEST_F(FanoutTest, ResubscribingWithTheSameIdReplacesTheFilters) {
  auto sink = std::make_shared<RecordingSink>();
  subscribe(1, "s", kind_filter(1), sink);
  subscribe(1, "s", kind_filter(2), sink);
  send(FanoutLive{1, "s", {}});
  send(committed(event(1, 1)));
  EXPECT_TRUE(sink->take().empty());
  send(committed(event(2, 2)));
  EXPECT_EQ(sink->take().size(), 1u);
}

TEST_F(FanoutTest, OneLargeEventToManySubscriptionsHoldsItsJsonOnce) {
  // Many subscriptions on few connections whose clients do not read: every frame stays queued.
  constexpr std::size_t subscriptions = 1000;
  constexpr std::size_t connections = 4;
  constexpr std::size_t event_bytes = 500 * 1024;
  std::vector<std::shared_ptr<HoldingSink>> sinks;
  for (std::size_t c = 0; c < connections; ++c) sinks.push_back(std::make_shared<HoldingSink>());
  for (std::size_t i = 0; i < subscriptions; ++i) {
    const auto conn = i % connections;
    const auto subid = "sub" + std::to_string(i);
    subscribe(conn, subid, kind_filter(1), sinks[conn]);
    send(FanoutLive{conn, subid, {}, 0});
  }
  auto json = std::make_shared<const std::string>("{\"content\":\"" +
                                                  std::string(event_bytes, 'x') + "\"}");
  send(StoreCommits::of({StoreCommitted{event(1, 0x01), json, WriteOutcome::stored, 1}}));

  // What the queued frames hold: each distinct body once, plus every frame's own pieces.
  std::set<const std::string*> bodies;
  std::size_t held = 0;
  std::size_t frames = 0;
  for (const auto& sink : sinks) {
    for (const auto& frame : sink->held) {
      ++frames;
      held += frame.head().size() + frame.tail().size();
      if (bodies.insert(frame.shared_body().get()).second) held += frame.body().size();
    }
  }
  EXPECT_EQ(frames, subscriptions);
  EXPECT_LE(held, json->size() + subscriptions * 64)
      << "the event's JSON is held " << bodies.size() << " times";
  EXPECT_EQ(sinks[0]->held.front().text(), nostr::relay_event("sub0", *json));
}

}  // namespace
}  // namespace graspd
