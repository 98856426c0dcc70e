// The store's management lists (NIP-86): entries survive a reopen, removals stick, and a banned
// event leaves the events and its purgatory record in the same transaction.
#include <gtest/gtest.h>

#include <vector>

#include "store/lmdb/event_store.hpp"
#include "tests/store/store_test_util.hpp"

namespace graspd::store {
namespace {

using test::bytes_of;
using test::TempDir;
using test::unsigned_event;

std::vector<ModerationEntry> entries_of(const EventStore& store) {
  std::vector<ModerationEntry> out;
  store.for_each_moderation([&](const ModerationEntry& entry) { out.push_back(entry); });
  return out;
}

TEST(ModerationStore, ListEntriesSurviveAReopenAndRemovalsStick) {
  TempDir dir;
  {
    EventStore store(test::options_for(dir));
    StoreModeration changes;
    changes.puts = {{ModerationList::banned_pubkeys, bytes_of(1), "spam"},
                    {ModerationList::allowed_pubkeys, bytes_of(2), ""},
                    {ModerationList::banned_events, bytes_of(3), "illegal"}};
    store.apply_moderation(changes);
    store.apply_moderation({{}, {{ModerationList::allowed_pubkeys, bytes_of(2), ""}}, {}});
  }
  EventStore reopened(test::options_for(dir));
  auto entries = entries_of(reopened);
  ASSERT_EQ(entries.size(), 2u);
  // By list letter ('e' before 'p'), then key.
  EXPECT_EQ(entries[0].list, ModerationList::banned_events);
  EXPECT_EQ(entries[0].key, bytes_of(3));
  EXPECT_EQ(entries[0].reason, "illegal");
  EXPECT_EQ(entries[1].list, ModerationList::banned_pubkeys);
  EXPECT_EQ(entries[1].reason, "spam");
}

TEST(ModerationStore, ABannedEventLeavesTheStoreAndPurgatory) {
  TempDir dir;
  EventStore store(test::options_for(dir));
  auto stored = unsigned_event(1, 1, 1700000000, 1621);
  auto kept = unsigned_event(2, 1, 1700000001, 1621);
  std::vector<nostr::EventPtr> batch{stored, kept};
  store.write_batch(batch);
  auto held_id = bytes_of(9, 0xee);
  store.put_held(held_id, "held record");
  ASSERT_TRUE(store.contains(stored->id));

  StoreModeration ban;
  ban.puts = {{ModerationList::banned_events, stored->id, ""},
              {ModerationList::banned_events, held_id, ""}};
  ban.delete_events = {stored->id, held_id, bytes_of(77)};  // the last one is nowhere: no error
  store.apply_moderation(ban);

  EXPECT_FALSE(store.contains(stored->id));
  EXPECT_TRUE(store.contains(kept->id));
  EXPECT_EQ(store.count({nostr::Filter{}}), 1u);
  bool held_left = false;
  store.for_each_held([&](const nostr::EventId&, std::string_view) {
    held_left = true;
    return true;
  });
  EXPECT_FALSE(held_left);
  EXPECT_EQ(entries_of(store).size(), 2u);
}

}  // namespace
}  // namespace graspd::store
