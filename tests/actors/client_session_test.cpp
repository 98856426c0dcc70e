// Deterministic tests of the client session actor with the real store, store
// writer and fan-out under CAF's test_coordinator: OK only after the writer
// replied, REQ = stored events + EOSE then live, refusals with prefixes,
// the EVENT rate bucket, the acceptance hook and disconnect cleanup.
#include "actors/relay/client_session.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <caf/all.hpp>
#include <optional>

#include "actors/relay/fanout.hpp"
#include "actors/relay/negentropy_scanner.hpp"
#include "actors/relay/verifier.hpp"
#include "actors/store/store_writer.hpp"
#include "messages/nostr/client_message.hpp"
#include "messages/nostr/json.hpp"
#include "messages/nostr/negentropy.hpp"
#include "messages/nostr/relay_message.hpp"
#include "tests/store/store_test_util.hpp"
#include "tests/support/actor_fixture.hpp"
#include "tests/support/holding_verifier.hpp"
#include "tests/support/nostr_builders.hpp"
#include "tests/support/recording_sink.hpp"

namespace graspd {
namespace {

using test::RecordingSink;

using test::event_frame;

/// An untagged event signed by `secret_key(3)`.
nostr::Event untagged_event(std::uint32_t kind, std::string content,
                            std::int64_t created_at = 1700000000) {
  return test::signed_event(kind, {}, created_at, std::move(content), 3);
}

class ClientSessionTest : public test::ActorTest {
 protected:
  ClientSessionTest() {
    store_ = std::make_shared<store::EventStore>(store::test::options_for(dir_, &now_));
    StoreWriterConfig writer_config;
    writer_config.sweep_interval = std::chrono::seconds(0);
    writer_ = spawn(store_writer, store_, writer_config);
    fanout_ = spawn(fanout_behavior, FanoutOptions{});
    run();
    caf::anon_send(writer_, atom::feed_subscribe::value,
                   caf::actor_cast<store_feed_actor>(fanout_));
    run();
  }

  /// By default the session verifies on a pool of two real verifiers (as the daemon wires it).
  client_session_actor open_session(runtime::RelayLimits limits = {}, acceptance_actor hook = {},
                                    std::optional<std::vector<verifier_actor>> verifiers = {},
                                    std::shared_ptr<NegentropyScanner> scanner = {}) {
    auto ctx = std::make_shared<RelayContext>();
    ctx->store = store_;
    ctx->writer = writer_;
    ctx->fanout = fanout_;
    ctx->acceptance = hook;
    ctx->verifiers =
        verifiers ? *verifiers : std::vector<verifier_actor>{spawn(verifier), spawn(verifier)};
    ctx->limits = limits;
    ctx->monotonic_now = [this] { return now(); };
    ctx->negentropy_scanner = std::move(scanner);
    ctx->service = HostPort{"relay.test", std::nullopt};
    ctx->unix_now = [this] { return now_; };
    ctx->make_challenge = [this] { return "challenge-" + std::to_string(++challenges_); };
    auto session = spawn_client_session(system(), ctx, ++next_connection_, sink_, "ip:a");
    run();
    return session;
  }

  std::vector<std::string> say(const client_session_actor& session, std::string text) {
    caf::anon_send(session, atom::ws_text::value, std::move(text));
    run();
    return sink_->take();
  }

