// EventStore write rules (NIP-01 replaceable/addressable, NIP-09, NIP-40,
// ephemeral), query basics, schema version and map growth.
#include "store/lmdb/event_store.hpp"

#include <gtest/gtest.h>

#include <lmdb.h>
#include <sys/wait.h>
#include <unistd.h>

#include <set>

#include <fstream>

#include "store/lmdb/record.hpp"
#include "tests/store/store_test_util.hpp"

namespace graspd::store {
namespace {

using nostr::EventPtr;
using test::TempDir;
using test::unsigned_event;

class EventStoreTest : public ::testing::Test {
 protected:
  EventStoreTest() : store_(std::make_unique<EventStore>(test::options_for(dir_, &now_))) {}

  WriteOutcome write(const EventPtr& ev) {
    auto outcomes = store_->write_batch(std::span<const EventPtr>(&ev, 1));
    return outcomes.at(0);
  }

  std::vector<nostr::EventId> query(nostr::Filter f, std::uint64_t max_limit = 500) {
    f.normalize();
    std::vector<nostr::EventId> out;
    store_->query({f}, [&](const QueryHit& hit) { out.push_back(hit.id); }, {max_limit});
    return out;
  }

  std::vector<nostr::EventId> all() { return query({}); }

  static nostr::EventId id(std::uint64_t n) { return test::bytes_of(n, 0xee); }
  static nostr::Pubkey author(std::uint64_t n) { return test::bytes_of(n, 0xaa); }
  static std::string hex_id(std::uint64_t n) { return nostr::to_hex(id(n)); }
  static std::string address(std::uint32_t kind, std::uint64_t who, const std::string& d) {
    return std::to_string(kind) + ":" + nostr::to_hex(author(who)) + ":" + d;
  }

