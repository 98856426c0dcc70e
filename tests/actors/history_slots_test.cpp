// HistorySlots: one pool of history REQ slots per connection, granted in arrival order whichever
// engine asked.
#include "actors/sync/engine/history_slots.hpp"

#include <gtest/gtest.h>

namespace graspd::sync {
namespace {

TEST(HistorySlots, WaitersAreGrantedInArrivalOrderWhicheverEngineAsked) {
  HistorySlots slots(2);
  const auto pages = slots.join();
  const auto fetches = slots.join();
  EXPECT_TRUE(slots.take(pages, "a"));
  EXPECT_TRUE(slots.take(fetches, "b"));
  EXPECT_FALSE(slots.take(fetches, "c"));
  EXPECT_FALSE(slots.take(pages, "d"));
  EXPECT_FALSE(slots.take(pages, "d")) << "queued once";
  EXPECT_EQ(slots.waiting(), 2u);
  EXPECT_FALSE(slots.grant()) << "no slot free";
  slots.give_back();
  EXPECT_FALSE(slots.grant(pages)) << "the fetch asked first";
  auto first = slots.grant();
  ASSERT_TRUE(first);
  EXPECT_EQ(first->user, fetches);
  EXPECT_EQ(first->id, "c");
  EXPECT_EQ(slots.in_use(), 2u);
  slots.give_back();
  EXPECT_EQ(slots.grant(pages), "d");
  EXPECT_EQ(slots.waiting(), 0u);
}

TEST(HistorySlots, ANewcomerWaitsBehindTheQueueEvenWithASlotFree) {
  HistorySlots slots(1);
  const auto user = slots.join();
  EXPECT_TRUE(slots.take(user, "a"));
  EXPECT_FALSE(slots.take(user, "b"));
  slots.give_back();
  EXPECT_FALSE(slots.take(user, "c")) << "b was first";
  EXPECT_EQ(slots.grant(user), "b");
  slots.forget(user, "c");
  slots.give_back();
  EXPECT_FALSE(slots.grant());
  EXPECT_EQ(slots.in_use(), 0u);
}

}  // namespace
}  // namespace graspd::sync