  std::int64_t now_ = 1'700'000'000;
  store::test::TempDir dir_;
  std::shared_ptr<store::EventStore> store_;
  store_writer_actor writer_;
  fanout_actor fanout_;
  std::shared_ptr<RecordingSink> sink_ = std::make_shared<RecordingSink>();
  std::uint64_t next_connection_ = 0;
  int challenges_ = 0;
};

/// ["AUTH", <kind 22242 event>] signed by `secret_key(key)`.
std::string auth_frame(std::uint8_t key, std::string challenge,
                       std::string relay = "wss://relay.test", std::int64_t created_at = 1700000000,
                       bool forge = false) {
  auto ev = test::signed_event(22242, {{"relay", std::move(relay)}, {"challenge", challenge}},
                               created_at, "", key);
  if (forge) ev.sig[0] ^= 1;
  return "[\"AUTH\"," + nostr::serialize_event(ev) + "]";
}

nostr::EventId auth_id(const std::string& frame) {
  auto parsed = nostr::parse_client_message(frame, {});
  return std::get<nostr::ClientAuth>(*parsed).event.id;
}

nostr::Event protected_note(std::uint8_t key, std::string content = "mine only") {
  return test::signed_event(1, {{"-"}}, 1700000000, std::move(content), key);
}

const std::string kAuthRequired = "auth-required: this event may only be published by its author";

TEST_F(ClientSessionTest, AuthBeforeAnyChallengeIsInvalid) {
  auto session = open_session();
  const auto frame = auth_frame(3, "challenge-1");
  EXPECT_EQ(say(session, frame),
            std::vector<std::string>{nostr::relay_ok(
                auth_id(frame), false, "invalid: no AUTH challenge was sent on this connection")});
  EXPECT_EQ(challenges_, 0) << "no challenge is made for a connection that needs none";
}

TEST_F(ClientSessionTest, AProtectedEventIsTakenOnceItsAuthorAuthenticated) {
  auto session = open_session();
  auto ev = protected_note(3);
  EXPECT_EQ(say(session, event_frame(ev)),
            (std::vector<std::string>{nostr::relay_auth("challenge-1"),
                                      nostr::relay_ok(ev.id, false, kAuthRequired)}))
      << "the challenge goes right before the refusal";
  EXPECT_EQ(say(session, event_frame(ev)),
            std::vector<std::string>{nostr::relay_ok(ev.id, false, kAuthRequired)})
      << "one challenge per connection";
  EXPECT_FALSE(store_->contains(ev.id));
  const auto auth = auth_frame(3, "challenge-1");
  EXPECT_EQ(say(session, auth), std::vector<std::string>{nostr::relay_ok(auth_id(auth), true, "")});
  EXPECT_EQ(say(session, event_frame(ev)),
            std::vector<std::string>{nostr::relay_ok(ev.id, true, "")});
  EXPECT_TRUE(store_->contains(ev.id));
}

TEST_F(ClientSessionTest, AuthEventsAreCheckedAgainstTheChallengeServiceClockAndSignature) {
  auto session = open_session();
  say(session, event_frame(protected_note(3)));  // challenge-1 sent
  const std::vector<std::pair<std::string, std::string>> refused{
      {auth_frame(3, "challenge-2"),
       "invalid: the challenge tag does not answer this connection's challenge"},
      {auth_frame(3, "challenge-1", "wss://other.test"),
       "invalid: the relay tag does not name this relay"},
      {auth_frame(3, "challenge-1", "wss://relay.test", 1700000000 - 1200),
       "invalid: created_at is more than 10 minutes from now"},
      {auth_frame(3, "challenge-1", "wss://relay.test", 1700000000, true),
       "invalid: bad signature"},
  };
  for (const auto& [frame, message] : refused)
    EXPECT_EQ(say(session, frame),
              std::vector<std::string>{nostr::relay_ok(auth_id(frame), false, message)});
  const auto good = auth_frame(3, "challenge-1", "ws://RELAY.test:80/path/");
  EXPECT_EQ(say(session, good), std::vector<std::string>{nostr::relay_ok(auth_id(good), true, "")});
}

TEST_F(ClientSessionTest, AProtectedEventOfAnotherKeyIsRestricted) {
  auto session = open_session();
  say(session, event_frame(protected_note(3)));
  say(session, auth_frame(4, "challenge-1"));
  auto theirs = protected_note(3, "reposted");
  auto frames = say(session, event_frame(theirs));
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0].rfind("[\"OK\",\"" + nostr::to_hex(theirs.id) + "\",false,\"restricted: ", 0),
            0u)
      << frames[0];
  EXPECT_FALSE(store_->contains(theirs.id));
  auto unprotected = untagged_event(1, "anyone's");
  EXPECT_EQ(say(session, event_frame(unprotected)),
            std::vector<std::string>{nostr::relay_ok(unprotected.id, true, "")});
}

