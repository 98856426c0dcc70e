// GRASP-03 history-only probes (sync::HistoryPlan): admission of one relay per pass, the 32-worker
// ceiling, cursor advance on failure, the cadences and the cursor kept modulo on changes.
#include "actors/plus/engine/history_plan.hpp"

#include <gtest/gtest.h>

namespace graspd::sync {
namespace {

EventId root(int n) {
  EventId id{};
  id[0] = static_cast<std::uint8_t>(n >> 8);
  id[1] = static_cast<std::uint8_t>(n & 0xff);
  return id;
}

/// `n` roots: with refs_per_filter 1 and one filter per group, one group per e/E/q filter.
SyncItems roots(int n, int first = 0) {
  SyncItems items;
  for (int i = first; i < first + n; ++i) items.roots.insert(root(i));
  return items;
}

HistoryConfig small_groups() {
  HistoryConfig config;
  config.refs_per_filter = 1;
  config.max_filters = 1;
  return config;
}

std::string relay(int n) {
  return "wss://r" + std::to_string(n) + ".example";
}

TEST(HistoryPlan, GroupsAreStableWhateverTheItemOrder) {
  auto a = history_groups(roots(5), small_groups());
  auto b = history_groups(roots(5), small_groups());
  EXPECT_EQ(a, b);
  EXPECT_EQ(a.size(), 5u * 3u) << "e, E and q per root";
  HistoryConfig packed;
  EXPECT_EQ(history_groups(roots(5), packed).size(), 1u) << "byte-packed into one REQ";
}

TEST(HistoryPlan, OneRelayIsAdmittedPerPassUpToThe32WorkerCeiling) {
  HistoryPlan plan(small_groups());
  std::map<std::string, SyncItems> desired;
  for (int i = 0; i < 40; ++i) desired[relay(i)] = roots(1);
  plan.set_desired(desired, 0);
  std::set<std::string> admitted;
  for (int pass = 0; pass < 40; ++pass) {
    auto relay = plan.admit(pass);
    if (relay) admitted.insert(*relay);
    EXPECT_EQ(plan.active_workers(), admitted.size());
  }
  EXPECT_EQ(admitted.size(), 32u);
  EXPECT_EQ(plan.active_workers(), max_history_workers);
  EXPECT_FALSE(plan.admit(100));
  // A worker that finishes frees its slot for the next pass.
  const auto first = *admitted.begin();
  while (plan.next_group(first)) plan.on_group_done(first, true, 100);
  EXPECT_EQ(plan.active_workers(), 31u);
  EXPECT_TRUE(plan.admit(101));
}

TEST(HistoryPlan, ARelayNeverVisitedGoesBeforeOneWhoseWorkMerelyChanged) {
  HistoryPlan plan(small_groups());
  plan.set_desired({{relay(1), roots(1)}, {relay(2), roots(1)}, {relay(3), roots(1)}}, 0);
  ASSERT_EQ(plan.admit(0), relay(1));
  while (plan.next_group(relay(1))) plan.on_group_done(relay(1), true, 0);
  // A reply found elsewhere grows relay 1's work: it is due again, but behind the relays that
  // have waited since the start.
  plan.set_desired({{relay(1), roots(2)}, {relay(2), roots(1)}, {relay(3), roots(1)}}, 5);
  EXPECT_TRUE(plan.admissible(5));
  EXPECT_EQ(plan.admit(5), relay(2));
  EXPECT_EQ(plan.admit(6), relay(3));
  EXPECT_EQ(plan.admit(7), relay(1));
  EXPECT_FALSE(plan.admissible(8)) << "every relay has its worker";
}

TEST(HistoryPlan, AWorkerDrainsItsRotationThenTheRelayRefreshesAfter24Hours) {
  HistoryPlan plan(small_groups());
  plan.set_desired({{relay(1), roots(2)}}, 0);
  ASSERT_EQ(plan.admit(0), relay(1));
  int groups = 0;
  while (plan.next_group(relay(1))) {
    ++groups;
    if (!plan.on_group_done(relay(1), true, 10)) break;
  }
  EXPECT_EQ(groups, 6);
  EXPECT_FALSE(plan.relays().at(relay(1)).worker);
  EXPECT_FALSE(plan.admit(10 + 86399));
  EXPECT_EQ(plan.admit(10 + 86400), relay(1));
}

TEST(HistoryPlan, AFailedGroupAdvancesTheCursorAndRetriesAfter5Minutes) {
  HistoryPlan plan(small_groups());
  plan.set_desired({{relay(1), roots(2)}}, 0);
  ASSERT_EQ(plan.admit(0), relay(1));
  auto first = plan.next_group(relay(1));
  ASSERT_TRUE(first);
  EXPECT_FALSE(plan.on_group_done(relay(1), false, 0)) << "the worker is released";
  EXPECT_EQ(plan.relays().at(relay(1)).cursor, 1u);
  EXPECT_FALSE(plan.admit(299));
  ASSERT_EQ(plan.admit(300), relay(1));
  auto next = plan.next_group(relay(1));
  ASSERT_TRUE(next);
  EXPECT_NE(*next, *first) << "the next rotation starts past the failed group";
}

TEST(HistoryPlan, TheCursorIsKeptModuloTheNewGroupsWhenTheInventoryChanges) {
  HistoryPlan plan(small_groups());
  plan.set_desired({{relay(1), roots(3)}}, 0);  // 9 groups
  ASSERT_EQ(plan.admit(0), relay(1));
  for (int i = 0; i < 7; ++i) plan.on_group_done(relay(1), true, 0);
  EXPECT_EQ(plan.relays().at(relay(1)).cursor, 7u);
  plan.set_desired({{relay(1), roots(2)}}, 1);  // 6 groups
  EXPECT_EQ(plan.relays().at(relay(1)).cursor, 1u);
  EXPECT_TRUE(plan.next_group(relay(1))) << "the running worker continues on the new set";
  // A relay no longer desired gets no further group; its in-flight one may finish.
  plan.set_desired({}, 2);
  EXPECT_FALSE(plan.next_group(relay(1)));
  EXPECT_EQ(plan.active_workers(), 1u);
  EXPECT_FALSE(plan.on_group_done(relay(1), true, 3));
  EXPECT_EQ(plan.active_workers(), 0u);
}

nostr::Pubkey key(int n) {
  nostr::Pubkey k{};
  k[0] = static_cast<std::uint8_t>(n);
  return k;
}

// One author with many (hostile) mailboxes takes at most its share of the workers, and the relays
// of the authors with the fewest workers out go first.
TEST(HistoryPlan, OneAuthorsRelaysTakeAtMostTheirShareOfTheWorkers) {
  auto config = small_groups();
  config.author_workers = 2;
  HistoryPlan plan(config);
  std::map<std::string, SyncItems> desired;
  std::map<std::string, std::set<nostr::Pubkey>> authors;
  for (int i = 0; i < 10; ++i) {
    desired[relay(i)] = roots(1);
    authors[relay(i)] = {key(1)};  // the hostile author's relays sort first
  }
  desired["wss://victim.example"] = roots(1);
  authors["wss://victim.example"] = {key(2)};
  plan.set_desired(desired, 0);
  plan.set_authors(authors);
  ASSERT_EQ(plan.admit(0), relay(0));
  EXPECT_EQ(plan.admit(1), "wss://victim.example") << "the author with no worker out first";
  EXPECT_EQ(plan.admit(2), relay(1));
  EXPECT_FALSE(plan.admit(3)) << "author 1 holds its share of two";
  EXPECT_EQ(plan.workers_of(key(1)), 2u);
  // A relay shared with another author is admitted on that author's share.
  plan.set_desired(desired, 4);
  authors[relay(5)].insert(key(3));
  plan.set_authors(authors);
  EXPECT_EQ(plan.admit(4), relay(5));
  EXPECT_FALSE(plan.admit(5));
}

// A relay trickling progress keeps its worker only for its budget; one that spent it without
// completing a group is backed off, doubling per budget spent in a row.
TEST(HistoryPlan, ARelayThatSpendsItsBudgetIsCutAndBackedOff) {
  auto config = small_groups();
  config.relay_budget_seconds = 120;
  HistoryPlan plan(config);
  plan.set_desired({{relay(1), roots(1)}}, 0);
  ASSERT_EQ(plan.admit(0), relay(1));
  EXPECT_EQ(plan.budget_left(relay(1), 0), 120);
  EXPECT_EQ(plan.budget_left(relay(1), 100), 20) << "what the next fetch may take";
  EXPECT_FALSE(plan.on_group_done(relay(1), false, 120)) << "its fetch was cut at the budget";
  EXPECT_EQ(plan.budgets_spent(), 1u);
  EXPECT_EQ(plan.relays().at(relay(1)).due, 120 + 300);
  ASSERT_EQ(plan.admit(420), relay(1));
  plan.on_group_done(relay(1), false, 540);
  EXPECT_EQ(plan.relays().at(relay(1)).due, 540 + 600) << "doubled";
  ASSERT_EQ(plan.admit(1140), relay(1));
  plan.on_group_done(relay(1), false, 1260);
  EXPECT_EQ(plan.relays().at(relay(1)).due, 1260 + 1200);
  // A group completing resets it.
  ASSERT_EQ(plan.admit(2460), relay(1));
  EXPECT_TRUE(plan.on_group_done(relay(1), true, 2461));
  EXPECT_EQ(plan.relays().at(relay(1)).spent, 0u);
}

TEST(HistoryPlan, AnHonestRelayThatOutlastsItsBudgetContinuesAfterTheRetryCadence) {
  auto config = small_groups();
  config.relay_budget_seconds = 120;
  HistoryPlan plan(config);
  plan.set_desired({{relay(1), roots(3)}}, 0);  // 9 groups
  ASSERT_EQ(plan.admit(0), relay(1));
  EXPECT_TRUE(plan.on_group_done(relay(1), true, 60));
  EXPECT_FALSE(plan.on_group_done(relay(1), true, 121)) << "the budget is spent";
  const auto& state = plan.relays().at(relay(1));
  EXPECT_EQ(state.spent, 0u) << "it completed groups: no back-off";
  EXPECT_EQ(state.due, 121 + 300);
  EXPECT_EQ(state.cursor, 2u) << "the rotation continues from its cursor";
  EXPECT_EQ(plan.budgets_spent(), 1u);
}

TEST(HistoryPlan, NoBudgetMeansOnlyTheFetchPathsBounds) {
  auto config = small_groups();
  config.relay_budget_seconds = 0;
  HistoryPlan plan(config);
  plan.set_desired({{relay(1), roots(3)}}, 0);
  ASSERT_EQ(plan.admit(0), relay(1));
  EXPECT_EQ(plan.budget_left(relay(1), 0), 0);
  EXPECT_TRUE(plan.on_group_done(relay(1), true, 100000));
}

}  // namespace
}  // namespace graspd::sync
