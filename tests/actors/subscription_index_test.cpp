// The fan-out index must report exactly the subscriptions a brute-force scan
// with Filter::matches reports (each once), while visiting few candidates.
#include "actors/relay/engine/subscription_index.hpp"

#include <gtest/gtest.h>

#include <random>
#include <set>

namespace graspd {
namespace {

nostr::Bytes32 bytes(std::uint8_t v) {
  nostr::Bytes32 b{};
  b.fill(v);
  return b;
}

std::set<std::uint64_t> matches_of(SubscriptionIndex& index, const nostr::Event& ev) {
  std::set<std::uint64_t> out;
  index.for_each_match(
      ev, [&](std::uint64_t key) { EXPECT_TRUE(out.insert(key).second) << "twice: " << key; });
  return out;
}

TEST(SubscriptionIndex, RandomizedAgreesWithBruteForce) {
  std::mt19937 rng(42);
  auto pick = [&](int n) { return static_cast<int>(rng() % n); };
  SubscriptionIndex index;
  std::map<std::uint64_t, nostr::Filters> reference;
  for (std::uint64_t key = 1; key <= 400; ++key) {
    nostr::Filters filters(1 + pick(3));
    for (auto& f : filters) {
      if (pick(5) == 0) f.ids = std::vector<nostr::EventId>{bytes(pick(20)), bytes(pick(20))};
      if (pick(3) == 0) f.authors = std::vector<nostr::Pubkey>{bytes(pick(10))};
      if (pick(2) == 0) f.kinds = std::vector<std::uint32_t>{static_cast<std::uint32_t>(pick(5))};
      if (pick(3) == 0) f.tags['t'] = {"v" + std::to_string(pick(6))};
      if (pick(6) == 0) f.tags['e'] = {"x", "y"};
      if (pick(8) == 0) f.since = 50;
      f.normalize();
    }
    reference[key] = filters;
    index.add(key, filters);
  }
  // Churn: remove some, replace some.
  for (std::uint64_t key = 1; key <= 400; key += 7) {
    index.remove(key);
    reference.erase(key);
  }
  for (std::uint64_t key = 2; key <= 400; key += 11) {
    nostr::Filter f;
    f.kinds = std::vector<std::uint32_t>{3};
    index.add(key, {f});
    reference[key] = {f};
  }
  EXPECT_EQ(index.size(), reference.size());
  for (int i = 0; i < 2000; ++i) {
    nostr::Event ev;
    ev.id = bytes(pick(20));
    ev.pubkey = bytes(pick(10));
    ev.kind = pick(5);
    ev.created_at = pick(100);
    if (pick(2)) ev.tags.push_back({"t", "v" + std::to_string(pick(6))});
    if (pick(3) == 0) ev.tags.push_back({"e", pick(2) ? "x" : "z"});
    std::set<std::uint64_t> expected;
    for (const auto& [key, filters] : reference) {
      if (nostr::matches_any(filters, ev)) expected.insert(key);
    }
    ASSERT_EQ(matches_of(index, ev), expected) << "event " << i;
  }
}

TEST(SubscriptionIndex, OnlyCandidateSubscriptionsAreVisited) {
  SubscriptionIndex index;
  for (std::uint64_t key = 0; key < 10000; ++key) {
    nostr::Filter f;
    f.authors = std::vector<nostr::Pubkey>{bytes(static_cast<std::uint8_t>(key % 250))};
    index.add(key, {f});
  }
  nostr::Event ev;
  ev.pubkey = bytes(7);
  EXPECT_EQ(index.candidate_count(ev), 40u);  // 10000 / 250
  EXPECT_EQ(matches_of(index, ev).size(), 40u);
}

TEST(SubscriptionIndex, CatchAllFiltersSeeEverythingAndRemovalCleansUp) {
  SubscriptionIndex index;
  index.add(1, {nostr::Filter{}});
  nostr::Filter by_tag;
  by_tag.tags['a'] = {"30617:abc:repo"};
  index.add(2, {by_tag});
  nostr::Event ev;
  ev.kind = 1617;
  ev.tags = {{"a", "30617:abc:repo"}};
  EXPECT_EQ(matches_of(index, ev), (std::set<std::uint64_t>{1, 2}));
  index.remove(1);
  index.remove(2);
  EXPECT_EQ(index.size(), 0u);
  EXPECT_EQ(index.candidate_count(ev), 0u);
}

TEST(SubscriptionIndex, UnsatisfiableFiltersNeverMatch) {
  SubscriptionIndex index;
  nostr::Filter empty_kinds;
  empty_kinds.kinds = std::vector<std::uint32_t>{};
  index.add(1, {empty_kinds});
  nostr::Event ev;
  EXPECT_TRUE(matches_of(index, ev).empty());
}

TEST(SubscriptionIndex, AFailingFilterIsCheckedOncePerEventHoweverOftenATagRepeats) {
  // Registered under #t, failing on #u: an event repeating the #t value 10,000 times must not
  // re-check every such filter (scanning all 10,000 tags for #u) once per repetition.
  SubscriptionIndex index;
  for (std::uint64_t key = 1; key <= 50; ++key) {
    nostr::Filter f;
    f.tags['t'] = {"topic"};
    f.tags['u'] = {"x", "y"};
    f.normalize();
    index.add(key, {f});
  }
  nostr::Event ev;
  ev.kind = 20001;
  for (int i = 0; i < 10000; ++i) ev.tags.push_back({"t", "topic"});
  EXPECT_TRUE(matches_of(index, ev).empty());
  EXPECT_EQ(index.filter_checks(), 50u) << "each filter once for this event";
  ev.tags.push_back({"u", "y"});
  EXPECT_EQ(matches_of(index, ev).size(), 50u);
  EXPECT_EQ(index.filter_checks(), 100u);
}

}  // namespace
}  // namespace graspd