TEST_F(ClientSessionTest, AConnectionAuthenticatesAtMostEightKeys) {
  auto session = open_session();
  say(session, event_frame(protected_note(3)));
  for (std::uint8_t key = 10; key < 18; ++key) {
    const auto frame = auth_frame(key, "challenge-1");
    EXPECT_EQ(say(session, frame),
              std::vector<std::string>{nostr::relay_ok(auth_id(frame), true, "")});
  }
  const auto again = auth_frame(10, "challenge-1", "wss://relay.test/");
  EXPECT_EQ(say(session, again),
            std::vector<std::string>{nostr::relay_ok(auth_id(again), true, "")})
      << "a key already proved takes no new place";
  const auto ninth = auth_frame(18, "challenge-1");
  EXPECT_EQ(
      say(session, ninth),
      std::vector<std::string>{nostr::relay_ok(
          auth_id(ninth), false, "restricted: too many identities on this connection (max 8)")});
}

TEST_F(ClientSessionTest, AnEventSentRightAfterItsAuthIsJudgedAfterIt) {
  auto holding = spawn(test::holding_verifier);
  auto session = open_session({}, {}, std::vector<verifier_actor>{holding});
  auto first = protected_note(3, "first");
  caf::anon_send(session, atom::ws_text::value, event_frame(first));
  run();
  caf::anon_send(holding, VerifyEvent{nullptr});
  run();
  sink_->take();  // challenge and refusal
  const auto auth = auth_frame(3, "challenge-1");
  auto ev = protected_note(3, "pipelined");
  caf::anon_send(session, atom::ws_text::value, auth);
  caf::anon_send(session, atom::ws_text::value, event_frame(ev));
  run();
  caf::anon_send(holding, VerifyEvent{nullptr});  // answers newest first: the EVENT's check
  run();
  EXPECT_EQ(sink_->take(), (std::vector<std::string>{nostr::relay_ok(auth_id(auth), true, ""),
                                                     nostr::relay_ok(ev.id, true, "")}));
}

TEST_F(ClientSessionTest, AuthFramesDrawFromTheEventBucket) {
  runtime::RelayLimits limits;
  limits.events_per_second = 0.001;
  limits.event_burst = 1;
  auto session = open_session(limits);
  const auto auth = auth_frame(3, "challenge-1");
  say(session, auth);
  const auto more = auth_frame(3, "challenge-1", "wss://relay.test/");
  EXPECT_EQ(say(session, more),
            std::vector<std::string>{
                nostr::relay_ok(auth_id(more), false, "rate-limited: slow down, too many events")});
}

TEST_F(ClientSessionTest, CredentialKindsAreRefusedAndNeverBroadcastWithoutAPolicy) {
  auto reader = open_session();
  auto session = open_session();
  say(reader, R"(["REQ","creds",{"kinds":[22242,27235]}])");
  for (std::uint32_t kind : {22242u, 27235u}) {
    auto credential = untagged_event(kind, "token");
    EXPECT_EQ(say(session, event_frame(credential)),
              std::vector<std::string>{nostr::relay_ok(
                  credential.id, false,
                  "invalid: " + std::to_string(kind) + " is a credential, not an event")})
        << "and nothing for the subscribed reader";
  }
}

TEST_F(ClientSessionTest, TheHookHearsWhetherTheAuthorOfAProtectedEventAuthenticated) {
  std::vector<bool> heard;
  auto hook = spawn([&heard]() -> acceptance_actor::behavior_type {
    return {
        [&heard](const AcceptanceQuery& q) {
          heard.push_back(q.authenticated_author);
          return AcceptanceVerdict{true, "", WriteOutcome::stored};
        },
        [](const StoreCommits&) {},
        [](const GitDataArrived&) {},
        [](atom::feed_subscribe, const held_feed_actor&) {},
        [](atom::feed_subscribe, const peer_feed_actor&) {},
        [](atom::held_events) { return HeldForPeers{}; },
        [](const StoreModeration&) { return true; },
        [](atom::tick) {},
        [](const StateAnswerDue&) {},
    };
  });
  auto session = open_session({}, hook);
  say(session, event_frame(untagged_event(1, "plain")));
  say(session, event_frame(protected_note(3)));
  say(session, auth_frame(3, "challenge-1"));
  say(session, event_frame(protected_note(3)));
  EXPECT_EQ(heard, (std::vector<bool>{false, true}));
}

