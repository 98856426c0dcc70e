// The GRASP-03 fetch path's decisions, without actors: which connection a fetch takes, how its
// parts complete, when it times out, when a control-plane connection retires or is promoted.
#include "actors/sync/engine/fetch_router.hpp"

#include <gtest/gtest.h>

namespace graspd::sync {
namespace {

const RelayUrl mailbox = "wss://mailbox.example";
const RelayUrl other = "wss://other.example";
constexpr std::int64_t t0 = 1'700'000'000;

template <class T>
std::vector<T> only(const FetchCommands& commands) {
  std::vector<T> out;
  for (const auto& c : commands)
    if (auto* x = std::get_if<T>(&c)) out.push_back(*x);
  return out;
}

nostr::Filters kinds(std::initializer_list<std::uint32_t> list) {
  nostr::Filters out;
  for (auto kind : list) {
    nostr::Filter filter;
    filter.kinds = std::vector<std::uint32_t>{kind};
    out.push_back(filter);
  }
  return out;
}

FetchRequest request(const RelayUrl& relay, nostr::Filters filters = kinds({10002})) {
  return FetchRequest{relay, std::move(filters), false, "history"};
}

RelayFacts unconnected() {
  return {};
}
RelayFacts connected() {
  return {.connected = true};
}

/// What an answer says, for comparing.
std::vector<std::pair<bool, std::string>> answers(const FetchCommands& commands) {
  std::vector<std::pair<bool, std::string>> out;
  for (const auto& a : only<AnswerFetch>(commands)) out.emplace_back(a.ok, a.error);
  return out;
}

class FetchRouterTest : public ::testing::Test {
 protected:
  /// A fetch on `relay` through a control-plane connection that then opens with `limits`.
  std::string fetch_on_control(const RelayUrl& relay, ConnectionLimits limits = {},
                               nostr::Filters filters = kinds({10002})) {
    auto start = router_.on_fetch(request(relay, std::move(filters)), unconnected(), t0);
    router_.on_relay_up(relay, limits);
    return start.id;
  }

  /// Completes every part of fetch `id`; the commands of the last.
  FetchCommands complete(const std::string& id) {
    FetchCommands last;
    std::vector<std::string> parts;
    for (const auto& [part, owner] : router_.fetch_parts())
      if (owner == id) parts.push_back(part);
    for (const auto& part : parts) last = router_.on_part_done(part).value();
    return last;
  }

