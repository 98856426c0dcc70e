// GRASP-03 identity discovery decisions (sync::DiscoveryPlan): batching, one batch in flight,
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

}  // namespace
}  // namespace graspd::sync