TEST_F(ClientSessionTest, EventIsAcknowledgedAfterCommitAndThenServedByReq) {
  auto session = open_session();
  auto ev = untagged_event(1, "hi");
  EXPECT_EQ(say(session, event_frame(ev)),
            std::vector<std::string>{nostr::relay_ok(ev.id, true, "")});
  EXPECT_TRUE(store_->contains(ev.id));
  auto frames = say(session, R"(["REQ","s",{"kinds":[1]}])");
  ASSERT_EQ(frames.size(), 2u);
  EXPECT_EQ(frames[0], nostr::relay_event("s", nostr::serialize_event(ev)));
  EXPECT_EQ(frames[1], nostr::relay_eose("s"));
}

TEST_F(ClientSessionTest, LiveEventsFollowEoseAndStopAfterClose) {
  auto reader = open_session();
  auto writer_session = open_session();
  EXPECT_EQ(say(reader, R"(["REQ","live",{"kinds":[1]}])"),
            std::vector<std::string>{nostr::relay_eose("live")});
  auto ev = untagged_event(1, "fresh");
  auto frames = say(writer_session, event_frame(ev));
  // One sink is shared by both sessions here: the OK and the live EVENT.
  ASSERT_EQ(frames.size(), 2u);
  EXPECT_NE(std::find(frames.begin(), frames.end(),
                      nostr::relay_event("live", nostr::serialize_event(ev))),
            frames.end());
  EXPECT_TRUE(say(reader, R"(["CLOSE","live"])").empty());
  auto later = untagged_event(1, "later");
  EXPECT_EQ(say(writer_session, event_frame(later)),
            std::vector<std::string>{nostr::relay_ok(later.id, true, "")});
}

TEST_F(ClientSessionTest, RefusalsCarryPrefixes) {
  auto session = open_session();
  auto bad = untagged_event(1, "x");
  bad.sig[0] ^= 1;
  auto frames = say(session, event_frame(bad));
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0], nostr::relay_ok(bad.id, false, "invalid: bad signature"));
  frames = say(session, "not json");
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0].rfind("[\"NOTICE\",\"invalid:", 0), 0u) << frames[0];
  frames = say(session, R"(["REQ","s",{"kinds":["one"]}])");
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0].rfind("[\"CLOSED\",\"s\",\"invalid:", 0), 0u) << frames[0];
  caf::anon_send(session, atom::ws_binary::value);
  run();
  frames = sink_->take();
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0].rfind("[\"NOTICE\",\"invalid:", 0), 0u) << frames[0];
}

TEST_F(ClientSessionTest, SubscriptionCapAndLimitClamping) {
  runtime::RelayLimits limits;
  limits.max_subscriptions = 1;
  limits.max_limit = 2;
  auto session = open_session(limits);
  for (int i = 0; i < 4; ++i)
    say(session, event_frame(untagged_event(1, "n" + std::to_string(i), 1700000000 + i)));
  auto frames = say(session, R"(["REQ","a",{"kinds":[1],"limit":50}])");
  EXPECT_EQ(frames.size(), 3u);  // 2 events (capped) + EOSE
  frames = say(session, R"(["REQ","b",{}])");
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0].rfind("[\"CLOSED\",\"b\",\"rate-limited:", 0), 0u) << frames[0];
}

TEST_F(ClientSessionTest, SubscriptionStateIsBudgetedPerConnection) {
  runtime::RelayLimits limits;
  limits.max_subscription_values = 10;
  auto session = open_session(limits);
  // 1 per filter plus one per value: 6 each.
  auto frames = say(session, R"(["REQ","a",{"kinds":[1,2,3,4,5]}])");
  ASSERT_FALSE(frames.empty());
  EXPECT_EQ(frames.back(), nostr::relay_eose("a"));
  frames = say(session, R"(["REQ","b",{"kinds":[6,7,8,9,10]}])");
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0].rfind("[\"CLOSED\",\"b\",\"rate-limited:", 0), 0u) << frames[0];
  // Replacing a subscription counts it once; closing one frees its share.
  frames = say(session, R"(["REQ","a",{"kinds":[1,2,3,4,5,6,7,8,9]}])");
  EXPECT_EQ(frames.back(), nostr::relay_eose("a"));
  say(session, R"(["CLOSE","a"])");
  frames = say(session, R"(["REQ","b",{"kinds":[6,7,8,9,10]}])");
  EXPECT_EQ(frames.back(), nostr::relay_eose("b"));
}

