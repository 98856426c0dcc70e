// GRASP-03 identity discovery decisions (sync::DiscoveryPlan): batching, one batch per source and
// a few in flight, source budgets and back-off,
// one new source per maintenance pass, the 24 h / 5 min cadences and outbox following.
#include "actors/plus/engine/discovery_plan.hpp"

#include <gtest/gtest.h>

namespace graspd::sync {
namespace {

nostr::Pubkey author(int n) {
  nostr::Pubkey k{};
  k[0] = static_cast<std::uint8_t>(n >> 8);
  k[1] = static_cast<std::uint8_t>(n & 0xff);
  return k;
}

const std::string index_relay = "wss://index.example";

class DiscoveryPlanTest : public ::testing::Test {
 protected:
  DiscoveryPlan plan{DiscoveryConfig{86400, 300}};
  std::int64_t t = 1'000'000;

  void authors_without_lists(int n) {
    std::map<nostr::Pubkey, DiscoveryAuthor> authors;
    for (int i = 0; i < n; ++i) authors[author(i)] = DiscoveryAuthor{{index_relay}, false};
    plan.set_index_sources({index_relay});
    plan.set_authors(authors);
  }
};

TEST_F(DiscoveryPlanTest, A101AuthorsMakeTwoQueriesOneInFlight) {
  authors_without_lists(101);
  auto first = plan.on_pass(t);
  ASSERT_TRUE(first);
  EXPECT_EQ(first->source, index_relay);
  EXPECT_EQ(first->authors.size(), 100u);
  EXPECT_TRUE(plan.in_flight());
  EXPECT_FALSE(plan.on_pass(t + 60)) << "one batch in flight, no waiter queue";
  auto second = plan.on_done(first->id, true, t + 61);
  ASSERT_TRUE(second) << "the same (warm) source continues at once";
  EXPECT_EQ(second->authors.size(), 1u);
  EXPECT_FALSE(plan.on_done(second->id, true, t + 62));
  EXPECT_FALSE(plan.in_flight());
  EXPECT_EQ(plan.due_authors(t + 62), 0u);
  EXPECT_TRUE(plan.index_answered(author(100)));
}

TEST_F(DiscoveryPlanTest, AnAuthorsFirstIndexAnswerIsCountedOnceAFailureNot) {
  plan.set_index_sources({index_relay});
  plan.set_authors({{author(1), {{index_relay}, false}}, {author(2), {{index_relay}, false}}});
  auto failed = plan.on_pass(t);
  ASSERT_TRUE(failed);
  plan.on_done(failed->id, false, t);
  EXPECT_EQ(plan.index_answers(), 0u) << "a failure answers nothing";
  auto batch = plan.on_pass(t + 300);
  ASSERT_TRUE(batch);
  plan.on_done(batch->id, true, t + 300);
  EXPECT_EQ(plan.index_answers(), 2u) << "each author's first answer is a change";
  auto again = plan.on_pass(t + 600);
  ASSERT_TRUE(again);
  plan.on_done(again->id, true, t + 600);
  EXPECT_EQ(plan.index_answers(), 2u) << "a repeated answer changes nothing";
}

TEST_F(DiscoveryPlanTest, FoundAuthorsRefreshAfter24HoursMissingOnesAfter5Minutes) {
  plan.set_index_sources({index_relay});
  plan.set_authors({{author(1), {{index_relay}, false}}, {author(2), {{index_relay}, false}}});
  auto batch = plan.on_pass(t);
  ASSERT_TRUE(batch);
  plan.on_done(batch->id, true, t);
  // Author 1's profile arrived; author 2 has nothing.
  plan.set_authors({{author(1), {{index_relay}, true}}, {author(2), {{index_relay}, false}}});
  EXPECT_FALSE(plan.on_pass(t + 299));
  auto retry = plan.on_pass(t + 300);
  ASSERT_TRUE(retry);
  EXPECT_EQ(retry->authors, std::vector<nostr::Pubkey>{author(2)});
  plan.on_done(retry->id, true, t + 300);
  // The missing author keeps its five-minute cadence; the found one waits for its day.
  auto again = plan.on_pass(t + 86399);
  ASSERT_TRUE(again);
  EXPECT_EQ(again->authors, std::vector<nostr::Pubkey>{author(2)});
  plan.on_done(again->id, true, t + 86399);
  auto refresh = plan.on_pass(t + 86400);
  ASSERT_TRUE(refresh);
  EXPECT_EQ(refresh->authors, std::vector<nostr::Pubkey>{author(1)});
}

TEST_F(DiscoveryPlanTest, AFailedQueryRetriesAfter5MinutesEvenForFoundAuthors) {
  plan.set_authors({{author(1), {{"wss://out.example"}, true}}});
  auto batch = plan.on_pass(t);
  ASSERT_TRUE(batch);
  plan.on_done(batch->id, false, t);
  EXPECT_FALSE(plan.on_pass(t + 299));
  EXPECT_TRUE(plan.on_pass(t + 300));
  EXPECT_FALSE(plan.index_answered(author(1)));
}

TEST_F(DiscoveryPlanTest, OutboxesAreFollowedOneNewSourcePerPassUntilNoneIsUnvisited) {
  authors_without_lists(1);
  auto batch = plan.on_pass(t);
  ASSERT_TRUE(batch);
  EXPECT_FALSE(plan.on_done(batch->id, true, t));
  // The relay list arrived: its two outboxes replace the index as sources.
  plan.set_authors({{author(0), {{"wss://out1.example", "wss://out2.example"}, true}}});
  auto first = plan.on_pass(t + 60);
  ASSERT_TRUE(first);
  EXPECT_FALSE(plan.on_done(first->id, true, t + 61)) << "a second new source waits a pass";
  auto second = plan.on_pass(t + 120);
  ASSERT_TRUE(second);
  EXPECT_NE(second->source, first->source);
  plan.on_done(second->id, true, t + 121);
  // A newer replacement names a third outbox: it joins the same round.
  plan.set_authors(
      {{author(0), {{"wss://out1.example", "wss://out2.example", "wss://out3.example"}, true}}});
  auto third = plan.on_pass(t + 180);
  ASSERT_TRUE(third);
  EXPECT_EQ(third->source, "wss://out3.example");
  plan.on_done(third->id, true, t + 181);
  EXPECT_FALSE(plan.on_pass(t + 240)) << "no unvisited source remains";
  EXPECT_EQ(plan.due_authors(t + 240), 0u);
}

TEST_F(DiscoveryPlanTest, AuthorsNoLongerEligibleAreForgotten) {
  authors_without_lists(3);
  plan.set_authors({});
  EXPECT_FALSE(plan.on_pass(t));
  EXPECT_EQ(plan.due_authors(t), 0u);
}

// Several batches run at once, each on its own source: a slow source holds one of them only.
TEST_F(DiscoveryPlanTest, BatchesRunOnDistinctSourcesUpToTheLimit) {
  DiscoveryPlan many{DiscoveryConfig{86400, 300, 2, 30}};
  std::map<nostr::Pubkey, DiscoveryAuthor> authors;
  for (int i = 0; i < 3; ++i)
    authors[author(i)] = DiscoveryAuthor{{"wss://out" + std::to_string(i) + ".example"}, true};
  many.set_authors(authors);
  auto first = many.on_pass(t);
  auto second = many.on_pass(t + 1);
  ASSERT_TRUE(first && second);
  EXPECT_NE(first->source, second->source);
  EXPECT_EQ(many.batches_in_flight(), 2u);
  EXPECT_FALSE(many.on_pass(t + 2)) << "two in flight at most";
  EXPECT_FALSE(many.on_done(second->id, true, t + 3)) << "no warm source left";
  auto third = many.on_pass(t + 4);
  ASSERT_TRUE(third) << "the freed slot goes to the next source while the first is still out";
  EXPECT_EQ(many.batches_in_flight(), 2u);
}

// A source that trickles until its budget is cut is backed off: no batch until the back-off
// ends, doubling while it keeps spending its budget; other sources go on meanwhile.
TEST_F(DiscoveryPlanTest, ASourceThatSpendsItsBudgetIsBackedOff) {
  DiscoveryPlan plan2{DiscoveryConfig{86400, 300, 1, 30}};
  plan2.set_authors(
      {{author(1), {{"wss://slow.example"}, true}}, {author(2), {{"wss://good.example"}, true}}});
  auto slow = plan2.on_pass(t);
  ASSERT_TRUE(slow);
  const auto slow_source = slow->source;
  EXPECT_FALSE(plan2.on_pass(t + 10)) << "the one slot is out";
  plan2.on_done(slow->id, false, t + 30);  // cut at the budget
  EXPECT_EQ(plan2.budgets_spent(), 1u);
  EXPECT_EQ(plan2.sources_backed_off(t + 31), 1u);
  auto other = plan2.on_pass(t + 31);
  ASSERT_TRUE(other);
  EXPECT_NE(other->source, slow_source);
  plan2.on_done(other->id, true, t + 32);
  EXPECT_EQ(plan2.budgets_spent(), 1u) << "an answered batch spends nothing";
  // Its authors' round failed: due again after 300 s, the source too.
  EXPECT_FALSE(plan2.on_pass(t + 329));
  auto again = plan2.on_pass(t + 330);
  ASSERT_TRUE(again);
  EXPECT_EQ(again->source, slow_source);
  plan2.on_done(again->id, false, t + 360);
  EXPECT_EQ(plan2.sources_backed_off(t + 360 + 599), 1u) << "doubled to 600 s";
  EXPECT_EQ(plan2.sources_backed_off(t + 360 + 600), 0u);
}

TEST_F(DiscoveryPlanTest, AFailureWithinTheBudgetIsNoBackOff) {
  plan.set_authors({{author(1), {{"wss://out.example"}, true}}});
  auto batch = plan.on_pass(t);
  ASSERT_TRUE(batch);
  plan.on_done(batch->id, false, t + 5);  // refused at once
  EXPECT_EQ(plan.budgets_spent(), 0u);
  EXPECT_EQ(plan.sources_backed_off(t + 6), 0u);
}

}  // namespace
}  // namespace graspd::sync
