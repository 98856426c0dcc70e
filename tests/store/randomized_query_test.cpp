// Randomized differential test: for thousands of random events (regular,
// replaceable, addressable, deletions, expiring, ephemeral) and random
// filters, the indexed query result (order included) and COUNT equal a
// brute-force scan over the surviving events using nostr::Filter::matches.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>

#include "store/lmdb/event_store.hpp"
#include "tests/store/store_test_util.hpp"

namespace graspd::store {
namespace {

using nostr::EventPtr;

class RandomWorld {
 public:
  explicit RandomWorld(unsigned seed) : rng_(seed) {}

  EventPtr random_event(const std::vector<EventPtr>& existing, std::int64_t now) {
    auto ev = std::make_shared<nostr::Event>();
    for (auto& b : ev->id) b = static_cast<std::uint8_t>(rng_());
    ev->pubkey = author(pick(kAuthors));
    ev->created_at = 1000 + static_cast<std::int64_t>(pick(60));  // many ties
    static constexpr std::uint32_t kinds[] = {1, 1,     1,     7,     1617,  1621, 0,
                                              3, 10002, 30617, 30617, 30618, 5,    20001};
    ev->kind = kinds[pick(std::size(kinds))];
    int ntags = static_cast<int>(pick(4));
    for (int i = 0; i < ntags; ++i) ev->tags.push_back(random_tag());
    if (nostr::is_addressable(ev->kind) && pick(4) != 0)
      ev->tags.insert(ev->tags.begin(), {"d", "repo" + std::to_string(pick(3))});
    if (ev->kind == 5 && !existing.empty()) {
      for (int i = 0; i < 3; ++i) {
        const auto& target = existing[pick(existing.size())];
        if (pick(2))
          ev->tags.push_back({"e", nostr::to_hex(target->id)});
        else
          ev->tags.push_back({"a", nostr::address_of(*target)});
      }
      // Often delete one's own events so deletions take effect.
      if (pick(2)) ev->pubkey = existing[pick(existing.size())]->pubkey;
    }
    if (pick(10) == 0)
      ev->tags.push_back(
          {"expiration", std::to_string(now - 5 + static_cast<std::int64_t>(pick(40)))});
    return ev;
  }

  nostr::Filter random_filter(const std::vector<EventPtr>& events) {
    nostr::Filter f;
    if (pick(8) == 0) {
      f.ids.emplace();
      for (std::size_t i = 0, n = 1 + pick(5); i < n; ++i)
        f.ids->push_back(events[pick(events.size())]->id);
    }
    if (pick(3) == 0) {
      f.authors.emplace();
      for (std::size_t i = 0, n = pick(4); i < n; ++i)
        f.authors->push_back(author(pick(kAuthors + 1)));
    }
    if (pick(3) == 0) {
      f.kinds.emplace();
      static constexpr std::uint32_t kinds[] = {0, 1, 3, 5, 7, 1617, 10002, 30617, 30618, 20001, 4};
      for (std::size_t i = 0, n = 1 + pick(3); i < n; ++i)
        f.kinds->push_back(kinds[pick(std::size(kinds))]);
    }
    if (pick(3) == 0) {
      for (std::size_t i = 0, n = 1 + pick(2); i < n; ++i) {
        auto tag = random_tag();
        auto& values = f.tags[tag[0][0]];
        values.push_back(tag[1]);
        if (pick(2)) values.push_back(random_tag()[1]);
      }
    }
    if (pick(3) == 0) f.since = 1000 + static_cast<std::int64_t>(pick(70));
    if (pick(3) == 0) f.until = 1000 + static_cast<std::int64_t>(pick(70));
    switch (pick(5)) {
      case 0:
        break;
      case 1:
        f.limit = 0;
        break;
      case 2:
        f.limit = 1 + pick(3);
        break;
      default:
        f.limit = pick(60);
        break;
    }
    f.normalize();
    return f;
  }

  std::size_t pick(std::size_t n) {
    return std::uniform_int_distribution<std::size_t>(0, n - 1)(rng_);
  }

 private:
  static constexpr std::size_t kAuthors = 6;
  static nostr::Pubkey author(std::size_t n) { return test::bytes_of(n + 1, 0xaa); }

  nostr::Tag random_tag() {
    static const char letters[] = {'e', 'p', 't', 'a', 'E', 'A', 'r', 'd'};
    char letter = letters[pick(std::size(letters))];
    return {std::string(1, letter), "v" + std::to_string(pick(6))};
  }

  std::mt19937_64 rng_;
};

/// The brute-force side: which survivors each filter matches, computed once per query and used for
/// both the REQ answer and the COUNT (f.matches over every survivor is most of this test's time
/// under the sanitizers). `sorted` is the survivors newest first, ties by id.
struct BruteForce {
  const std::vector<EventPtr>& sorted;
  const nostr::Filters& filters;
  std::vector<std::vector<char>> matched;  // [filter][survivor]
  std::vector<char> countable;             // COUNT ignores limits: satisfiable without its limit