TEST_F(ClientSessionTest, EventRateBucketRefusesBursts) {
  runtime::RelayLimits limits;
  limits.events_per_second = 0.001;
  limits.event_burst = 2;
  auto session = open_session(limits);
  for (int i = 0; i < 2; ++i) {
    auto ev = untagged_event(1, "ok" + std::to_string(i));
    EXPECT_EQ(say(session, event_frame(ev)),
              std::vector<std::string>{nostr::relay_ok(ev.id, true, "")});
  }
  auto third = untagged_event(1, "too many");
  auto frames = say(session, event_frame(third));
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0],
            nostr::relay_ok(third.id, false, "rate-limited: slow down, too many events"));
  EXPECT_FALSE(store_->contains(third.id));
}

TEST_F(ClientSessionTest, EventRateBucketRefillsOnTheInjectedClock) {
  runtime::RelayLimits limits;
  limits.events_per_second = 1;
  limits.event_burst = 1;
  auto session = open_session(limits);
  auto accepted = [&](const std::string& content) {
    auto ev = untagged_event(1, content);
    auto frames = say(session, event_frame(ev));
    return frames.size() == 1 && frames[0] == nostr::relay_ok(ev.id, true, "");
  };
  EXPECT_TRUE(accepted("first"));
  EXPECT_FALSE(accepted("second, same instant"));
  advance_time(std::chrono::milliseconds(500));
  EXPECT_FALSE(accepted("half a token later"));
  advance_time(std::chrono::milliseconds(600));
  EXPECT_TRUE(accepted("a whole token later"));
}

TEST_F(ClientSessionTest, AcceptanceHookCanRefuse) {
  auto hook = spawn([]() -> acceptance_actor::behavior_type {
    return {
        [](const AcceptanceQuery& q) {
          // A real hook stores what it accepts; the session relays the store's outcome.
          if (q.event->content == "spam")
            return AcceptanceVerdict{false, "blocked: no spam", WriteOutcome::error};
          if (q.event->content == "held")
            return AcceptanceVerdict{true, "purgatory: waiting", WriteOutcome::held};
          return AcceptanceVerdict{true, "", WriteOutcome::stored};
        },
        [](const StoreCommits&) {},
        [](const GitDataArrived&) { ADD_FAILURE() << "GitDataArrived"; },
        [](atom::feed_subscribe, const held_feed_actor&) { ADD_FAILURE() << "feed_subscribe"; },
        [](atom::feed_subscribe, const peer_feed_actor&) { ADD_FAILURE() << "peer feed"; },
        [](atom::held_events) {
          ADD_FAILURE() << "held_events";
          return HeldForPeers{};
        },
        [](const StoreModeration&) {
          ADD_FAILURE() << "StoreModeration";
          return false;
        },
        [](atom::tick) {},
        [](const StateAnswerDue&) { ADD_FAILURE() << "StateAnswerDue"; },
    };
  });
  auto session = open_session({}, hook);
  auto spam = untagged_event(1, "spam");
  EXPECT_EQ(say(session, event_frame(spam)),
            std::vector<std::string>{nostr::relay_ok(spam.id, false, "blocked: no spam")});
  EXPECT_FALSE(store_->contains(spam.id));
  auto fine = untagged_event(1, "fine");
  EXPECT_EQ(say(session, event_frame(fine)),
            std::vector<std::string>{nostr::relay_ok(fine.id, true, "")});
  // Held in purgatory: accepted, with the hook's own text.
  auto held = untagged_event(1, "held");
  EXPECT_EQ(say(session, event_frame(held)),
            std::vector<std::string>{nostr::relay_ok(held.id, true, "purgatory: waiting")});
}