  std::int64_t now_ = 1'700'000'000;
  TempDir dir_;
  std::unique_ptr<EventStore> store_;
};

using Ids = std::vector<nostr::EventId>;

TEST_F(EventStoreTest, StoresAndReturnsNormalizedJson) {
  auto ev = unsigned_event(1, 1, 100, 1, {{"t", "x\ny"}}, "he said \"hi\"\x01/");
  EXPECT_EQ(write(ev), WriteOutcome::stored);
  auto json = store_->get(ev->id);
  ASSERT_TRUE(json);
  EXPECT_EQ(*json, "{\"id\":\"" + hex_id(1) + "\",\"pubkey\":\"" + nostr::to_hex(author(1)) +
                       "\",\"created_at\":100,\"kind\":1,\"tags\":[[\"t\",\"x\\ny\"]],"
                       "\"content\":\"he said \\\"hi\\\"\\u0001/\",\"sig\":\"" +
                       std::string(128, '0') + "\"}");
  EXPECT_EQ(store_->size(), 1u);
}

TEST_F(EventStoreTest, DuplicateIsReported) {
  auto ev = unsigned_event(1, 1, 100, 1);
  EXPECT_EQ(write(ev), WriteOutcome::stored);
  EXPECT_EQ(write(ev), WriteOutcome::duplicate);
  EXPECT_EQ(store_->size(), 1u);
}

TEST_F(EventStoreTest, BatchSeesEarlierEventsOfTheSameBatch) {
  std::vector<EventPtr> batch{unsigned_event(1, 1, 100, 1), unsigned_event(1, 1, 100, 1),
                              unsigned_event(2, 1, 100, 0), unsigned_event(3, 1, 90, 0)};
  auto outcomes = store_->write_batch(batch);
  EXPECT_EQ(outcomes, (std::vector<WriteOutcome>{WriteOutcome::stored, WriteOutcome::duplicate,
                                                 WriteOutcome::stored,
                                                 WriteOutcome::rejected_older_version}));
}

// The fan-out tells "seen by a stored query" from "committed later" with these numbers.
TEST_F(EventStoreTest, AWriteStoresOnlyWhenWhatItDependsOnIsStored) {
  auto dependency = unsigned_event(1, 1, 100, 1);
  auto dependant = unsigned_event(2, 2, 101, 1);
  auto orphan = unsigned_event(3, 3, 102, 1);
  std::vector<EventPtr> batch{dependency, dependant, orphan};
  std::vector<std::vector<nostr::EventId>> depends_on{{}, {dependency->id}, {id(99)}};
  auto reports = store_->write_batch_with_json(batch, depends_on);
  EXPECT_EQ(reports[0].outcome, WriteOutcome::stored);
  EXPECT_EQ(reports[1].outcome, WriteOutcome::stored) << "earlier in the same transaction";
  EXPECT_EQ(reports[2].outcome, WriteOutcome::dependency_missing);
  EXPECT_EQ(reports[2].json, nullptr);
  EXPECT_FALSE(store_->contains(orphan->id));
  EXPECT_FALSE(is_accepted(WriteOutcome::dependency_missing));
  EXPECT_EQ(ok_message(WriteOutcome::dependency_missing).rfind("blocked:", 0), 0u);

  // A dependency committed in an earlier transaction counts; one deleted since does not.
  auto later = unsigned_event(4, 2, 103, 1);
  EXPECT_EQ(store_
                ->write_batch_with_json(std::vector<EventPtr>{later},
                                        std::vector<std::vector<nostr::EventId>>{{dependency->id}})
                .front()
                .outcome,
            WriteOutcome::stored);
  auto deletion = unsigned_event(5, 1, 104, 5, {{"e", nostr::to_hex(dependency->id)}});
  auto too_late = unsigned_event(6, 2, 105, 1);
  auto after_deletion =
      store_->write_batch_with_json(std::vector<EventPtr>{deletion, too_late},
                                    std::vector<std::vector<nostr::EventId>>{{}, {dependency->id}});
  EXPECT_EQ(after_deletion[1].outcome, WriteOutcome::dependency_missing);
}

TEST_F(EventStoreTest, CountIsBoundedAndSaysWhenItIsApproximate) {
  std::vector<EventPtr> batch;
  for (std::uint64_t i = 0; i < 5000; ++i)
    batch.push_back(unsigned_event(1000 + i, 1, 100 + i % 7, 1));
  store_->write_batch(batch);
  nostr::Filter f;
  f.kinds = std::vector<std::uint32_t>{1};
  auto exact = store_->count_bounded({f}, 1'000'000);
  EXPECT_EQ(exact.count, 5000u);
  EXPECT_FALSE(exact.approximate);
  auto bounded = store_->count_bounded({f}, 1000);
  EXPECT_TRUE(bounded.approximate);
  EXPECT_LE(bounded.count, 1000u);
  EXPECT_GT(bounded.count, 0u);
  nostr::Filter by_author;
  by_author.authors = std::vector<nostr::Pubkey>{author(1)};
  auto two = store_->count_bounded({f, by_author}, 1'000'000);
  EXPECT_EQ(two.count, 5000u) << "distinct across filters";
}

TEST_F(EventStoreTest, RecordKeysOfAFilterAreBoundedAndMatchTheQuery) {
  std::vector<EventPtr> batch;
  for (std::uint64_t i = 0; i < 300; ++i)
    batch.push_back(unsigned_event(1000 + i, 1 + i % 2, 100 + i % 5, i % 3 == 0 ? 7 : 1));
  store_->write_batch(batch);
  nostr::Filter f;
  f.kinds = std::vector<std::uint32_t>{1};
  std::set<std::pair<std::int64_t, nostr::EventId>> keys;
  store_->for_each_record_key(f, 1000, [&](std::int64_t t, const nostr::EventId& id) {
    keys.insert({t, id});
  });
  std::set<std::pair<std::int64_t, nostr::EventId>> expected;
  for (const auto& ev : batch)
    if (ev->kind == 1) expected.insert({ev->created_at, ev->id});
  EXPECT_EQ(keys, expected);
  std::size_t capped = 0;
  store_->for_each_record_key(f, 50, [&](std::int64_t, const nostr::EventId&) { ++capped; });
  EXPECT_EQ(capped, 50u) << "never past the cap, even among ties";
  f.limit = 10;
  std::size_t limited = 0;
  store_->for_each_record_key(f, 1000, [&](std::int64_t, const nostr::EventId&) { ++limited; });
  EXPECT_EQ(limited, 10u) << "the filter's limit is honoured";
}

TEST_F(EventStoreTest, NegentropyItemsAreAllMatchesOrNothingPastTheBound) {
  std::vector<EventPtr> batch;
  for (std::uint64_t i = 0; i < 120; ++i) batch.push_back(unsigned_event(2000 + i, 1, 100 + i, 1));
  store_->write_batch(batch);
  nostr::Filter f;
  f.kinds = std::vector<std::uint32_t>{1};
  auto exact = store_->negentropy_items(f, 120);
  ASSERT_TRUE(exact) << "exactly the bound is within it";
  std::set<nostr::negentropy::Item> got(exact->begin(), exact->end());
  std::set<nostr::negentropy::Item> expected;
  for (const auto& ev : batch)
    expected.insert({static_cast<std::uint64_t>(ev->created_at), ev->id});
  EXPECT_EQ(got, expected);
  EXPECT_FALSE(store_->negentropy_items(f, 119)) << "one past the bound refuses the whole set";
  f.limit = 10;
  auto limited = store_->negentropy_items(f, 50);
  ASSERT_TRUE(limited) << "the filter's own limit keeps it within the bound";
  EXPECT_EQ(limited->size(), 10u);
}

TEST_F(EventStoreTest, TiesAtTheLimitAreResolvedByLowestIdWithinTheTieAllowance) {
  // 200 events share one timestamp: within the allowance the answer is exact (lowest ids first).
  std::vector<EventPtr> batch;
  for (std::uint64_t i = 0; i < 200; ++i) batch.push_back(unsigned_event(5000 - i, 1, 100, 1));
  store_->write_batch(batch);
  nostr::Filter f;
  f.kinds = std::vector<std::uint32_t>{1};
  f.limit = 3;
  EXPECT_EQ(query(f), (std::vector<nostr::EventId>{id(4801), id(4802), id(4803)}));
  // Far past the allowance the query still answers `limit` tied events, without reading them all.
  std::vector<EventPtr> flood;
  for (std::uint64_t i = 0; i < 20000; ++i) flood.push_back(unsigned_event(100000 + i, 2, 200, 1));
  store_->write_batch(flood);
  f.limit = 1;
  auto one = query(f);
  ASSERT_EQ(one.size(), 1u);
  EXPECT_GE(one[0], id(100000));
}

TEST_F(EventStoreTest, CommitSequenceAndQueryHorizonSeparateBeforeFromAfter) {
  std::vector<EventPtr> first{unsigned_event(1, 1, 100, 1), unsigned_event(1, 1, 100, 1),
                              unsigned_event(2, 1, 101, 1)};
  auto reports = store_->write_batch_with_json(first);
  ASSERT_EQ(reports.size(), 3u);
  EXPECT_GT(reports[0].seq, 0u);
  EXPECT_EQ(reports[1].seq, 0u) << "a duplicate stores nothing";
  EXPECT_GT(reports[2].seq, reports[0].seq);
  std::size_t hits = 0;
  auto horizon = store_->query({nostr::Filter{}}, [&](const QueryHit&) { ++hits; });
  EXPECT_EQ(hits, 2u);
  EXPECT_GT(horizon, reports[2].seq) << "everything the query saw lies below its horizon";
  auto later = store_->write_batch_with_json(std::vector<EventPtr>{unsigned_event(3, 1, 102, 1)});
  EXPECT_GE(later[0].seq, horizon) << "a later commit lies at or above it";
}

TEST_F(EventStoreTest, NullEventIsAnErrorNotACrash) {
  std::vector<EventPtr> batch{nullptr, unsigned_event(1, 1, 100, 1)};
  auto outcomes = store_->write_batch(batch);
  EXPECT_EQ(outcomes[0], WriteOutcome::error);
  EXPECT_EQ(outcomes[1], WriteOutcome::stored);
}

TEST_F(EventStoreTest, ReplaceableLatestWins) {
  EXPECT_EQ(write(unsigned_event(1, 7, 100, 0)), WriteOutcome::stored);
  EXPECT_EQ(write(unsigned_event(2, 7, 200, 0)), WriteOutcome::replaced_older);
  EXPECT_EQ(all(), Ids{id(2)});
  EXPECT_FALSE(store_->contains(id(1)));
  EXPECT_EQ(write(unsigned_event(3, 7, 150, 0)), WriteOutcome::rejected_older_version);
  // Another author and another kind are separate heads.
  EXPECT_EQ(write(unsigned_event(4, 8, 50, 0)), WriteOutcome::stored);
  EXPECT_EQ(write(unsigned_event(5, 7, 50, 10002)), WriteOutcome::stored);
  EXPECT_EQ(all().size(), 3u);
}

TEST_F(EventStoreTest, ReplaceableEqualCreatedAtKeepsLowestId) {
  EXPECT_EQ(write(unsigned_event(5, 7, 100, 3)), WriteOutcome::stored);
  EXPECT_EQ(write(unsigned_event(9, 7, 100, 3)), WriteOutcome::rejected_older_version);
  EXPECT_EQ(write(unsigned_event(2, 7, 100, 3)), WriteOutcome::replaced_older);
  EXPECT_EQ(all(), Ids{id(2)});
}

TEST_F(EventStoreTest, AddressableIsKeyedByDTag) {
  EXPECT_EQ(write(unsigned_event(1, 7, 100, 30617, {{"d", "repo"}})), WriteOutcome::stored);
  EXPECT_EQ(write(unsigned_event(2, 7, 100, 30617, {{"d", "other"}})), WriteOutcome::stored);
  EXPECT_EQ(write(unsigned_event(3, 7, 101, 30617, {{"d", "repo"}})), WriteOutcome::replaced_older);
  EXPECT_EQ(write(unsigned_event(4, 7, 99, 30617, {{"d", "repo"}})),
            WriteOutcome::rejected_older_version);
  // Missing d tag = empty d; a second tag named d does not count.
  EXPECT_EQ(write(unsigned_event(5, 7, 100, 30617)), WriteOutcome::stored);
  EXPECT_EQ(write(unsigned_event(6, 7, 101, 30617, {{"x", "y"}, {"d", ""}, {"d", "repo"}})),
            WriteOutcome::replaced_older);
  EXPECT_EQ(all(), (Ids{id(3), id(6), id(2)}));
  // Equal created_at: lowest id wins.
  EXPECT_EQ(write(unsigned_event(0, 7, 101, 30617, {{"d", "repo"}})), WriteOutcome::replaced_older);
  EXPECT_FALSE(store_->contains(id(3)));
}

// exists() answers what a limit:1 query answers; address lookups read the current version from
// the heads index and fall back to the scan for a `d` that is not the event's first.
TEST_F(EventStoreTest, ExistsAgreesWithTheQueryForAddressesIdsAndTags) {
  auto exp = [](std::int64_t t) { return nostr::Tag{"expiration", std::to_string(t)}; };
  ASSERT_EQ(write(unsigned_event(1, 7, 100, 30617, {{"d", "repo"}})), WriteOutcome::stored);
  ASSERT_EQ(write(unsigned_event(2, 7, 100, 30617, {{"d", "first"}, {"d", "second"}})),
            WriteOutcome::stored);
  ASSERT_EQ(write(unsigned_event(3, 7, 100, 10002)), WriteOutcome::stored);
  ASSERT_EQ(write(unsigned_event(4, 7, 100, 30618, {{"d", "soon"}, exp(now_ + 5)})),
            WriteOutcome::stored);
  ASSERT_EQ(write(unsigned_event(5, 8, 100, 1621, {{"a", address(30617, 7, "repo")}})),
            WriteOutcome::stored);
  auto addressed = [&](std::uint32_t kind, std::uint64_t who, std::vector<std::string> d) {
    nostr::Filter f;
    f.kinds = std::vector<std::uint32_t>{kind};
    f.authors = std::vector<nostr::Pubkey>{author(who)};
    if (!d.empty()) f.tags['d'] = std::move(d);
    return f;
  };
  auto by_id = [&](std::uint64_t n) {
    nostr::Filter f;
    f.ids = std::vector<nostr::EventId>{id(n)};
    return f;
  };
  nostr::Filter tagged;
  tagged.tags['a'] = {address(30617, 7, "repo")};
  nostr::Filter since_later = addressed(30617, 7, {"repo"});
  since_later.since = 101;
  nostr::Filter none = addressed(30617, 7, {"repo"});
  none.limit = 0;
  const std::vector<std::pair<nostr::Filter, bool>> cases{
      {addressed(30617, 7, {"repo"}), true},           // heads
      {addressed(30617, 7, {"other", "repo"}), true},  // heads, second value
      {addressed(30617, 7, {"second"}), true},         // not its first d: the scan finds it
      {addressed(30617, 7, {"missing"}), false},       // neither
      {addressed(30617, 8, {"repo"}), false},          // another author
      {addressed(10002, 7, {}), true},                 // replaceable: no d
      {addressed(30618, 7, {"soon"}), true},           // not expired yet
      {since_later, false},                            // the head must match the whole filter
      {none, false},                                   // limit 0
      {by_id(5), true},
      {by_id(9), false},
      {tagged, true},
  };
  for (std::size_t i = 0; i < cases.size(); ++i) {
    auto f = cases[i].first;
    f.normalize();
    EXPECT_EQ(store_->exists({f}), cases[i].second) << "case " << i;
    auto limited = f;
    if (!limited.limit) limited.limit = 1;
    EXPECT_EQ(!query(limited).empty(), cases[i].second) << "case " << i << " (query)";
  }
  EXPECT_TRUE(store_->exists({addressed(30617, 7, {"missing"}), by_id(5)}));
  EXPECT_FALSE(store_->exists({}));
  now_ += 10;  // the head of 30618:7:soon expired
  EXPECT_FALSE(store_->exists({addressed(30618, 7, {"soon"})}));
}

TEST_F(EventStoreTest, AddressableWithLongDTagIsExact) {
  std::string long_a(300, 'a'), long_b = std::string(299, 'a') + "b";
  EXPECT_EQ(write(unsigned_event(1, 7, 100, 30000, {{"d", long_a}})), WriteOutcome::stored);
  EXPECT_EQ(write(unsigned_event(2, 7, 100, 30000, {{"d", long_b}})), WriteOutcome::stored);
  EXPECT_EQ(write(unsigned_event(3, 7, 101, 30000, {{"d", long_a}})), WriteOutcome::replaced_older);
  EXPECT_EQ(all(), (Ids{id(3), id(2)}));
}

TEST_F(EventStoreTest, EphemeralNeverStored) {
  EXPECT_EQ(write(unsigned_event(1, 7, 100, 20000)), WriteOutcome::ephemeral_not_stored);
  EXPECT_EQ(write(unsigned_event(2, 7, 100, 29999)), WriteOutcome::ephemeral_not_stored);
  EXPECT_EQ(store_->size(), 0u);
  EXPECT_FALSE(store_->contains(id(1)));
}

TEST_F(EventStoreTest, DeletionByIdRemovesOwnEventsOnly) {
  write(unsigned_event(1, 7, 100, 1));
  write(unsigned_event(2, 8, 100, 1));
  EXPECT_EQ(write(unsigned_event(3, 7, 200, 5, {{"e", hex_id(1)}, {"e", hex_id(2)}})),
            WriteOutcome::stored);
  EXPECT_FALSE(store_->contains(id(1)));
  EXPECT_TRUE(store_->contains(id(2))) << "deletion by another author must be ignored";
  EXPECT_TRUE(store_->contains(id(3))) << "the deletion request itself is stored";
  EXPECT_EQ(write(unsigned_event(1, 7, 100, 1)), WriteOutcome::deleted);
  EXPECT_EQ(write(unsigned_event(2, 8, 100, 1)), WriteOutcome::duplicate);
}

TEST_F(EventStoreTest, DeletionBeforeTheEventArrivesRefusesIt) {
  write(unsigned_event(3, 7, 200, 5, {{"e", hex_id(1)}, {"e", hex_id(2)}}));
  EXPECT_EQ(write(unsigned_event(1, 7, 100, 1)), WriteOutcome::deleted);
  // Same id but another author cannot exist for real; a foreign deletion does not block.
  EXPECT_EQ(write(unsigned_event(2, 8, 100, 1)), WriteOutcome::stored);
}

TEST_F(EventStoreTest, DeletingADeletionHasNoEffect) {
  write(unsigned_event(1, 7, 100, 1));
  write(unsigned_event(2, 7, 110, 5, {{"e", hex_id(1)}}));
  write(unsigned_event(3, 7, 120, 5, {{"e", hex_id(2)}}));
  EXPECT_TRUE(store_->contains(id(2)));
  EXPECT_FALSE(store_->contains(id(1)));
}

TEST_F(EventStoreTest, DeletionByAddressUpToItsCreatedAt) {
  write(unsigned_event(1, 7, 100, 30617, {{"d", "repo"}}));
  EXPECT_EQ(write(unsigned_event(9, 7, 150, 5, {{"a", address(30617, 7, "repo")}})),
            WriteOutcome::stored);
  EXPECT_FALSE(store_->contains(id(1)));
  // Versions up to the deletion's created_at are refused, later ones accepted.
  EXPECT_EQ(write(unsigned_event(2, 7, 150, 30617, {{"d", "repo"}})), WriteOutcome::deleted);
  EXPECT_EQ(write(unsigned_event(3, 7, 151, 30617, {{"d", "repo"}})), WriteOutcome::stored);
}

TEST_F(EventStoreTest, DeletionDoesNotRemoveALaterVersion) {
  write(unsigned_event(1, 7, 300, 30617, {{"d", "repo"}}));
  write(unsigned_event(9, 7, 200, 5, {{"a", address(30617, 7, "repo")}}));
  EXPECT_TRUE(store_->contains(id(1)));
  // A replaceable kind with an empty d.
  write(unsigned_event(2, 7, 100, 10002));
  write(unsigned_event(8, 7, 200, 5, {{"a", address(10002, 7, "")}}));
  EXPECT_FALSE(store_->contains(id(2)));
  EXPECT_EQ(write(unsigned_event(4, 7, 200, 10002)), WriteOutcome::deleted);
  EXPECT_EQ(write(unsigned_event(5, 7, 201, 10002)), WriteOutcome::stored);
}

TEST_F(EventStoreTest, DeletionByAddressOfAnotherAuthorIgnored) {
  write(unsigned_event(1, 7, 100, 30617, {{"d", "repo"}}));
  write(unsigned_event(9, 8, 150, 5, {{"a", address(30617, 7, "repo")}}));
  EXPECT_TRUE(store_->contains(id(1)));
  EXPECT_EQ(write(unsigned_event(2, 7, 120, 30617, {{"d", "repo"}})), WriteOutcome::replaced_older);
}

TEST_F(EventStoreTest, DeletionByAddressWithAKindPastUint32DeletesNothing) {
  write(unsigned_event(1, 7, 100, 30617, {{"d", "repo"}}));
  // 4294997913 = 2^32 + 30617: a kind that does not fit 32 bits must not wrap to 30617.
  EXPECT_EQ(write(unsigned_event(9, 7, 150, 5,
                                 {{"a", "4294997913:" + nostr::to_hex(author(7)) + ":repo"}})),
            WriteOutcome::stored);
  EXPECT_TRUE(store_->contains(id(1)));
  EXPECT_EQ(write(unsigned_event(2, 7, 120, 30617, {{"d", "repo"}})), WriteOutcome::replaced_older);
}

TEST_F(EventStoreTest, MalformedDeletionTagsAreIgnored) {
  write(unsigned_event(1, 7, 100, 1));
  EXPECT_EQ(write(unsigned_event(9, 7, 150, 5,
                                 {{"e"},
                                  {"e", "zz"},
                                  {"a", "x"},
                                  {"a", "1:zz:"},
                                  {"a", "::"},
                                  {"a", "99999999999:" + nostr::to_hex(author(7)) + ":"}})),
            WriteOutcome::stored);
  EXPECT_TRUE(store_->contains(id(1)));
}

TEST_F(EventStoreTest, ExpiredEventsRefusedHiddenAndSwept) {
  auto exp = [](std::int64_t t) { return nostr::Tag{"expiration", std::to_string(t)}; };
  EXPECT_EQ(write(unsigned_event(1, 7, 100, 1, {exp(now_ - 1)})), WriteOutcome::expired);
  EXPECT_EQ(write(unsigned_event(2, 7, 100, 1, {exp(now_)})), WriteOutcome::expired);
  EXPECT_EQ(write(unsigned_event(3, 7, 100, 1, {exp(now_ + 10)})), WriteOutcome::stored);
  EXPECT_EQ(write(unsigned_event(4, 7, 100, 1, {exp(now_ + 100)})), WriteOutcome::stored);
  EXPECT_EQ(write(unsigned_event(5, 7, 100, 1, {{"expiration", "garbage"}})), WriteOutcome::stored);
  EXPECT_EQ(all().size(), 3u);
  now_ += 10;  // event 3 now expired: hidden at once, before any sweep
  EXPECT_EQ(all(), (Ids{id(4), id(5)}));
  EXPECT_FALSE(store_->get(id(3)));
  nostr::Filter f;
  f.kinds = std::vector<std::uint32_t>{1};
  EXPECT_EQ(store_->count({f}), 2u);
  EXPECT_EQ(store_->size(), 3u);
  EXPECT_EQ(store_->sweep_expired(now_), 1u);
  EXPECT_EQ(store_->size(), 2u);
  EXPECT_EQ(store_->sweep_expired(now_ + 1000), 1u);
  EXPECT_EQ(all(), Ids{id(5)});
  // Swept events can be re-submitted only if not expired: they are refused.
  EXPECT_EQ(write(unsigned_event(3, 7, 100, 1, {exp(now_)})), WriteOutcome::expired);
}

TEST_F(EventStoreTest, LimitOrdersNewestFirstThenLowestId) {
  write(unsigned_event(5, 1, 100, 1));
  write(unsigned_event(3, 1, 100, 1));
  write(unsigned_event(4, 1, 200, 1));
  write(unsigned_event(1, 1, 50, 1));
  write(unsigned_event(2, 1, 100, 1));
  nostr::Filter f;
  f.limit = 3;
  EXPECT_EQ(query(f), (Ids{id(4), id(2), id(3)}));
  f.limit = 0;
  EXPECT_TRUE(query(f).empty());
  f.limit.reset();
  EXPECT_EQ(query(f, 2), (Ids{id(4), id(2)})) << "max_limit caps a filter without limit";
  f.limit = 100;
  EXPECT_EQ(query(f, 2).size(), 2u) << "max_limit caps a larger limit";
}

TEST_F(EventStoreTest, SinceUntilInclusive) {
  for (int i = 1; i <= 5; ++i) write(unsigned_event(i, 1, 100 + i, 1));
  nostr::Filter f;
  f.since = 102;
  f.until = 104;
  EXPECT_EQ(query(f), (Ids{id(4), id(3), id(2)}));
  f.kinds = std::vector<std::uint32_t>{1};
  EXPECT_EQ(query(f), (Ids{id(4), id(3), id(2)}));
  f.since = 105;
  f.until = 104;
  EXPECT_TRUE(query(f).empty());
}

TEST_F(EventStoreTest, MultipleFiltersDeduplicated) {
  write(unsigned_event(1, 1, 100, 1, {{"t", "a"}}));
  write(unsigned_event(2, 2, 101, 1, {{"t", "b"}}));
  nostr::Filter by_tag;
  by_tag.tags['t'] = {"a", "b"};
  nostr::Filter by_author;
  by_author.authors = std::vector<nostr::Pubkey>{author(1)};
  std::vector<nostr::EventId> out;
  store_->query({by_tag, by_author}, [&](const QueryHit& h) { out.push_back(h.id); });
  EXPECT_EQ(out, (Ids{id(2), id(1)}));
  EXPECT_EQ(store_->count({by_tag, by_author}), 2u);
}

TEST_F(EventStoreTest, AnswerReferencesLoadLaterInTheQueryOrderSkippingWhatIsGone) {
  for (std::uint64_t n = 1; n <= 6; ++n)
    write(unsigned_event(n, n % 2 + 1, 100 + static_cast<std::int64_t>(n), 1, {{"t", "a"}}));
  nostr::Filter by_tag;
  by_tag.tags['t'] = {"a"};
  nostr::Filter by_author;
  by_author.authors = std::vector<nostr::Pubkey>{author(1)};
  const nostr::Filters filters{by_tag, by_author};
  Ids streamed;
  const auto horizon = store_->query(filters, [&](const QueryHit& h) { streamed.push_back(h.id); });

  Ids first;
  auto answer = store_->query_refs(filters, {}, [&](const AnswerRef& ref, std::string_view json) {
    first.push_back(ref.id);
    EXPECT_EQ(json, *store_->get(ref.id));
    return first.size() < 2;
  });
  EXPECT_EQ(answer.horizon, horizon);
  EXPECT_EQ(answer.loaded, 2u);
  Ids refs;
  for (const auto& ref : answer.refs) refs.push_back(ref.id);
  EXPECT_EQ(refs, streamed) << "same selection, same order, deduplicated";
  EXPECT_EQ(first, (Ids{id(6), id(5)}));

  // The author deletes event 4 before the rest is loaded: it is skipped, the others follow.
  write(unsigned_event(9, 1, 300, 5, {{"e", hex_id(4)}}));
  Ids later;
  auto rest = std::span<const AnswerRef>(answer.refs).subspan(answer.loaded);
  EXPECT_EQ(store_->load_answer(rest,
                                [&](const AnswerRef& ref, std::string_view) {
                                  later.push_back(ref.id);
                                  return later.size() < 2;
                                }),
            3u)
      << "4 skipped, 3 and 2 loaded, then stopped";
  EXPECT_EQ(later, (Ids{id(3), id(2)}));
}

TEST_F(EventStoreTest, LongTagValuesMatchExactly) {
  std::string long_a(400, 'a'), long_b = std::string(399, 'a') + "b";
  write(unsigned_event(1, 1, 100, 1, {{"r", long_a}}));
  write(unsigned_event(2, 1, 100, 1, {{"r", long_b}}));
  nostr::Filter f;
  f.tags['r'] = {long_b};
  EXPECT_EQ(query(f), Ids{id(2)});
}

TEST_F(EventStoreTest, ReopenKeepsEverything) {
  write(unsigned_event(1, 1, 100, 1));
  write(unsigned_event(2, 1, 100, 0));
  store_.reset();
  store_ = std::make_unique<EventStore>(test::options_for(dir_, &now_));
  EXPECT_EQ(all(), (Ids{id(1), id(2)}));
  EXPECT_EQ(write(unsigned_event(3, 1, 101, 0)), WriteOutcome::replaced_older);
  EXPECT_EQ(write(unsigned_event(2, 1, 100, 0)), WriteOutcome::rejected_older_version);
}

TEST_F(EventStoreTest, SchemaVersionMismatchIsRefused) {
  store_.reset();
  {
    MDB_env* env;
    ASSERT_EQ(mdb_env_create(&env), 0);
    mdb_env_set_maxdbs(env, 16);
    ASSERT_EQ(mdb_env_open(env, dir_.path().c_str(), 0, 0644), 0);
    MDB_txn* txn;
    MDB_dbi dbi;
    ASSERT_EQ(mdb_txn_begin(env, nullptr, 0, &txn), 0);
    ASSERT_EQ(mdb_dbi_open(txn, "meta", 0, &dbi), 0);
    std::string key = "schema_version", value = "999";
    MDB_val k{key.size(), key.data()}, v{value.size(), value.data()};
    ASSERT_EQ(mdb_put(txn, dbi, &k, &v, 0), 0);
    ASSERT_EQ(mdb_txn_commit(txn), 0);
    mdb_env_close(env);
  }
  try {
    EventStore reopened(test::options_for(dir_, &now_));
    FAIL() << "a store with another schema version must not open";
  } catch (const StoreError& e) {
    EXPECT_NE(std::string(e.what()).find("schema version 999"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("supports only version " + std::to_string(kSchemaVersion)),
              std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("graspd export"), std::string::npos) << e.what();
  }
}

TEST_F(EventStoreTest, UnopenablePathGivesClearError) {
  auto file = dir_.path() / "a-file";
  { std::ofstream(file) << "x"; }
  StoreOptions options;
  options.path = file / "sub";
  EXPECT_THROW(EventStore{options}, StoreError);
}

TEST(EventStoreMapTest, MapGrowsWhenFull) {
  TempDir dir;
  StoreOptions options;
  options.path = dir.path();
  options.initial_map_size = 256 * 1024;
  options.durable = false;
  EventStore store(options);
  std::size_t initial = store.map_size();
  std::vector<EventPtr> batch;
  for (int i = 0; i < 3000; ++i)
    batch.push_back(
        unsigned_event(i + 1, i % 10, 1000 + i, 1, {{"t", "topic"}}, std::string(200, 'x')));
  auto outcomes = store.write_batch(batch);
  for (auto o : outcomes) ASSERT_EQ(o, WriteOutcome::stored) << store.last_error();
  EXPECT_GT(store.map_size(), initial);
  EXPECT_EQ(store.size(), 3000u);
  nostr::Filter f;
  f.tags['t'] = {"topic"};
  EXPECT_EQ(store.count({f}), 3000u);
}

TEST(EventStoreMapTest, MapFullAtCeilingFailsCleanly) {
  TempDir dir;
  StoreOptions options;
  options.path = dir.path();
  options.initial_map_size = 128 * 1024;
  options.max_map_size = 256 * 1024;
  EventStore store(options);
  std::vector<EventPtr> small{unsigned_event(1, 1, 1, 1)};
  ASSERT_EQ(store.write_batch(small)[0], WriteOutcome::stored);
  std::vector<EventPtr> batch;
  for (int i = 0; i < 3000; ++i)
    batch.push_back(unsigned_event(i + 10, 1, 1000 + i, 1, {}, std::string(500, 'x')));
  auto outcomes = store.write_batch(batch);
  for (auto o : outcomes) EXPECT_EQ(o, WriteOutcome::error);
  EXPECT_NE(store.last_error().find("store full"), std::string::npos) << store.last_error();
  // Nothing of the failed batch was committed and the store still works.
  EXPECT_EQ(store.size(), 1u);
  EXPECT_TRUE(store.contains(test::bytes_of(1, 0xee)));
  std::vector<EventPtr> after{unsigned_event(2, 1, 2, 1)};
  EXPECT_EQ(store.write_batch(after)[0], WriteOutcome::stored);
}

/// Another process (a forked child with its own LMDB environment, as `graspd sync` beside the
/// daemon) writes 3000 events into the store at `path` from a small map, growing it. Returns the
/// child's exit code: 0 when everything was stored.
int grow_from_another_process(const std::filesystem::path& path) {
  pid_t pid = ::fork();
  if (pid == 0) {
    int code = 3;
    try {
      StoreOptions options;
      options.path = path;
      options.initial_map_size = 256 * 1024;
      options.durable = false;
      EventStore other(options);
      std::vector<EventPtr> batch;
      for (int i = 0; i < 3000; ++i)
        batch.push_back(unsigned_event(i + 100, 2, 1000 + i, 1, {}, std::string(300, 'y')));
      code = 0;
      for (auto o : other.write_batch(batch)) code |= o == WriteOutcome::stored ? 0 : 1;
    } catch (...) {
      code = 2;
    }
    ::_exit(code);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

StoreOptions small_map(const TempDir& dir) {
  StoreOptions options;
  options.path = dir.path();
  options.initial_map_size = 256 * 1024;
  options.durable = false;
  return options;
}

/// Writes one event, notes the map size in `before`, then lets another process grow the map.
void write_then_grow_elsewhere(EventStore& store, const TempDir& dir, std::size_t& before) {
  std::vector<EventPtr> first{unsigned_event(1, 1, 1, 1)};
  ASSERT_EQ(store.write_batch(first)[0], WriteOutcome::stored);
  before = store.map_size();
  ASSERT_EQ(grow_from_another_process(dir.path()), 0);
}

TEST(EventStoreMapTest, AReadAdoptsTheMapAnotherProcessGrew) {
  TempDir dir;
  EventStore store(small_map(dir));
  std::size_t before = 0;
  ASSERT_NO_FATAL_FAILURE(write_then_grow_elsewhere(store, dir, before));
  // The read transaction meets MDB_MAP_RESIZED, adopts the new size and sees every event.
  EXPECT_EQ(store.size(), 3001u);
  EXPECT_GT(store.map_size(), before);
  EXPECT_TRUE(store.contains(test::bytes_of(3099, 0xee)));
  std::vector<EventPtr> after{unsigned_event(2, 1, 2, 1)};
  EXPECT_EQ(store.write_batch(after)[0], WriteOutcome::stored) << store.last_error();
}

TEST(EventStoreMapTest, AWriteAdoptsTheMapAnotherProcessGrew) {
  TempDir dir;
  EventStore store(small_map(dir));
  std::size_t before = 0;
  ASSERT_NO_FATAL_FAILURE(write_then_grow_elsewhere(store, dir, before));
  // The write transaction meets MDB_MAP_RESIZED first: adopted, then committed.
  std::vector<EventPtr> after{unsigned_event(2, 1, 2, 1)};
  EXPECT_EQ(store.write_batch(after)[0], WriteOutcome::stored) << store.last_error();
  EXPECT_GT(store.map_size(), before);
  EXPECT_EQ(store.size(), 3002u);
}

TEST(EventStoreOkMessages, PrefixesAndAcceptance) {
  EXPECT_TRUE(is_accepted(WriteOutcome::stored));
  EXPECT_TRUE(is_accepted(WriteOutcome::duplicate));
  EXPECT_FALSE(is_accepted(WriteOutcome::deleted));
  EXPECT_FALSE(is_accepted(WriteOutcome::expired));
  EXPECT_FALSE(is_accepted(WriteOutcome::error));
  EXPECT_EQ(ok_message(WriteOutcome::duplicate).substr(0, 10), "duplicate:");
  EXPECT_EQ(ok_message(WriteOutcome::error).substr(0, 6), "error:");
  EXPECT_EQ(ok_message(WriteOutcome::expired).substr(0, 8), "invalid:");
}

// NIP-62: a request to vanish naming this relay (NGIT_DOMAIN 127.0.0.1:7334 here) or ALL_RELAYS.
class VanishTest : public EventStoreTest {
 protected:
  VanishTest() {
    store_.reset();
    auto options = test::options_for(dir_, &now_);
    options.service = HostPort{"relay.example.com", std::nullopt};
    store_ = std::make_unique<EventStore>(options);
  }
  static EventPtr vanish(std::uint64_t n, std::uint64_t who, std::int64_t created_at,
                         const std::string& relay) {
    return unsigned_event(n, who, created_at, 62, {{"relay", relay}}, "gone");
  }
};

TEST_F(VanishTest, DeletesTheAuthorsEventsUpToItsCreatedAt) {
  write(unsigned_event(1, 7, 100, 1));
  write(unsigned_event(2, 7, 200, 30617, {{"d", "repo"}}));
  write(unsigned_event(3, 7, 150, 5, {{"e", hex_id(1)}}));  // deletions go too
  write(unsigned_event(4, 7, 400, 1));                      // newer than the request: stays
  write(unsigned_event(5, 8, 100, 1));                      // another author: stays
  EXPECT_EQ(write(vanish(9, 7, 300, "wss://relay.example.com")), WriteOutcome::stored);
  EXPECT_EQ(all(), (Ids{id(4), id(9), id(5)}));
  // The request is kept (bookkeeping, and so that peers learn it).
  EXPECT_TRUE(store_->contains(id(9)));
}

TEST_F(VanishTest, RefusesTheAuthorsOlderEventsAfterwards) {
  write(vanish(9, 7, 300, "ALL_RELAYS"));
  EXPECT_EQ(write(unsigned_event(1, 7, 300, 1)), WriteOutcome::deleted);
  EXPECT_EQ(write(unsigned_event(2, 7, 10, 30617, {{"d", "repo"}})), WriteOutcome::deleted);
  EXPECT_EQ(write(vanish(8, 7, 200, "ALL_RELAYS")), WriteOutcome::deleted);
  EXPECT_EQ(write(unsigned_event(3, 7, 301, 1)), WriteOutcome::stored);
  EXPECT_EQ(write(unsigned_event(4, 8, 100, 1)), WriteOutcome::stored);
  // A later request moves the horizon on.
  EXPECT_EQ(write(vanish(10, 7, 500, "ALL_RELAYS")), WriteOutcome::stored);
  EXPECT_FALSE(store_->contains(id(3)));
  EXPECT_FALSE(store_->contains(id(9)));
  EXPECT_EQ(write(unsigned_event(5, 7, 450, 1)), WriteOutcome::deleted);
}

TEST_F(VanishTest, SurvivesAReopen) {
  write(vanish(9, 7, 300, "ALL_RELAYS"));
  store_.reset();
  auto options = test::options_for(dir_, &now_);
  store_ = std::make_unique<EventStore>(options);
  EXPECT_EQ(write(unsigned_event(1, 7, 200, 1)), WriteOutcome::deleted);
}

TEST_F(VanishTest, ARequestNamingAnotherRelayIsAPlainEvent) {
  write(unsigned_event(1, 7, 100, 1));
  std::uint64_t n = 20;
  for (auto relay : {"wss://other.example.com", "wss://relay.example.com.evil.net",
                     "wss://relay.example.com:8443", "https://relay.example.com", "all_relays",
                     "relay.example.com", ""}) {
    EXPECT_EQ(write(vanish(n++, 7, 300, relay)), WriteOutcome::stored) << relay;
    EXPECT_TRUE(store_->contains(id(1))) << relay;
  }
  EXPECT_EQ(write(unsigned_event(2, 7, 200, 1)), WriteOutcome::stored);
}

TEST_F(VanishTest, RelayUrlsCompareParsed) {
  write(unsigned_event(1, 7, 100, 1));
  write(unsigned_event(2, 8, 100, 1));
  write(unsigned_event(3, 9, 100, 1));
  write(vanish(11, 7, 300, "WSS://Relay.Example.COM:443/"));
  write(unsigned_event(
      12, 8, 300, 62,
      {{"relay", "wss://other.example.com"}, {"relay", "wss://relay.example.com/some/path"}}));
  write(vanish(13, 9, 300, "wss://relay.example.com:8443"));  // another port: another service
  EXPECT_FALSE(store_->contains(id(1)));
  EXPECT_FALSE(store_->contains(id(2)));
  EXPECT_TRUE(store_->contains(id(3)));
}

TEST_F(VanishTest, ADeletionAgainstARequestHasNoEffect) {
  write(vanish(9, 7, 300, "ALL_RELAYS"));
  EXPECT_EQ(write(unsigned_event(10, 7, 400, 5, {{"e", hex_id(9)}})), WriteOutcome::stored);
  EXPECT_TRUE(store_->contains(id(9)));
  EXPECT_EQ(write(unsigned_event(1, 7, 200, 1)), WriteOutcome::deleted);
  // Nor does one sent before the request arrives.
  write(unsigned_event(11, 8, 400, 5, {{"e", hex_id(12)}}));
  EXPECT_EQ(write(vanish(12, 8, 300, "ALL_RELAYS")), WriteOutcome::stored);
}

TEST_F(VanishTest, WithoutAServiceOnlyAllRelaysCounts) {
  store_.reset();
  store_ = std::make_unique<EventStore>(test::options_for(dir_, &now_));
  write(unsigned_event(1, 7, 100, 1));
  write(vanish(9, 7, 300, "wss://relay.example.com"));
  EXPECT_TRUE(store_->contains(id(1)));
  write(vanish(10, 7, 300, "ALL_RELAYS"));
  EXPECT_FALSE(store_->contains(id(1)));
}

TEST_F(VanishTest, ManyEventsInOneRequest) {
  std::vector<EventPtr> batch;
  for (std::uint64_t n = 1; n <= 2000; ++n)
    batch.push_back(unsigned_event(n, 7, static_cast<std::int64_t>(n), 1));
  store_->write_batch(batch);
  EXPECT_EQ(write(vanish(5000, 7, 1500, "ALL_RELAYS")), WriteOutcome::stored);
  EXPECT_EQ(store_->size(), 501u);
}

}  // namespace
}  // namespace graspd::store
