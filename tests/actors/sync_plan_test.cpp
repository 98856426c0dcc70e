#include "actors/sync/engine/sync_plan.hpp"

#include <gtest/gtest.h>

#include "messages/nostr/json.hpp"

namespace graspd::sync {
namespace {

const RelayUrl relay_a = "wss://a.example";
const RelayUrl relay_b = "wss://b.example";

RepoRef repo(int n) {
  return "30617:" + std::string(64, 'a') + ":repo" + std::to_string(n);
}
EventId root(std::uint8_t n) {
  EventId id{};
  id.fill(n);
  return id;
}

template <class T>
std::vector<T> only(const Commands& commands) {
  std::vector<T> out;
  for (const auto& c : commands)
    if (auto* x = std::get_if<T>(&c)) out.push_back(*x);
  return out;
}

bool has_since(const OpenSubscription& open) {
  for (const auto& f : open.filters)
    if (!f.since) return false;
  return true;
}

bool targets_layer1(const OpenSubscription& open) {
  return open.filters.size() == 1 && open.filters[0].kinds &&
         *open.filters[0].kinds == std::vector<std::uint32_t>{30617} &&
         open.filters[0].tags.empty();
}

class SyncPlanTest : public ::testing::Test {
 protected:
  SyncPlanTest() : plan_(config()) {}
  static SyncConfig config() {
    SyncConfig c;
    c.consolidation_threshold = 70;
    c.own_relays = {"wss://me.example"};
    return c;
  }

  static std::vector<RepoUpdate> repos(std::initializer_list<int> ns, std::set<RelayUrl> relays,
                                       std::set<EventId> roots = {}) {
    std::vector<RepoUpdate> out;
    for (int n : ns) out.push_back(RepoUpdate{repo(n), relays, roots});
    return out;
  }

  /// Connects relay_a with one repo and confirms everything (EOSE on all).
  void connect_and_confirm(std::int64_t now) {
    plan_.on_repositories(repos({1}, {relay_a}, {root(1)}), now);
    auto opened = only<OpenSubscription>(plan_.on_connected(relay_a, 0, 0, now));
    for (const auto& o : opened) plan_.on_eose(relay_a, o.subscription_id, now);
  }

  const RelayState& state(const RelayUrl& r) { return plan_.relays().at(r); }
  std::uint64_t daily_generation(const RelayUrl& r) { return state(r).daily_generation.value(); }

  SyncPlan plan_;
  std::int64_t t0 = 1'000'000;
};

/// The subscriptions a peer holds open, kept from the commands sent to it.
struct PeerView {
  std::map<std::string, nostr::Filters> open;
  std::vector<std::string> fresh;  ///< opened by the last apply()