TEST_F(ClientSessionTest, EventsReachTheStoreInTheClientsOrderWhateverTheVerifiersDo) {
  auto holding = spawn(test::holding_verifier);
  auto session = open_session({}, {}, std::vector<verifier_actor>{holding});
  auto older = untagged_event(0, "profile v1", 1700000000);
  auto newer = untagged_event(0, "profile v2", 1700000001);
  auto bad = untagged_event(1, "forged");
  bad.sig[5] ^= 1;
  auto last = untagged_event(1, "after the forgery");
  caf::anon_send(session, atom::ws_text::value, event_frame(older));
  caf::anon_send(session, atom::ws_text::value, event_frame(newer));
  caf::anon_send(session, atom::ws_text::value, event_frame(bad));
  caf::anon_send(session, atom::ws_text::value, event_frame(last));
  run();
  EXPECT_TRUE(sink_->take().empty()) << "answered before the checks";
  caf::anon_send(holding, VerifyEvent{nullptr});  // answers newest first
  run();
  // Stored in arrival order: v1 accepted, then replaced by v2. Reversed, v1 would be refused as
  // older. (A refusal is answered at once, stored events after their commit.)
  auto frames = sink_->take();
  std::sort(frames.begin(), frames.end());
  std::vector<std::string> expected{
      nostr::relay_ok(older.id, true, ""), nostr::relay_ok(newer.id, true, ""),
      nostr::relay_ok(bad.id, false, "invalid: bad signature"), nostr::relay_ok(last.id, true, "")};
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(frames, expected);
  EXPECT_FALSE(store_->contains(older.id));
  EXPECT_TRUE(store_->contains(newer.id));
  EXPECT_FALSE(store_->contains(bad.id));
}

TEST_F(ClientSessionTest, AConnectionKeepsAtMostItsShareOfChecksOnTheVerifiers) {
  auto holding = spawn(test::holding_verifier);
  runtime::RelayLimits limits;
  limits.verifications_per_session = 2;
  auto session = open_session(limits, {}, std::vector<verifier_actor>{holding});
  std::vector<nostr::Event> events;
  for (int i = 0; i < 5; ++i) {
    events.push_back(untagged_event(1, "queued " + std::to_string(i)));
    caf::anon_send(session, atom::ws_text::value, event_frame(events.back()));
  }
  run();
  auto& held = state<test::HoldingVerifierState, verifier_actor::base>(holding).held;
  EXPECT_EQ(held.size(), 2u);
  std::size_t answered = 0;
  while (answered < events.size()) {
    ASSERT_LE(held.size(), 2u);
    ASSERT_FALSE(held.empty()) << "events left waiting with nothing out";
    caf::anon_send(holding, VerifyEvent{nullptr});
    run();
    answered += sink_->take().size();
  }
  for (const auto& ev : events) EXPECT_TRUE(store_->contains(ev.id));
}

TEST_F(ClientSessionTest, ClientTextCountsAsConsumedOnlyOnceHandledAndChecked) {
  auto holding = spawn(test::holding_verifier);
  auto session = open_session({}, {}, std::vector<verifier_actor>{holding});
  const std::string req = R"(["REQ","s",{"kinds":[1]}])";
  say(session, req);
  EXPECT_EQ(sink_->consumed_bytes, req.size());
  const auto event = event_frame(untagged_event(1, "held back"));
  say(session, event);
  EXPECT_EQ(sink_->consumed_bytes, req.size()) << "an EVENT counts until its check is done";
  caf::anon_send(holding, VerifyEvent{nullptr});
  run();
  EXPECT_EQ(sink_->consumed_bytes, req.size() + event.size());
  say(session, "garbage");
  EXPECT_EQ(sink_->consumed_bytes, req.size() + event.size() + 7);
}

TEST_F(ClientSessionTest, WithoutVerifiersTheSessionChecksSignaturesItself) {
  auto session = open_session({}, {}, std::vector<verifier_actor>{});
  auto good = untagged_event(1, "inline");
  auto bad = untagged_event(1, "inline forged");
  bad.sig[0] ^= 1;
  EXPECT_EQ(say(session, event_frame(good)),
            std::vector<std::string>{nostr::relay_ok(good.id, true, "")});
  EXPECT_EQ(say(session, event_frame(bad)),
            std::vector<std::string>{nostr::relay_ok(bad.id, false, "invalid: bad signature")});
}