  FetchRouter router_{FetchRouterConfig{}};
};

TEST_F(FetchRouterTest, AFetchOnAnOpenConnectionUsesIt) {
  router_.on_relay_up(mailbox, {});
  auto start = router_.on_fetch(request(mailbox), connected(), t0);
  EXPECT_EQ(start.id, "plus-1");
  EXPECT_TRUE(only<ConnectForFetches>(start.commands).empty());
  auto subs = only<OpenSubscription>(start.commands);
  ASSERT_EQ(subs.size(), 1u);
  EXPECT_EQ(subs[0].relay, mailbox);
  EXPECT_EQ(subs[0].subscription_id, "plus-1");
  EXPECT_EQ(subs[0].filters, kinds({10002}));
  auto timers = only<ArmFetchTimeout>(start.commands);
  ASSERT_EQ(timers.size(), 1u);
  EXPECT_EQ(timers[0].fetch_id, "plus-1");
  EXPECT_EQ(timers[0].delay_seconds, 30);
  EXPECT_EQ(only<RefreshStatus>(start.commands).size(), 1u);
  EXPECT_TRUE(router_.control().empty()) << "an ordinary connection is no control one";
  EXPECT_EQ(router_.counts().started, 1u);
  EXPECT_EQ(router_.counts().control_dials, 0u);
  EXPECT_EQ(router_.fetches_on(mailbox), 1u);
}

TEST_F(FetchRouterTest, WithoutAConnectionAControlConnectionIsDialledAndTheFetchWaitsForIt) {
  auto trusted = request(mailbox);
  trusted.trusted = true;
  auto start = router_.on_fetch(trusted, unconnected(), t0);
  auto dials = only<ConnectForFetches>(start.commands);
  ASSERT_EQ(dials.size(), 1u);
  EXPECT_EQ(dials[0].relay, mailbox);
  EXPECT_TRUE(dials[0].trusted);
  EXPECT_EQ(dials[0].role, "history");
  EXPECT_TRUE(only<OpenSubscription>(start.commands).empty()) << "not open yet";
  EXPECT_EQ(only<ArmFetchTimeout>(start.commands).size(), 1u);
  ASSERT_EQ(router_.control().count(mailbox), 1u);
  EXPECT_EQ(router_.control().at(mailbox).role, "history");
  EXPECT_FALSE(router_.is_open(mailbox));
  EXPECT_EQ(router_.counts().control_dials, 1u);

  auto up = router_.on_relay_up(mailbox, {});
  auto subs = only<OpenSubscription>(up);
  ASSERT_EQ(subs.size(), 1u);
  EXPECT_EQ(subs[0].subscription_id, start.id);
  EXPECT_TRUE(router_.is_open(mailbox));
  EXPECT_TRUE(only<OpenSubscription>(router_.on_relay_up(mailbox, {})).empty())
      << "a sent fetch is not sent again";
}

TEST_F(FetchRouterTest, FetchesAreRefusedForOurselvesAndForTrackedRelaysWithoutAConnection) {
  struct Case {
    RelayFacts facts;
    bool refused;
    bool dials;
  };
  const Case cases[] = {
      {{.ours = true}, true, false},
      {{.ours = true, .connected = true}, true, false},
      {{.tracked = true}, true, false},  // waiting for its reconnect: the plan's to time
      {{.tracked = true, .connected = true}, false, false},
      {{.connected = true}, false, false},
      {{}, false, true},
  };
  for (const auto& c : cases) {
    FetchRouter router{FetchRouterConfig{}};
    auto start = router.on_fetch(request(mailbox), c.facts, t0);
    SCOPED_TRACE(testing::Message() << "ours " << c.facts.ours << " tracked " << c.facts.tracked
                                    << " connected " << c.facts.connected);
    if (c.refused) {
      EXPECT_TRUE(start.id.empty());
      ASSERT_EQ(start.commands.size(), 1u);
      auto answer = std::get<AnswerFetch>(start.commands[0]);
      EXPECT_EQ(answer.fetch_id, "");
      EXPECT_FALSE(answer.ok);
      EXPECT_EQ(answer.error, "relay not available");
      EXPECT_EQ(router.counts().started, 0u);
      EXPECT_TRUE(router.fetches().empty());
    } else {
      EXPECT_EQ(start.id, "plus-1");
      EXPECT_TRUE(answers(start.commands).empty());
      EXPECT_EQ(router.counts().started, 1u);
    }
    EXPECT_EQ(only<ConnectForFetches>(start.commands).size(), c.dials ? 1u : 0u);
    EXPECT_EQ(router.control().count(mailbox), c.dials ? 1u : 0u);
  }
}

TEST_F(FetchRouterTest, RefusedFetchesTakeNoIdAndIdsCountUp) {
  EXPECT_EQ(router_.on_fetch(request(mailbox), connected(), t0).id, "plus-1");
  EXPECT_EQ(router_.on_fetch(request(other), RelayFacts{.ours = true}, t0).id, "");
  EXPECT_EQ(router_.on_fetch(request(mailbox), connected(), t0).id, "plus-2");
}

TEST_F(FetchRouterTest, NegentropyIsAskedForUnlessThePeerOrTheConfigurationRulesItOut) {
  struct Case {
    bool configured;
    std::optional<bool> peer_nip77;
    bool negentropy;
  };
  const Case cases[] = {
      {true, std::nullopt, true},   {true, true, true},   {true, false, false},
      {false, std::nullopt, false}, {false, true, false},
  };
  for (const auto& c : cases) {
    FetchRouterConfig config;
    config.negentropy = c.configured;
    FetchRouter router{config};
    router.on_relay_up(mailbox, ConnectionLimits{.nip77 = c.peer_nip77});
    auto subs = only<OpenSubscription>(router.on_fetch(request(mailbox), connected(), t0).commands);
    ASSERT_EQ(subs.size(), 1u);
    EXPECT_EQ(subs[0].negentropy, c.negentropy)
        << "configured " << c.configured << " peer "
        << (c.peer_nip77 ? (*c.peer_nip77 ? "nip77" : "no nip77") : "silent");
  }
}

TEST_F(FetchRouterTest, AFetchIsPackedToThePeersLimitsAndCompletesWhenEveryPartDid) {
  auto id = fetch_on_control(mailbox, ConnectionLimits{.max_filters = 2}, kinds({1, 7, 1111}));
  ASSERT_EQ(router_.fetch_parts().size(), 2u);
  EXPECT_EQ(router_.fetch_parts().count(id + ".0"), 1u);
  EXPECT_EQ(router_.fetch_parts().count(id + ".1"), 1u);
  for (const auto& [part, owner] : router_.fetch_parts()) EXPECT_EQ(owner, id);

  auto first = router_.on_part_done(id + ".0");
  ASSERT_TRUE(first);
  EXPECT_TRUE(first->empty()) << "one part is still open; the done one stays open too";
  EXPECT_EQ(router_.on_part_done(id + ".0")->size(), 0u) << "a repeated EOSE changes nothing";

  auto last = router_.on_part_done(id + ".1");
  ASSERT_TRUE(last);
  auto closes = only<CloseSubscription>(*last);
  ASSERT_EQ(closes.size(), 2u);
  EXPECT_EQ(closes[0].subscription_id, id + ".0");
  EXPECT_EQ(closes[1].subscription_id, id + ".1");
  ASSERT_EQ(only<AnswerFetch>(*last).size(), 1u);
  EXPECT_EQ(only<AnswerFetch>(*last)[0].fetch_id, id);
  EXPECT_EQ(answers(*last), (std::vector<std::pair<bool, std::string>>{{true, ""}}));
  EXPECT_EQ(only<RefreshStatus>(*last).size(), 1u);
  EXPECT_TRUE(router_.fetch_parts().empty());
  EXPECT_TRUE(router_.fetches().empty());
  EXPECT_EQ(router_.counts().failed, 0u);
}

TEST_F(FetchRouterTest, WithoutNip11LimitsAFetchIsPackedTo10FiltersPerReq) {
  nostr::Filters eleven;
  for (std::uint32_t kind = 1; kind <= 11; ++kind) eleven.push_back(kinds({kind})[0]);
  fetch_on_control(mailbox, {}, eleven);
  EXPECT_EQ(router_.fetch_parts().size(), 2u);
}

TEST_F(FetchRouterTest, SubscriptionsThatAreNoFetchPartsAreThePlans) {
  fetch_on_control(mailbox);
  EXPECT_FALSE(router_.on_part_done("sub-7"));
  EXPECT_FALSE(router_.on_part_closed("sub-7", "blocked"));
  EXPECT_EQ(router_.fetches().size(), 1u);
}

TEST_F(FetchRouterTest, APartClosedByThePeerFailsItsFetch) {
  auto id = fetch_on_control(mailbox, ConnectionLimits{.max_filters = 1}, kinds({1, 7}));
  auto closed = router_.on_part_closed(id + ".1", "blocked: no");
  ASSERT_TRUE(closed);
  EXPECT_EQ(answers(*closed),
            (std::vector<std::pair<bool, std::string>>{{false, "closed: blocked: no"}}));
  EXPECT_EQ(only<CloseSubscription>(*closed).size(), 2u) << "every part is closed";
  EXPECT_EQ(router_.counts().failed, 1u);
  EXPECT_TRUE(router_.fetch_parts().empty());
}

TEST_F(FetchRouterTest, AFetchWithoutProgressFor30SecondsTimesOut) {
  auto id = fetch_on_control(mailbox);
  auto out = router_.on_timeout(id, t0 + 30);
  EXPECT_EQ(answers(out), (std::vector<std::pair<bool, std::string>>{{false, "timed out"}}));
  EXPECT_EQ(only<CloseSubscription>(out).size(), 1u);
  EXPECT_EQ(router_.counts().failed, 1u);
  EXPECT_TRUE(router_.on_timeout(id, t0 + 60).empty()) << "a finished fetch's timer is stale";
}

TEST_F(FetchRouterTest, AProgressingFetchKeepsGoingUpToItsLongestDuration) {
  auto id = fetch_on_control(mailbox);
  std::int64_t t = t0;
  for (int round = 1; round < 10; ++round) {  // timers at 30, 60, ... 270 s
    t += 30;
    router_.on_traffic(mailbox, RelayProgress{.pages = 1});
    auto out = router_.on_timeout(id, t);
    ASSERT_EQ(out.size(), 1u) << "at " << t - t0 << " s";
    auto timer = std::get<ArmFetchTimeout>(out[0]);
    EXPECT_EQ(timer.fetch_id, id);
    EXPECT_EQ(timer.delay_seconds, 30);
  }
  router_.on_traffic(mailbox, RelayProgress{.pages = 1});
  EXPECT_EQ(answers(router_.on_timeout(id, t0 + 300)),
            (std::vector<std::pair<bool, std::string>>{{false, "timed out"}}))
      << "300 s in all, however it progresses";
}

TEST_F(FetchRouterTest, ProgressNeedsOneSilentIntervalToLapse) {
  auto id = fetch_on_control(mailbox);
  router_.on_traffic(mailbox, RelayProgress{.negentropy_rounds = 1});
  EXPECT_EQ(only<ArmFetchTimeout>(router_.on_timeout(id, t0 + 30)).size(), 1u);
  EXPECT_EQ(answers(router_.on_timeout(id, t0 + 60)).size(), 1u)
      << "progress counts once: the next silent 30 s end it";
}

TEST_F(FetchRouterTest, OnlyPagesRoundsAndRequestedEventsFromItsRelayAreProgress) {
  struct Case {
    const char* what;
    RelayUrl relay;
    RelayProgress traffic;
    bool progress;
  };
  const Case cases[] = {
      {"a page", mailbox, {.pages = 1}, true},
      {"a NIP-77 round", mailbox, {.negentropy_rounds = 1}, true},
      {"a requested event", mailbox, {.events_received = 1}, true},
      {"one requested among noise",
       mailbox,
       {.events_received = 3, .events_unrequested = 1, .events_invalid = 1},
       true},
      {"an unrequested event", mailbox, {.events_received = 1, .events_unrequested = 1}, false},
      {"an invalid event", mailbox, {.events_received = 1, .events_invalid = 1}, false},
      {"nothing", mailbox, {}, false},
      {"a page from another relay", other, {.pages = 1}, false},
  };
  for (const auto& c : cases) {
    FetchRouter router{FetchRouterConfig{}};
    auto id = router.on_fetch(request(mailbox), unconnected(), t0).id;
    router.on_relay_up(mailbox, {});
    router.on_traffic(c.relay, c.traffic);
    auto out = router.on_timeout(id, t0 + 30);
    EXPECT_EQ(answers(out).empty(), c.progress) << c.what;
  }
}

TEST_F(FetchRouterTest, TrafficBeforeAFetchWasSentIsNoProgress) {
  auto id = router_.on_fetch(request(mailbox), unconnected(), t0).id;
  router_.on_traffic(mailbox, RelayProgress{.pages = 1});  // the connection is not open yet
  EXPECT_EQ(answers(router_.on_timeout(id, t0 + 30)).size(), 1u);
}

TEST_F(FetchRouterTest, AnIdleControlConnectionRetires) {
  auto id = fetch_on_control(mailbox);
  auto done = complete(id);
  auto idle = only<ArmIdle>(done);
  ASSERT_EQ(idle.size(), 1u);
  EXPECT_EQ(idle[0].relay, mailbox);
  EXPECT_EQ(idle[0].delay_seconds, 10);
  auto retired = router_.on_idle(mailbox, idle[0].generation, false);
  ASSERT_EQ(only<Retire>(retired).size(), 1u);
  EXPECT_EQ(only<Retire>(retired)[0].relay, mailbox);
  EXPECT_EQ(only<RefreshStatus>(retired).size(), 1u);
  EXPECT_TRUE(router_.control().empty());
  EXPECT_FALSE(router_.is_open(mailbox));
  EXPECT_EQ(router_.counts().control_retired, 1u);
  EXPECT_TRUE(router_.on_idle(mailbox, idle[0].generation, false).empty()) << "retired once";
}

TEST_F(FetchRouterTest, AControlConnectionStaysWhileItIsUsedOrThePlanTracksIt) {
  auto id = fetch_on_control(mailbox);
  auto generation = only<ArmIdle>(complete(id)).at(0).generation;
  // A new fetch on the open connection: the armed idle timer is stale.
  auto second = router_.on_fetch(request(mailbox), connected(), t0 + 5);
  EXPECT_TRUE(only<ConnectForFetches>(second.commands).empty());
  EXPECT_EQ(only<OpenSubscription>(second.commands).size(), 1u);
  EXPECT_TRUE(router_.on_idle(mailbox, generation, false).empty()) << "stale generation";
  EXPECT_TRUE(router_.on_idle(mailbox, generation + 1, false).empty()) << "a fetch runs";
  auto next = only<ArmIdle>(complete(second.id)).at(0).generation;
  EXPECT_GT(next, generation);
  EXPECT_TRUE(router_.on_idle(mailbox, next, true).empty()) << "the plan tracks the relay";
  EXPECT_EQ(router_.control().count(mailbox), 1u);
  EXPECT_EQ(router_.counts().control_retired, 0u);
}

TEST_F(FetchRouterTest, OnlyControlConnectionsArmAnIdleTimer) {
  router_.on_relay_up(mailbox, {});  // the plan's connection
  auto start = router_.on_fetch(request(mailbox), connected(), t0);
  EXPECT_TRUE(only<ArmIdle>(complete(start.id)).empty());
}

TEST_F(FetchRouterTest, APlanDialPromotesAControlConnectionInsteadOfASecondOne) {
  struct Case {
    bool connected;
    bool open;
  };
  for (const auto& c : {Case{false, false}, Case{true, false}, Case{true, true}}) {
    FetchRouter router{FetchRouterConfig{}};
    router.on_fetch(request(mailbox), unconnected(), t0);
    const ConnectionLimits limits{.max_message_bytes = 1000, .max_filters = 3, .nip77 = false};
    if (c.open) router.on_relay_up(mailbox, limits);
    auto out = router.on_plan_dial(mailbox, c.connected);
    SCOPED_TRACE(testing::Message() << "connected " << c.connected << " open " << c.open);
    ASSERT_EQ(out.size(), 1u);
    if (!c.connected) {
      EXPECT_EQ(std::get<Connect>(out[0]).relay, mailbox);
      EXPECT_EQ(router.counts().promotions, 0u);
      continue;
    }
    auto promoted = std::get<Promoted>(out[0]);
    EXPECT_EQ(promoted.relay, mailbox);
    ASSERT_EQ(promoted.open.has_value(), c.open) << "the plan hears of an open one at once";
    if (c.open) {
      EXPECT_EQ(promoted.open->max_message_bytes, 1000u);
      EXPECT_EQ(promoted.open->max_filters, 3u);
      EXPECT_EQ(promoted.open->nip77, false);
    }
    EXPECT_TRUE(router.control().empty());
    EXPECT_EQ(router.counts().promotions, 1u);
    EXPECT_EQ(router.fetches().size(), 1u) << "its fetch runs on";
  }
}

TEST_F(FetchRouterTest, APromotedConnectionDoesNotRetireWhenItsFetchesEnd) {
  auto id = fetch_on_control(mailbox);
  router_.on_plan_dial(mailbox, true);
  EXPECT_TRUE(only<ArmIdle>(complete(id)).empty());
  EXPECT_TRUE(router_.is_open(mailbox));
}

TEST_F(FetchRouterTest, APlanHangUpKeepsAConnectionWithFetchesAsAControlOne) {
  router_.on_relay_up(mailbox, {});
  auto id = router_.on_fetch(request(mailbox), connected(), t0).id;
  EXPECT_TRUE(router_.on_plan_hang_up(mailbox).empty());
  ASSERT_EQ(router_.control().count(mailbox), 1u);
  EXPECT_EQ(router_.control().at(mailbox).role, "discovery");
  EXPECT_TRUE(router_.is_open(mailbox));
  auto idle = only<ArmIdle>(complete(id));
  ASSERT_EQ(idle.size(), 1u) << "once its fetches end it retires like any control connection";
  EXPECT_EQ(only<Retire>(router_.on_idle(mailbox, idle[0].generation, false)).size(), 1u);
}

TEST_F(FetchRouterTest, APlanHangUpWithoutFetchesDisconnectsAndForgetsTheRelay) {
  router_.on_relay_up(mailbox, {});
  auto out = router_.on_plan_hang_up(mailbox);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(std::get<Disconnect>(out[0]).relay, mailbox);
  EXPECT_EQ(std::get<ForgetRelay>(out[1]).relay, mailbox);
  EXPECT_FALSE(router_.is_open(mailbox));
}

TEST_F(FetchRouterTest, ALostConnectionFailsItsFetchesAndEndsItsControlRole) {
  auto first = fetch_on_control(mailbox);
  auto second = router_.on_fetch(request(mailbox), connected(), t0).id;
  auto elsewhere = fetch_on_control(other);
  EXPECT_TRUE(router_.serves_fetches_only(mailbox, false));
  EXPECT_FALSE(router_.serves_fetches_only(mailbox, true)) << "the plan tracks it: its business";
  auto out = router_.on_connection_lost(mailbox, "connection lost");
  auto failed = only<AnswerFetch>(out);
  ASSERT_EQ(failed.size(), 2u);
  EXPECT_EQ(failed[0].fetch_id, first);
  EXPECT_EQ(failed[1].fetch_id, second);
  for (const auto& answer : failed) {
    EXPECT_FALSE(answer.ok);
    EXPECT_EQ(answer.error, "connection lost");
  }
  EXPECT_EQ(router_.counts().failed, 2u);
  EXPECT_TRUE(router_.control().count(mailbox) == 0 && !router_.is_open(mailbox));
  EXPECT_FALSE(router_.serves_fetches_only(mailbox, false));
  EXPECT_EQ(router_.fetches_on(other), 1u) << "other relays' fetches run on";
  EXPECT_EQ(router_.fetches().begin()->first, elsewhere);
}

TEST_F(FetchRouterTest, TimersFollowTheConfiguration) {
  FetchRouter router{FetchRouterConfig{
      .fetch_timeout_seconds = 5, .fetch_max_duration_seconds = 12, .control_idle_seconds = 2}};
  auto start = router.on_fetch(request(mailbox), unconnected(), t0);
  EXPECT_EQ(only<ArmFetchTimeout>(start.commands).at(0).delay_seconds, 5);
  router.on_relay_up(mailbox, {});
  router.on_traffic(mailbox, RelayProgress{.pages = 1});
  EXPECT_EQ(std::get<ArmFetchTimeout>(router.on_timeout(start.id, t0 + 5).at(0)).delay_seconds, 5);
  router.on_traffic(mailbox, RelayProgress{.pages = 1});
  auto ended = router.on_timeout(start.id, t0 + 12);
  EXPECT_EQ(answers(ended).size(), 1u) << "12 s in all";
  EXPECT_EQ(only<ArmIdle>(ended).at(0).delay_seconds, 2);
}

// A hostile relay trickles one page just inside every idle timeout: the requester's budget cuts it
// whatever the progress, and the timers never overshoot it.
TEST_F(FetchRouterTest, ATricklingFetchIsCutAtTheRequestersBudget) {
  auto req = request(mailbox);
  req.budget_seconds = 45;
  auto start = router_.on_fetch(req, unconnected(), t0);
  router_.on_relay_up(mailbox, {});
  EXPECT_EQ(only<ArmFetchTimeout>(start.commands).at(0).delay_seconds, 30);
  router_.on_traffic(mailbox, RelayProgress{.pages = 1});
  auto rearmed = router_.on_timeout(start.id, t0 + 30);
  ASSERT_EQ(rearmed.size(), 1u);
  EXPECT_EQ(std::get<ArmFetchTimeout>(rearmed[0]).delay_seconds, 15) << "up to the budget only";
  router_.on_traffic(mailbox, RelayProgress{.pages = 1});
  auto cut = router_.on_timeout(start.id, t0 + 45);
  ASSERT_EQ(answers(cut).size(), 1u);
  EXPECT_EQ(answers(cut)[0].second.rfind("budget spent:", 0), 0u) << answers(cut)[0].second;
  EXPECT_EQ(only<CloseSubscription>(cut).size(), 1u);
}

TEST_F(FetchRouterTest, ABudgetLongerThanTheLongestDurationChangesNothing) {
  auto req = request(mailbox);
  req.budget_seconds = 1000;
  auto start = router_.on_fetch(req, unconnected(), t0);
  router_.on_relay_up(mailbox, {});
  for (std::int64_t t = t0 + 30; t < t0 + 300; t += 30) {
    router_.on_traffic(mailbox, RelayProgress{.pages = 1});
    ASSERT_EQ(only<ArmFetchTimeout>(router_.on_timeout(start.id, t)).size(), 1u);
  }
  router_.on_traffic(mailbox, RelayProgress{.pages = 1});
  EXPECT_EQ(answers(router_.on_timeout(start.id, t0 + 300)),
            (std::vector<std::pair<bool, std::string>>{{false, "timed out"}}));
}

}  // namespace
}  // namespace graspd::sync