  void apply(const Commands& commands) {
    fresh.clear();
    for (const auto& c : commands) {
      if (auto* o = std::get_if<OpenSubscription>(&c)) {
        open[o->subscription_id] = o->filters;
        fresh.push_back(o->subscription_id);
      } else if (auto* x = std::get_if<CloseSubscription>(&c)) {
        open.erase(x->subscription_id);
      }
    }
  }
  std::set<std::string> values(char tag) const {
    std::set<std::string> out;
    for (const auto& [id, filters] : open)
      for (const auto& f : filters)
        if (auto it = f.tags.find(tag); it != f.tags.end())
          out.insert(it->second.begin(), it->second.end());
    return out;
  }
};

/// Answers every subscription opened by the last commands with EOSE, then what those answers open,
/// until nothing new opens.
void answer_every_eose(SyncPlan& plan, PeerView& peer, const RelayUrl& relay, std::int64_t now) {
  while (!peer.fresh.empty()) {
    Commands answers;
    for (const auto& id : std::vector<std::string>(peer.fresh)) {
      auto more = plan.on_eose(relay, id, now);
      answers.insert(answers.end(), more.begin(), more.end());
    }
    peer.apply(answers);
  }
}

EventId numbered_root(std::uint32_t n) {
  EventId id{};
  for (int i = 0; i < 4; ++i) id[i] = static_cast<std::uint8_t>(n >> (8 * i));
  id[31] = 0x5a;
  return id;
}

/// Reports repository `n` on relay_a with `count` roots (numbered n * 1000 + i), each added to
/// `every_root` as hex.
Commands report_repository(SyncPlan& plan, int n, std::uint32_t count,
                           std::set<std::string>& every_root, std::int64_t now) {
  std::set<EventId> roots;
  for (std::uint32_t i = 0; i < count; ++i) {
    roots.insert(numbered_root(n * 1000 + i));
    every_root.insert(nostr::to_hex(numbered_root(n * 1000 + i)));
  }
  return plan.on_repositories({RepoUpdate{repo(n), std::set<RelayUrl>{relay_a}, roots}}, now);
}

TEST_F(SyncPlanTest, LiveCoverageStaysWithinThePeersSubscriptionCapWithRoomForHistory) {
  constexpr std::size_t cap = 10;  // the peer's NIP-11 max_subscriptions
  PeerView peer;
  peer.apply(plan_.on_repositories(repos({0}, {relay_a}), t0));
  peer.apply(plan_.on_connected(relay_a, 1 << 20, 20, t0, std::nullopt, cap));
  for (const auto& id : peer.fresh) peer.apply(plan_.on_eose(relay_a, id, t0));
  std::set<std::string> every_root;
  // 40 repositories of 250 roots each, arriving one by one as the self-subscriber reports them;
  // the peer answers every subscription with EOSE at once.
  for (int n = 1; n <= 40; ++n) {
    peer.apply(report_repository(plan_, n, 250, every_root, t0 + n));
    answer_every_eose(plan_, peer, relay_a, t0 + n);
    ASSERT_LE(peer.open.size(), cap - 2) << "repository " << n << ": two slots stay free";
  }
  EXPECT_EQ(peer.values('e'), every_root) << "every root is still covered";
  EXPECT_EQ(peer.values('E'), every_root);
  EXPECT_GT(state(relay_a).refs_per_filter, 100u) << "the filters were widened to fit";
}

TEST_F(SyncPlanTest, LiveCoverageStaysWithinThePeersValueBudgetWithRoomForHistory) {
  // A graspd peer advertising limitation.max_subscription_values 10,000: live coverage keeps 2,000
  // values (the reserve: a tenth, at least 2,000) free for history fetches. 20 repositories of 250
  // roots need ~15,000 (#e, #E, #q per root).
  constexpr std::size_t advertised = 10'000;
  PeerView peer;
  auto all_values = [&] {
    std::size_t n = 0;
    for (const auto& [id, filters] : peer.open) n += nostr::value_count(filters);
    return n;
  };
  auto answer_all = [&](std::int64_t now) { answer_every_eose(plan_, peer, relay_a, now); };
  peer.apply(plan_.on_repositories(repos({0}, {relay_a}), t0));
  peer.apply(plan_.on_connected(relay_a, 1 << 20, 20, t0, std::nullopt, 50, advertised));
  answer_all(t0);
  std::set<std::string> every_root;
  for (int n = 1; n <= 20; ++n) {
    peer.apply(report_repository(plan_, n, 250, every_root, t0 + n));
    answer_all(t0 + n);
    ASSERT_LE(all_values(), advertised - 2'000) << "repository " << n;
  }
  EXPECT_GT(all_values(), advertised - 2'000 - 400) << "the budget is used, not wasted";
  auto covered = peer.values('e');
  EXPECT_EQ(peer.values('E'), covered);
  EXPECT_LT(covered.size(), every_root.size());
  const auto& refused = state(relay_a).refused;
  EXPECT_EQ(refused.roots.size(), every_root.size() - covered.size())
      << "the rest waits for a fresh sync";
  EXPECT_EQ(refused.repos.size(), 21u - peer.values('a').size());
  EXPECT_EQ(plan_.totals().over_value_budget, refused.roots.size() + refused.repos.size());
  // Nothing is asked again until then: another report of the same repositories opens nothing.
  peer.apply(plan_.on_repositories(repos({0}, {relay_a}), t0 + 100));
  EXPECT_TRUE(peer.fresh.empty());

  // The daily fresh sync asks for everything at once: repositories come before any root.
  peer.apply(plan_.on_daily_tick(relay_a, daily_generation(relay_a), t0 + 100));
  answer_all(t0 + 100);
  EXPECT_LE(all_values(), advertised - 2'000);
  EXPECT_EQ(peer.values('a').size(), 21u);

  // Without an advertised budget nothing is held back.
  RelayState plain;
  EXPECT_FALSE(plan_.value_budget(plain));
  plain.max_subscription_values = 1'000;
  EXPECT_EQ(plan_.value_budget(plain), 500u) << "the reserve is never more than half";
  plain.max_subscription_values = 100'000;
  EXPECT_EQ(plan_.value_budget(plain), 90'000u) << "a tenth";
}

TEST_F(SyncPlanTest, SmallBatchesAreRepackedRatherThanPiledUpPastTheCap) {
  // Each batch of 30 roots fits one REQ at the configured width, so widening alone would not
  // help: the batches' REQs are merged by consolidation instead.
  constexpr std::size_t cap = 5;
  PeerView peer;
  peer.apply(plan_.on_repositories(repos({0}, {relay_a}), t0));
  peer.apply(plan_.on_connected(relay_a, 1 << 20, 10, t0, std::nullopt, cap));
  for (const auto& id : peer.fresh) peer.apply(plan_.on_eose(relay_a, id, t0));
  std::set<std::string> every_root;
  for (int n = 1; n <= 20; ++n) {
    peer.apply(report_repository(plan_, n, 30, every_root, t0 + n));
    answer_every_eose(plan_, peer, relay_a, t0 + n);
    ASSERT_LE(peer.open.size(), cap - 2) << "repository " << n;
  }
  EXPECT_EQ(peer.values('e'), every_root);
}

TEST_F(SyncPlanTest, APeerWithoutALimitationIsGivenStrfrysDefaultCap) {
  SyncConfig c = config();
  EXPECT_EQ(plan_.subscription_budget(RelayState{}),
            c.default_max_subscriptions - c.reserved_subscriptions);
  RelayState capped;
  capped.max_subscriptions = 50;
  EXPECT_EQ(plan_.subscription_budget(capped), 48u);
  capped.max_subscriptions = 1;
  EXPECT_EQ(plan_.subscription_budget(capped), 1u) << "never zero: one REQ is always tried";
}

TEST_F(SyncPlanTest, DeriveRelayTargetsInvertsRepoIndex) {
  RepoSyncIndex index;
  for (const auto& u : repos({1, 2}, {relay_a, relay_b}, {root(7)}))
    index[u.repo] = RepoSyncNeeds{*u.relays, u.roots};
  auto targets = derive_relay_targets(index);
  ASSERT_EQ(targets.size(), 2u);
  EXPECT_EQ(targets[relay_a].repos.size(), 2u);
  EXPECT_EQ(targets[relay_b].roots, std::set<EventId>{root(7)});
}

TEST_F(SyncPlanTest, InitialConnectIsAFullHistorySync) {
  auto dial = only<Dial>(plan_.on_repositories(repos({1}, {relay_a}, {root(1)}), t0));
  ASSERT_EQ(dial.size(), 1u);
  EXPECT_EQ(dial[0].relay, relay_a);
  EXPECT_EQ(state(relay_a).status, ConnectionStatus::connecting);

  auto commands = plan_.on_connected(relay_a, 0, 0, t0);
  auto opened = only<OpenSubscription>(commands);
  ASSERT_GE(opened.size(), 2u);
  EXPECT_TRUE(targets_layer1(opened[0]));
  for (const auto& o : opened)
    for (const auto& f : o.filters) EXPECT_FALSE(f.since) << "fresh sync has no since";
  EXPECT_EQ(only<ArmDaily>(commands).size(), 1u);
  ASSERT_EQ(state(relay_a).pending.size(), 1u);
  EXPECT_TRUE(state(relay_a).confirmed.empty());

  for (const auto& o : opened) plan_.on_eose(relay_a, o.subscription_id, t0 + 5);
  EXPECT_TRUE(state(relay_a).pending.empty());
  EXPECT_EQ(state(relay_a).confirmed.repos, std::set<RepoRef>{repo(1)});
  EXPECT_EQ(state(relay_a).confirmed.roots, std::set<EventId>{root(1)});
}

TEST_F(SyncPlanTest, ItemFiltersCoverAllTagVariantsAndState) {
  SyncItems items;
  items.repos = {repo(1)};
  items.roots = {root(3)};
  auto filters = item_filters(items, std::nullopt, 100);
  std::set<char> letters;
  bool state_filter = false;
  for (const auto& f : filters) {
    for (const auto& [letter, values] : f.tags) letters.insert(letter);
    if (f.kinds && *f.kinds == std::vector<std::uint32_t>{30618}) {
      state_filter = true;
      EXPECT_EQ(f.tags.at('d'), std::vector<std::string>{"repo1"});
    }
  }
  EXPECT_EQ(letters, (std::set<char>{'a', 'A', 'q', 'd', 'e', 'E'}));
  EXPECT_TRUE(state_filter);
}

TEST_F(SyncPlanTest, HundredReferencesPerFilter) {
  SyncItems items;
  for (int i = 0; i < 250; ++i) items.repos.insert(repo(i));
  auto filters = item_filters(items, std::nullopt, 100);
  EXPECT_EQ(filters.size(), 3u * 4u);  // 3 chunks x (a, A, q, 30618 #d)
  for (const auto& f : filters)
    for (const auto& [letter, values] : f.tags) EXPECT_LE(values.size(), 100u);
}

TEST_F(SyncPlanTest, OnlyDeltasAreSubscribed) {
  connect_and_confirm(t0);
  // The same repositories again: nothing new to ask.
  auto again = plan_.on_repositories(repos({1}, {relay_a}, {root(1)}), t0 + 10);
  EXPECT_TRUE(only<OpenSubscription>(again).empty());
  // One new root: only it is requested.
  auto more =
      only<OpenSubscription>(plan_.on_repositories(repos({1}, {relay_a}, {root(2)}), t0 + 20));
  ASSERT_EQ(more.size(), 1u);
  for (const auto& f : more[0].filters) {
    for (const auto& [letter, values] : f.tags) {
      EXPECT_TRUE(letter == 'e' || letter == 'E' || letter == 'q');
      EXPECT_EQ(values, std::vector<std::string>{nostr::to_hex(root(2))});
    }
  }
}

TEST_F(SyncPlanTest, QuickReconnectCatchesUpFromLastConnected) {
  connect_and_confirm(t0);
  plan_.on_disconnected(relay_a, "reset", t0 + 100);
  EXPECT_TRUE(state(relay_a).subscriptions.empty());
  EXPECT_TRUE(state(relay_a).pending.empty());
  auto opened = only<OpenSubscription>(plan_.on_connected(relay_a, 0, 0, t0 + 200));
  ASSERT_FALSE(opened.empty());
  for (const auto& o : opened) {
    ASSERT_TRUE(has_since(o));
    EXPECT_EQ(*o.filters[0].since, t0 + 100 - 900) << "since = last connected - window";
  }
  // Confirmed items were kept: the catch-up does not create pending batches.
  EXPECT_TRUE(state(relay_a).pending.empty());
  EXPECT_EQ(state(relay_a).confirmed.repos.size(), 1u);
  // No duplicate live subscriptions: exactly layer 1 + the catch-up set.
  EXPECT_EQ(state(relay_a).subscriptions.size(), opened.size());
}

TEST_F(SyncPlanTest, StaleReconnectIsAFreshSync) {
  connect_and_confirm(t0);
  plan_.on_disconnected(relay_a, "reset", t0 + 100);
  auto opened = only<OpenSubscription>(plan_.on_connected(relay_a, 0, 0, t0 + 100 + 901));
  for (const auto& o : opened) EXPECT_FALSE(has_since(o));
  EXPECT_TRUE(state(relay_a).confirmed.empty());
  EXPECT_EQ(state(relay_a).pending.size(), 1u);
}

TEST_F(SyncPlanTest, FirstDialFailureIsRetriedWithExponentialBackoff) {
  plan_.on_repositories(repos({1}, {relay_a}), t0);
  std::vector<std::int64_t> delays;
  std::int64_t now = t0;
  for (int i = 0; i < 5; ++i) {
    auto retry = only<ArmRetry>(plan_.on_connect_failed(relay_a, "refused", now));
    ASSERT_EQ(retry.size(), 1u);
    delays.push_back(retry[0].delay_seconds);
    now += retry[0].delay_seconds;
    auto dial = only<Dial>(plan_.on_retry_timer(relay_a, now));
    ASSERT_EQ(dial.size(), 1u) << "every state has an exit";
  }
  EXPECT_EQ(delays, (std::vector<std::int64_t>{5, 10, 20, 40, 80}));
  EXPECT_EQ(plan_.health_of(state(relay_a), now), Health::degraded);
}

TEST_F(SyncPlanTest, DeadRelayIsRetriedDaily) {
  plan_.on_repositories(repos({1}, {relay_a}), t0);
  plan_.on_connect_failed(relay_a, "refused", t0);
  plan_.on_retry_timer(relay_a, t0 + 86400);
  auto retry = only<ArmRetry>(plan_.on_connect_failed(relay_a, "refused", t0 + 86400));
  ASSERT_EQ(retry.size(), 1u);
  EXPECT_EQ(plan_.health_of(state(relay_a), t0 + 86400), Health::dead);
  EXPECT_EQ(retry[0].delay_seconds, 86400);
}

TEST_F(SyncPlanTest, ConsolidationWaitsForPendingBatchesThenShrinksFilters) {
  connect_and_confirm(t0);
  // Many single-root deltas fragment the subscriptions (3 filters each).
  std::vector<OpenSubscription> in_flight;
  for (std::uint8_t i = 10; i < 32; ++i) {
    auto opened =
        only<OpenSubscription>(plan_.on_repositories(repos({1}, {relay_a}, {root(i)}), t0));
    for (auto& o : opened) in_flight.push_back(o);
  }
  const auto& s = state(relay_a);
  EXPECT_LE(s.open_filter_count(), 70u + 3u);
  // The next delta crosses the threshold while batches are pending: wait.
  auto blocked = plan_.on_repositories(repos({1}, {relay_a}, {root(40)}), t0 + 1);
  EXPECT_TRUE(s.consolidation_wanted);
  EXPECT_TRUE(only<CloseSubscription>(blocked).empty());
  Commands after;
  for (const auto& o : in_flight) {
    auto c = plan_.on_eose(relay_a, o.subscription_id, t0 + 2);
    after.insert(after.end(), c.begin(), c.end());
  }
  EXPECT_FALSE(s.consolidation_wanted);
  EXPECT_EQ(s.consolidations, 1u);
  EXPECT_FALSE(only<CloseSubscription>(after).empty());
  EXPECT_LE(s.open_filter_count(), 70u);
  // Deltas held back while consolidation waited (root 40 and any root that
  // arrived after the threshold) got one full-history batch afterwards.
  ASSERT_EQ(s.pending.size(), 1u);
  EXPECT_EQ(s.pending[0].items.roots.count(root(40)), 1u);
  for (std::uint8_t i = 10; i < 32; ++i)
    EXPECT_TRUE(s.confirmed.roots.count(root(i)) + s.pending[0].items.roots.count(root(i)) == 1)
        << int(i);
  // Consolidated subscriptions carry since = now - window.
  for (const auto& [id, sub] : s.subscriptions) {
    if (sub.layer != Layer::catch_up) continue;
    for (const auto& f : sub.filters) EXPECT_EQ(f.since.value_or(0), t0 + 2 - 900);
  }
}

TEST_F(SyncPlanTest, DailyTickIsAFreshSync) {
  connect_and_confirm(t0);
  auto commands = plan_.on_daily_tick(relay_a, daily_generation(relay_a), t0 + 86400);
  EXPECT_FALSE(only<CloseSubscription>(commands).empty());
  EXPECT_EQ(only<ArmDaily>(commands).size(), 1u);
  auto opened = only<OpenSubscription>(commands);
  ASSERT_FALSE(opened.empty());
  for (const auto& o : opened) EXPECT_FALSE(has_since(o));
  EXPECT_TRUE(state(relay_a).confirmed.empty());
  EXPECT_EQ(state(relay_a).pending.size(), 1u);
}

TEST_F(SyncPlanTest, EmptyRelaysAreDisconnectedButNotBootstrapOrFirstSync) {
  plan_.add_bootstrap_relay(relay_b, t0);
  plan_.on_connected(relay_b, 0, 0, t0);
  plan_.on_repositories(repos({1}, {relay_a}), t0);
  plan_.on_connected(relay_a, 0, 0, t0);
  // relay_a is in its first historic sync (pending, nothing confirmed) and
  // relay_b is the bootstrap relay: neither is "empty".
  EXPECT_TRUE(only<HangUp>(plan_.on_disconnect_check(t0 + 60)).empty());
  // The announcement moves away from relay_a: once its confirmed state is
  // cleared by the next fresh sync, it is disconnected and forgotten.
  for (const auto& [id, sub] : state(relay_a).subscriptions) plan_.on_eose(relay_a, id, t0 + 61);
  plan_.on_repositories({RepoUpdate{repo(1), std::set<RelayUrl>{relay_b}, {}}}, t0 + 62);
  EXPECT_TRUE(only<HangUp>(plan_.on_disconnect_check(t0 + 120)).empty()) << "confirmed state";
  plan_.on_daily_tick(relay_a, daily_generation(relay_a), t0 + 86400);
  auto hang_up = only<HangUp>(plan_.on_disconnect_check(t0 + 86460));
  ASSERT_EQ(hang_up.size(), 1u);
  EXPECT_EQ(hang_up[0].relay, relay_a);
  EXPECT_EQ(plan_.relays().count(relay_a), 0u);
  EXPECT_EQ(plan_.relays().count(relay_b), 1u);
  EXPECT_TRUE(state(relay_b).is_bootstrap);
}

TEST_F(SyncPlanTest, BootstrapRelayIsAlwaysRetried) {
  auto dial = only<Dial>(plan_.add_bootstrap_relay(relay_b, t0));
  ASSERT_EQ(dial.size(), 1u);
  auto retry = only<ArmRetry>(plan_.on_connect_failed(relay_b, "refused", t0));
  ASSERT_EQ(retry.size(), 1u);
  EXPECT_EQ(only<Dial>(plan_.on_retry_timer(relay_b, t0 + retry[0].delay_seconds)).size(), 1u);
  plan_.on_connected(relay_b, 0, 0, t0 + 10);
  auto again = only<ArmRetry>(plan_.on_disconnected(relay_b, "reset", t0 + 20));
  EXPECT_EQ(again.size(), 1u);
}

/// The one filter `{}` (every event), with or without `since`.
bool asks_for_everything(const OpenSubscription& open) {
  if (open.filters.size() != 1) return false;
  const auto& f = open.filters[0];
  return !f.kinds && !f.ids && !f.authors && f.tags.empty() && !f.since && !f.until && !f.limit;
}

TEST_F(SyncPlanTest, APeerIsAskedForEverythingAtEveryConnectionByNegentropy) {
  // An announcement listing the peer adds nothing to what it is asked for.
  plan_.on_repositories(repos({1, 2}, {relay_b}, {root(1)}), t0);
  plan_.add_peer_relay(relay_b, t0);
  EXPECT_TRUE(state(relay_b).is_peer);
  auto opened = only<OpenSubscription>(plan_.on_connected(relay_b, 0, 0, t0 + 1));
  ASSERT_EQ(opened.size(), 1u) << "no announcement layer, no per-repository filters";
  EXPECT_TRUE(asks_for_everything(opened[0]));
  EXPECT_TRUE(opened[0].negentropy);
  plan_.on_eose(relay_b, opened[0].subscription_id, t0 + 2);
  EXPECT_TRUE(state(relay_b).confirmed.everything);
  // New repositories are covered already: nothing more is asked.
  EXPECT_TRUE(only<OpenSubscription>(plan_.on_repositories(repos({3}, {relay_b}), t0 + 3)).empty());
  // A quick reconnect reconciles everything again, without `since`: an event the peer accepted
  // while we were away may carry any created_at.
  plan_.on_disconnected(relay_b, "reset", t0 + 10);
  auto again = only<OpenSubscription>(plan_.on_connected(relay_b, 0, 0, t0 + 12));
  ASSERT_EQ(again.size(), 1u);
  EXPECT_TRUE(asks_for_everything(again[0]));
}

TEST_F(SyncPlanTest, APeerIsRetriedEveryBaseBackoffAndNeverDroppedOrEvicted) {
  SyncConfig small = config();
  small.max_relays = 1;
  small.base_backoff_seconds = 5;
  SyncPlan plan(small);
  ASSERT_EQ(only<Dial>(plan.add_peer_relay(relay_b, t0)).size(), 1u);
  for (int failure = 0; failure < 8; ++failure) {
    auto retry = only<ArmRetry>(plan.on_connect_failed(relay_b, "refused", t0 + failure * 5));
    ASSERT_EQ(retry.size(), 1u);
    EXPECT_EQ(retry[0].delay_seconds, 5) << "failure " << failure;
    ASSERT_EQ(only<Dial>(plan.on_retry_timer(relay_b, t0 + failure * 5 + 5)).size(), 1u);
  }
  // Nothing lists the peer and it confirmed nothing: still not idle.
  EXPECT_TRUE(only<HangUp>(plan.on_disconnect_check(t0 + 100)).empty());
  plan.on_repositories({RepoUpdate{repo(1), std::set<RelayUrl>{relay_a}, {}}}, t0 + 101);
  EXPECT_EQ(plan.relays().count(relay_b), 1u);
  EXPECT_EQ(plan.totals().evictions, 0u);
}

TEST_F(SyncPlanTest, EverythingCoversAndIsCoveredAsOneItem) {
  const auto everything = SyncItems::all();
  SyncItems some;
  some.repos.insert(repo(1));
  EXPECT_FALSE(everything.empty());
  EXPECT_EQ(everything.size(), 1u);
  EXPECT_TRUE(everything.minus(everything, SyncItems{}).empty());
  EXPECT_TRUE(everything.minus(SyncItems{}, some).everything);
  some.merge(everything);
  EXPECT_TRUE(some.everything);
  auto filters = item_filters(some, 42, 100);
  ASSERT_EQ(filters.size(), 1u);
  EXPECT_EQ(filters[0].since, 42);
  EXPECT_FALSE(filters[0].kinds);
  EXPECT_TRUE(filters[0].tags.empty());
}

TEST_F(SyncPlanTest, TrackedRelaysAreBounded) {
  SyncConfig small = config();
  small.max_relays = 2;
  SyncPlan plan(small);
  std::set<RelayUrl> many;
  for (int i = 0; i < 50; ++i) many.insert("wss://r" + std::to_string(i) + ".example");
  auto dials = only<Dial>(plan.on_repositories(repos({1}, many), t0));
  EXPECT_EQ(dials.size(), 2u);
  EXPECT_EQ(plan.relays().size(), 2u);
  EXPECT_EQ(plan.untracked_targets(), 48u);
  // When the announcement moves to another relay, the relays nobody lists
  // any more give up their slot to it at once.
  auto moved =
      plan.on_repositories({RepoUpdate{repo(1), std::set<RelayUrl>{"wss://r7.example"}, {}}}, t0);
  auto after = only<Dial>(moved);
  ASSERT_EQ(after.size(), 1u);
  EXPECT_EQ(after[0].relay, "wss://r7.example");
  EXPECT_EQ(plan.relays().size(), 2u);
}

RepoRef repo_of(const std::string& author_hex_char, int n) {
  return "30617:" + std::string(64, author_hex_char[0]) + ":repo" + std::to_string(n);
}

std::set<RelayUrl> numbered_relays(const std::string& host, int count) {
  std::set<RelayUrl> out;
  for (int i = 0; i < count; ++i) out.insert("wss://" + host + std::to_string(i) + ".example");
  return out;
}

TEST_F(SyncPlanTest, OneHugeRelayListCannotKeepAnotherRepositoryOut) {
  SyncConfig small = config();
  small.max_relays = 10;
  SyncPlan plan(small);
  // A hostile announcement fills every slot first ...
  plan.on_repositories({RepoUpdate{repo_of("b", 1), numbered_relays("spam", 1000), {}}}, t0);
  ASSERT_EQ(plan.relays().size(), 10u);
  // ... then a legitimate repository of another author arrives: its relays
  // rank before the spammer's 10th, so they take slots at once.
  auto commands = plan.on_repositories(
      {RepoUpdate{
          repo_of("c", 1), std::set<RelayUrl>{"wss://good.example", "wss://good2.example"}, {}}},
      t0 + 1);
  EXPECT_EQ(plan.relays().size(), 10u);
  EXPECT_EQ(plan.relays().count("wss://good.example"), 1u);
  EXPECT_EQ(plan.relays().count("wss://good2.example"), 1u);
  EXPECT_EQ(only<Dial>(commands).size(), 2u);
  EXPECT_EQ(plan.totals().evictions, 2u);
  // Evicted relays that were being dialled are hung up.
  EXPECT_EQ(only<HangUp>(commands).size(), 2u);
}

TEST_F(SyncPlanTest, ManyAnnouncementsOfOneAuthorRankAfterOtherAuthorsFirstRelays) {
  std::vector<RepoUpdate> spam;
  for (int n = 0; n < 50; ++n)
    spam.push_back(
        RepoUpdate{repo_of("b", n), numbered_relays("s" + std::to_string(n) + "-", 3), {}});
  spam.push_back(RepoUpdate{repo_of("c", 1), std::set<RelayUrl>{"wss://good.example"}, {}});
  RepoSyncIndex index;
  for (const auto& u : spam) index[u.repo] = RepoSyncNeeds{*u.relays, {}};
  auto ranks = rank_relays(index);
  std::size_t before_good = 0;
  for (const auto& [relay, rank] : ranks) before_good += rank < ranks.at("wss://good.example");
  EXPECT_EQ(before_good, 0u) << "one author's first relay ranks with every other author's first";
  EXPECT_EQ(ranks.at("wss://good.example").position, 0u);
}

TEST_F(SyncPlanTest, EqualRanksDoNotChurnTrackedRelays) {
  SyncConfig small = config();
  small.max_relays = 1;
  SyncPlan plan(small);
  plan.on_repositories({RepoUpdate{repo_of("b", 1), std::set<RelayUrl>{relay_a}, {}}}, t0);
  auto commands =
      plan.on_repositories({RepoUpdate{repo_of("c", 1), std::set<RelayUrl>{relay_b}, {}}}, t0);
  EXPECT_TRUE(only<HangUp>(commands).empty());
  EXPECT_EQ(plan.relays().count(relay_a), 1u);
  EXPECT_EQ(plan.untracked_targets(), 1u);
}

TEST_F(SyncPlanTest, BootstrapRelayIsNeverEvicted) {
  SyncConfig small = config();
  small.max_relays = 1;
  SyncPlan plan(small);
  plan.add_bootstrap_relay(relay_b, t0);
  plan.on_repositories({RepoUpdate{repo_of("c", 1), std::set<RelayUrl>{relay_a}, {}}}, t0);
  EXPECT_EQ(plan.relays().count(relay_b), 1u);
  EXPECT_EQ(plan.totals().evictions, 0u);
}

TEST_F(SyncPlanTest, StaleDailyTickIsIgnored) {
  connect_and_confirm(t0);
  auto first = daily_generation(relay_a);
  EXPECT_TRUE(plan_.on_daily_tick(relay_a, first + 1, t0 + 86400).empty());
  EXPECT_EQ(plan_.totals().daily_syncs, 0u);
  EXPECT_FALSE(plan_.on_daily_tick(relay_a, first, t0 + 86400).empty());
  EXPECT_EQ(plan_.totals().daily_syncs, 1u);
  EXPECT_TRUE(plan_.on_daily_tick("wss://unknown.example", first, t0).empty());
}

TEST_F(SyncPlanTest, ARelayTrackedAgainGetsANewDailyGeneration) {
  SyncConfig small = config();
  small.max_relays = 1;
  SyncPlan plan(small);
  auto moved_to = [&](const RelayUrl& relay, std::int64_t now) {
    plan.on_repositories({RepoUpdate{repo(1), std::set<RelayUrl>{relay}, {}}}, now);
  };
  moved_to(relay_a, t0);
  plan.on_connected(relay_a, 0, 0, t0);
  auto first = plan.relays().at(relay_a).daily_generation.value();
  moved_to(relay_b, t0 + 1);  // relay_a loses its slot
  ASSERT_EQ(plan.relays().count(relay_a), 0u);
  moved_to(relay_a, t0 + 2);
  plan.on_connected(relay_a, 0, 0, t0 + 3);
  EXPECT_NE(plan.relays().at(relay_a).daily_generation.value(), first);
  EXPECT_TRUE(plan.on_daily_tick(relay_a, first, t0 + 86400).empty());
}

TEST_F(SyncPlanTest, OwnRelayIsNeverDialled) {
  auto dial = only<Dial>(plan_.on_repositories(repos({1}, {"wss://me.example", relay_a}), t0));
  ASSERT_EQ(dial.size(), 1u);
  EXPECT_EQ(dial[0].relay, relay_a);
  EXPECT_EQ(plan_.relays().count("wss://me.example"), 0u);
}

TEST_F(SyncPlanTest, RateLimitedSubscriptionIsResentAfterCooldown) {
  plan_.on_repositories(repos({1}, {relay_a}, {root(1)}), t0);
  auto opened = only<OpenSubscription>(plan_.on_connected(relay_a, 0, 0, t0));
  const auto& victim = opened.back();
  auto closed = plan_.on_closed(relay_a, victim.subscription_id, true, t0 + 1);
  auto retry = only<ArmRetry>(closed);
  ASSERT_EQ(retry.size(), 1u);
  EXPECT_EQ(retry[0].delay_seconds, 65);
  // Nothing new is sent during the cooldown.
  EXPECT_TRUE(only<OpenSubscription>(plan_.on_repositories(repos({2}, {relay_a}), t0 + 2)).empty());
  auto resent = only<OpenSubscription>(plan_.on_retry_timer(relay_a, t0 + 66));
  ASSERT_GE(resent.size(), 2u);  // the deferred one plus repo 2
  EXPECT_EQ(resent[0].filters, victim.filters);
  // The batch now waits on the new subscription id, and confirms with it.
  for (const auto& o : opened)
    if (o.subscription_id != victim.subscription_id)
      plan_.on_eose(relay_a, o.subscription_id, t0 + 70);
  for (const auto& o : resent) plan_.on_eose(relay_a, o.subscription_id, t0 + 70);
  EXPECT_TRUE(state(relay_a).pending.empty());
  EXPECT_EQ(state(relay_a).confirmed.repos.size(), 2u);
}

TEST_F(SyncPlanTest, RefusedSubscriptionIsNotRetriedInALoop) {
  plan_.on_repositories(repos({1}, {relay_a}), t0);
  auto opened = only<OpenSubscription>(plan_.on_connected(relay_a, 0, 0, t0));
  auto commands = plan_.on_closed(relay_a, opened.back().subscription_id, false, t0 + 1);
  EXPECT_TRUE(state(relay_a).pending.empty());
  EXPECT_TRUE(only<OpenSubscription>(plan_.on_disconnect_check(t0 + 60)).empty());
  // The next fresh sync asks again.
  EXPECT_FALSE(
      only<OpenSubscription>(plan_.on_daily_tick(relay_a, daily_generation(relay_a), t0 + 86400))
          .empty());
}

TEST_F(SyncPlanTest, RestartResumesWithCatchUpFromSnapshot) {
  connect_and_confirm(t0);
  auto snapshot = plan_.snapshot_json(t0 + 50);
  SyncPlan restarted(config());
  ASSERT_TRUE(restarted.restore_json(snapshot));
  ASSERT_EQ(restarted.relays().at(relay_a).confirmed.repos.size(), 1u);
  auto dial = only<Dial>(restarted.on_repositories(repos({1}, {relay_a}, {root(1)}), t0 + 60));
  ASSERT_EQ(dial.size(), 1u);
  auto opened = only<OpenSubscription>(restarted.on_connected(relay_a, 0, 0, t0 + 61));
  for (const auto& o : opened) {
    ASSERT_TRUE(has_since(o)) << "nothing is fetched from the beginning again";
    EXPECT_EQ(*o.filters[0].since, t0 + 50 - 900);
  }
  EXPECT_TRUE(restarted.relays().at(relay_a).pending.empty());
  EXPECT_FALSE(restarted.restore_json("{not json"));
}

TEST_F(SyncPlanTest, ReqFramesFitThePeerLimit) {
  SyncItems items;
  for (int i = 0; i < 1000; ++i) items.repos.insert(repo(i));
  auto filters = item_filters(items, std::nullopt, 100);
  for (std::size_t limit : {16384u, 65536u}) {
    std::size_t total = 0;
    for (const auto& group : pack_filters(filters, limit, 1000)) {
      std::string frame = R"(["REQ","gs123456",)";
      for (const auto& f : group) frame += nostr::serialize_filter(f) + ",";
      frame.back() = ']';
      EXPECT_LE(frame.size(), limit);
      total += group.size();
    }
    EXPECT_EQ(total, filters.size());
  }
  for (const auto& group : pack_filters(filters, 1u << 20, 7)) EXPECT_LE(group.size(), 7u);
}

// -- levels: StateOnly while the announcement is held, Full once promoted ------------------

/// A finding that sets `repo`'s level (and, when given, its relays).
std::vector<RepoUpdate> at_level(const RepoRef& r, SyncLevel level,
                                 std::optional<std::set<RelayUrl>> relays = std::nullopt,
                                 std::set<EventId> roots = {}) {
  return {RepoUpdate{r, std::move(relays), std::move(roots), false, level}};
}

/// The filters of the item subscriptions (not layer 1) among `commands`.
nostr::Filters item_filters_of(const Commands& commands) {
  nostr::Filters out;
  for (const auto& open : only<OpenSubscription>(commands))
    if (!targets_layer1(open)) out.insert(out.end(), open.filters.begin(), open.filters.end());
  return out;
}

bool is_state_filter(const nostr::Filter& f, const std::vector<std::string>& identifiers) {
  return f.kinds == std::vector<std::uint32_t>{30618} && !f.authors && !f.ids &&
         f.tags.size() == 1 && f.tags.count('d') && f.tags.at('d') == identifiers;
}

TEST_F(SyncPlanTest, AHeldRepositoryIsAskedOnlyForItsStatesUntilPromotedToFull) {
  plan_.on_repositories(at_level(repo(1), SyncLevel::state_only, {{relay_a}}, {root(1)}), t0);
  EXPECT_EQ(plan_.repositories_at(SyncLevel::state_only), 1u);
  auto connected = plan_.on_connected(relay_a, 0, 0, t0);
  auto filters = item_filters_of(connected);
  ASSERT_EQ(filters.size(), 1u) << "no a/A/q, no root threads";
  EXPECT_TRUE(is_state_filter(filters[0], {"repo1"})) << nostr::serialize_filter(filters[0]);
  for (const auto& o : only<OpenSubscription>(connected))
    plan_.on_eose(relay_a, o.subscription_id, t0);
  EXPECT_EQ(state(relay_a).confirmed.states, std::set<RepoRef>{repo(1)});
  EXPECT_TRUE(state(relay_a).confirmed.repos.empty());

  // Promotion: its relays stay, the level changes.
  auto promoted =
      item_filters_of(plan_.on_repositories(at_level(repo(1), SyncLevel::full), t0 + 1));
  std::set<char> letters;
  for (const auto& f : promoted)
    for (const auto& [letter, values] : f.tags) letters.insert(letter);
  EXPECT_EQ(letters, (std::set<char>{'a', 'A', 'q', 'd', 'e', 'E'}))
      << "Full: references, states, roots";
  EXPECT_EQ(plan_.repositories_at(SyncLevel::full), 1u);
  EXPECT_TRUE(state(relay_a).confirmed.states.empty()) << "StateOnly coverage is not caught up";
}

TEST_F(SyncPlanTest, AnExpiredHeldRepositoryIsDroppedAndARelayLeftIdleHungUp) {
  plan_.on_repositories(repos({1}, {relay_a}), t0);
  plan_.on_repositories(at_level(repo(2), SyncLevel::state_only, {{relay_a, relay_b}}), t0);
  for (const auto& relay : {relay_a, relay_b})
    for (const auto& o : only<OpenSubscription>(plan_.on_connected(relay, 0, 0, t0)))
      plan_.on_eose(relay, o.subscription_id, t0);
  ASSERT_EQ(state(relay_b).confirmed.states, std::set<RepoRef>{repo(2)});

  plan_.on_repositories({RepoUpdate{repo(2), std::nullopt, {}, true}}, t0 + 1);
  EXPECT_EQ(plan_.repositories().count(repo(2)), 0u);
  EXPECT_TRUE(state(relay_a).confirmed.states.empty());
  auto checked = plan_.on_disconnect_check(t0 + 60);
  auto hung_up = only<HangUp>(checked);
  ASSERT_EQ(hung_up.size(), 1u);
  EXPECT_EQ(hung_up[0].relay, relay_b) << "relay_a still syncs repo1";
  EXPECT_EQ(plan_.relays().count(relay_b), 0u);
}

TEST_F(SyncPlanTest, StateOnlyCoverageSurvivesARestartAsACatchUp) {
  plan_.on_repositories(at_level(repo(1), SyncLevel::state_only, {{relay_a}}), t0);
  for (const auto& o : only<OpenSubscription>(plan_.on_connected(relay_a, 0, 0, t0)))
    plan_.on_eose(relay_a, o.subscription_id, t0);
  SyncPlan restarted(config());
  ASSERT_TRUE(restarted.restore_json(plan_.snapshot_json(t0 + 10)));
  EXPECT_EQ(restarted.relays().at(relay_a).confirmed.states, std::set<RepoRef>{repo(1)});
  restarted.on_repositories(at_level(repo(1), SyncLevel::state_only, {{relay_a}}), t0 + 20);
  auto filters = item_filters_of(restarted.on_connected(relay_a, 0, 0, t0 + 30));
  ASSERT_EQ(filters.size(), 1u);
  EXPECT_TRUE(filters[0].since) << "a catch-up, not a fresh download";
}

}  // namespace
}  // namespace graspd::sync