  BruteForce(const std::vector<EventPtr>& newest_first, const nostr::Filters& fs)
      : sorted(newest_first), filters(fs), matched(fs.size()), countable(fs.size()) {
    for (std::size_t f = 0; f < filters.size(); ++f) {
      nostr::Filter unlimited = filters[f];
      unlimited.limit.reset();
      countable[f] = !unlimited.is_unsatisfiable();
      matched[f].resize(sorted.size());
      for (std::size_t i = 0; i < sorted.size(); ++i)
        matched[f][i] = filters[f].matches(*sorted[i]);
    }
  }

  std::vector<nostr::EventId> answer(std::uint64_t max_limit) const {
    std::vector<char> taken(sorted.size(), 0);
    for (std::size_t f = 0; f < filters.size(); ++f) {
      std::uint64_t limit = std::min(filters[f].limit.value_or(max_limit), max_limit);
      for (std::size_t i = 0; i < sorted.size() && limit > 0; ++i)
        if (matched[f][i]) taken[i] = 1, --limit;
    }
    std::vector<nostr::EventId> ids;
    for (std::size_t i = 0; i < sorted.size(); ++i)
      if (taken[i]) ids.push_back(sorted[i]->id);
    return ids;
  }

  std::uint64_t count() const {
    std::uint64_t n = 0;
    for (std::size_t i = 0; i < sorted.size(); ++i) {
      bool any = false;
      for (std::size_t f = 0; f < filters.size(); ++f) any |= countable[f] && matched[f][i];
      n += any;
    }
    return n;
  }
};

class RandomizedQueryTest : public ::testing::TestWithParam<unsigned> {};

TEST_P(RandomizedQueryTest, IndexedQueryEqualsBruteForce) {
  test::TempDir dir;
  std::int64_t now = 2000;
  StoreOptions options = test::options_for(dir, &now);
  options.durable = false;
  EventStore store(options);
  RandomWorld world(GetParam());

  std::vector<EventPtr> written;
  while (written.size() < 3000) {
    std::vector<EventPtr> batch;
    for (std::size_t i = 0, n = 1 + world.pick(200); i < n; ++i)
      batch.push_back(world.random_event(written, now));
    auto outcomes = store.write_batch(batch);
    for (auto o : outcomes) ASSERT_NE(o, WriteOutcome::error) << store.last_error();
    written.insert(written.end(), batch.begin(), batch.end());
  }
  now += 20;  // some stored events expire now: they must be hidden

  std::vector<EventPtr> survivors;
  std::set<std::string> addresses;
  for (const auto& ev : written) {
    if (!store.contains(ev->id)) continue;
    if (std::any_of(survivors.begin(), survivors.end(),
                    [&](const EventPtr& s) { return s->id == ev->id; }))
      continue;
    survivors.push_back(ev);
    if (nostr::is_replaceable(ev->kind) || nostr::is_addressable(ev->kind)) {
      EXPECT_TRUE(addresses.insert(nostr::address_of(*ev)).second)
          << "two stored versions of " << nostr::address_of(*ev);
    }
    EXPECT_FALSE(nostr::is_ephemeral(ev->kind));
  }
  ASSERT_GT(survivors.size(), 800u);
  ASSERT_LT(survivors.size(), written.size());
  std::sort(survivors.begin(), survivors.end(), [](const EventPtr& a, const EventPtr& b) {
    if (a->created_at != b->created_at) return a->created_at > b->created_at;
    return a->id < b->id;
  });

  int non_trivial = 0;  // guards against a generator that only makes empty results
  for (int q = 0; q < 1000; ++q) {
    nostr::Filters filters;
    for (std::size_t i = 0, n = 1 + world.pick(3); i < n; ++i)
      filters.push_back(world.random_filter(written));
    std::uint64_t max_limit = world.pick(4) == 0 ? 25 : 500;
    std::vector<nostr::EventId> got;
    store.query(filters, [&](const QueryHit& h) { got.push_back(h.id); }, {max_limit});
    BruteForce brute(survivors, filters);
    ASSERT_EQ(got, brute.answer(max_limit))
        << "query " << q << " with " << filters.size() << " filters";
    non_trivial += got.size() > 1;
    ASSERT_EQ(store.count(filters), brute.count()) << "count " << q;
  }
  EXPECT_GT(non_trivial, 250);
}

INSTANTIATE_TEST_SUITE_P(Seeds, RandomizedQueryTest, ::testing::Values(1u, 2u, 3u));

}  // namespace
}  // namespace graspd::store