TEST_F(ClientSessionTest, CountAnswersFromTheStore) {
  auto session = open_session();
  for (int i = 0; i < 3; ++i) say(session, event_frame(untagged_event(1, "c" + std::to_string(i))));
  EXPECT_EQ(say(session, R"(["COUNT","c",{"kinds":[1]}])"),
            std::vector<std::string>{nostr::relay_count("c", 3)});
}

TEST_F(ClientSessionTest, ClosingTheConnectionDropsItsSubscriptions) {
  auto reader = open_session();
  auto writer_session = open_session();
  say(reader, R"(["REQ","live",{}])");
  caf::anon_send(reader, atom::ws_closed::value);
  run();
  auto ev = untagged_event(1, "nobody listens");
  EXPECT_EQ(say(writer_session, event_frame(ev)),
            std::vector<std::string>{nostr::relay_ok(ev.id, true, "")});
}

TEST_F(ClientSessionTest, AStoredAnswerLeavesInChunksPacedByTheTransport) {
  // 120 events of 40 KB: a 4.8 MB answer, sent in chunks of 256 KiB.
  constexpr std::size_t events = 120;
  constexpr std::size_t chunk = 256 * 1024;
  std::vector<nostr::EventPtr> stored;
  for (std::size_t i = 0; i < events; ++i)
    stored.push_back(std::make_shared<const nostr::Event>(
        untagged_event(1, std::string(40 * 1024, 'a' + i % 26), 1700000000 + i)));
  store_->write_batch(stored);
  runtime::RelayLimits limits;
  limits.answer_chunk_bytes = chunk;
  auto session = open_session(limits);
  sink_->hold_drains = true;

  std::vector<std::string> answer = say(session, R"(["REQ","big",{"kinds":[1],"limit":500}])");
  std::size_t rounds = 1;
  const std::size_t largest_frame =
      nostr::relay_event("big", nostr::serialize_event(*stored[0])).size();
  auto bytes_of = [](const std::vector<std::string>& frames) {
    std::size_t bytes = 0;
    for (const auto& f : frames) bytes += f.size();
    return bytes;
  };
  EXPECT_LE(bytes_of(answer), chunk + largest_frame + 1024) << "the first chunk";
  // An event committed while the answer is under way comes live, after EOSE.
  auto fresh = std::make_shared<const nostr::Event>(untagged_event(1, "fresh", 1800000000));
  caf::anon_send(writer_, StoreWrite{fresh, {}});
  run();
  while (sink_->release_drain()) {
    run();
    auto frames = sink_->take();
    EXPECT_LE(bytes_of(frames), chunk + largest_frame + 1024) << "round " << rounds;
    answer.insert(answer.end(), frames.begin(), frames.end());
    ++rounds;
  }
  EXPECT_GT(rounds, 10u) << "the answer was not paced";
  ASSERT_EQ(answer.size(), events + 2);
  for (std::size_t i = 0; i < events; ++i)
    EXPECT_EQ(answer[i], nostr::relay_event("big", nostr::serialize_event(*stored[events - 1 - i])))
        << "newest first, at " << i;
  EXPECT_EQ(answer[events], nostr::relay_eose("big"));
  EXPECT_EQ(answer[events + 1], nostr::relay_event("big", nostr::serialize_event(*fresh)));
}

TEST_F(ClientSessionTest, AnAnswerWhoseReqIsClosedMidwayStopsWithoutEose) {
  std::vector<nostr::EventPtr> stored;
  for (std::size_t i = 0; i < 40; ++i)
    stored.push_back(std::make_shared<const nostr::Event>(
        untagged_event(1, std::string(40 * 1024, 'b'), 1700000000 + i)));
  store_->write_batch(stored);
  runtime::RelayLimits limits;
  limits.answer_chunk_bytes = 64 * 1024;
  auto session = open_session(limits);
  sink_->hold_drains = true;
  EXPECT_FALSE(say(session, R"(["REQ","s",{"kinds":[1]}])").empty());
  say(session, R"(["CLOSE","s"])");
  EXPECT_EQ(say(session, R"(["REQ","t",{"ids":[")" + nostr::to_hex(stored[0]->id) + R"("]}])"),
            std::vector<std::string>{})
      << "a second REQ waits behind the first answer";
  sink_->hold_drains = false;
  ASSERT_TRUE(sink_->release_drain());
  run();
  EXPECT_EQ(sink_->take(),
            (std::vector<std::string>{nostr::relay_event("t", nostr::serialize_event(*stored[0])),
                                      nostr::relay_eose("t")}));
}

/// ["NEG-OPEN",<subid>,{},<initial message of an empty client>]
std::string neg_open_frame(const std::string& subid) {
  nostr::negentropy::Storage empty;
  auto engine = nostr::negentropy::Negentropy::create(empty, 0);
  return "[\"NEG-OPEN\",\"" + subid + "\",{},\"" +
         nostr::negentropy::message_to_hex(engine->initiate()) + "\"]";
}

std::shared_ptr<NegentropyScanner> manual_scanner(const std::shared_ptr<store::EventStore>& store,
                                                  std::size_t per_address = 16) {
  return std::make_shared<NegentropyScanner>(
      NegentropyScannerLimits{.threads = 0, .max_queued_per_address = per_address},
      [store](const nostr::Filter& filter, std::uint64_t max) {
        return store->negentropy_items(filter, max);
      });
}

// With a scanner the session never reads the NEG-OPEN's records itself: the open waits for the
// scan while the connection's REQs are served, and is answered once the scan's result comes back.
TEST_F(ClientSessionTest, ANegOpenIsAnsweredWhenItsScanEndsAndNeverBlocksTheSession) {
  auto scanner = manual_scanner(store_);
  auto session = open_session({}, {}, {}, scanner);
  for (int i = 0; i < 3; ++i) say(session, event_frame(untagged_event(1, "n" + std::to_string(i))));
  EXPECT_TRUE(say(session, neg_open_frame("n")).empty()) << "no answer before the scan ran";
  EXPECT_EQ(scanner->queued_by("ip:a"), 1u);
  auto req = say(session, R"(["REQ","r",{"kinds":[1]}])");
  ASSERT_EQ(req.size(), 4u) << "the REQ is served while the scan waits";
  EXPECT_EQ(req.back(), nostr::relay_eose("r"));
  ASSERT_TRUE(scanner->run_one());
  run();
  auto answer = sink_->take();
  ASSERT_EQ(answer.size(), 1u);
  EXPECT_EQ(answer[0].rfind("[\"NEG-MSG\",\"n\"", 0), 0u) << answer[0];
  // The connection ends: the session quits although its NIP-77 idle timer is pending.
  caf::anon_send(session, atom::ws_closed::value);
  run();
}

TEST_F(ClientSessionTest, ANegOpenClosedWhileItsScanWaitsIsNotAnswered) {
  auto scanner = manual_scanner(store_);
  auto session = open_session({}, {}, {}, scanner);
  say(session, neg_open_frame("n"));
  say(session, R"(["NEG-CLOSE","n"])");
  ASSERT_TRUE(scanner->run_one());
  run();
  EXPECT_TRUE(sink_->take().empty());
  caf::anon_send(session, atom::ws_closed::value);
  run();
}

TEST_F(ClientSessionTest, AFullScanQueueAnswersRateLimited) {
  auto scanner = manual_scanner(store_, 1);
  auto session = open_session({}, {}, {}, scanner);
  EXPECT_TRUE(say(session, neg_open_frame("a")).empty());
  auto refused = say(session, neg_open_frame("b"));
  ASSERT_EQ(refused.size(), 1u);
  EXPECT_NE(refused[0].find("NEG-ERR"), std::string::npos) << refused[0];
  EXPECT_NE(refused[0].find("rate-limited: too many negentropy scans waiting from your address"),
            std::string::npos)
      << refused[0];
  caf::anon_send(session, atom::ws_closed::value);
  run();
}

}  // namespace
}  // namespace graspd
