// The git process cap's line: requests beyond the cap wait, oldest first, and a freed slot passes
// straight to the oldest waiter.
#include "runtime/git/git_process_slots.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace graspd::runtime::git {
namespace {

using Grant = ProcessSlots::Grant;

TEST(GitProcessSlots, BeyondTheCapRequestsWaitAndAreServedOldestFirst) {
  ProcessSlots slots(2, 3);
  std::vector<std::string> served;
  auto waiter = [&](std::string name) { return [&served, name] { served.push_back(name); }; };
  EXPECT_EQ(slots.take_or_queue(waiter("a")), Grant::taken);
  EXPECT_EQ(slots.take_or_queue(waiter("b")), Grant::taken);
  EXPECT_EQ(slots.take_or_queue(waiter("c")), Grant::queued);
  EXPECT_EQ(slots.take_or_queue(waiter("d")), Grant::queued);
  EXPECT_EQ(slots.take_or_queue(waiter("e")), Grant::queued);
  EXPECT_EQ(slots.take_or_queue(waiter("f")), Grant::full) << "the line is bounded";
  EXPECT_TRUE(served.empty()) << "a slot taken at once runs no callback";
  EXPECT_EQ(slots.waiting(), 3u);

  EXPECT_TRUE(slots.give());
  EXPECT_EQ(served, std::vector<std::string>{"c"});
  EXPECT_EQ(slots.running(), 2u) << "the slot passed on, it was never free";
  EXPECT_TRUE(slots.give());
  EXPECT_TRUE(slots.give());
  EXPECT_EQ(served, (std::vector<std::string>{"c", "d", "e"}));
  EXPECT_FALSE(slots.give()) << "nobody waits: the slot is free";
  EXPECT_EQ(slots.running(), 1u);
}

TEST(GitProcessSlots, ANewcomerDoesNotOvertakeTheLine) {
  ProcessSlots slots(1, 4);
  int served = 0;
  EXPECT_EQ(slots.take_or_queue([] {}), Grant::taken);
  EXPECT_EQ(slots.take_or_queue([&] { ++served; }), Grant::queued);
  // The slot goes to the waiter inside give(), before anyone else can ask.
  EXPECT_TRUE(slots.give());
  EXPECT_EQ(served, 1);
  EXPECT_EQ(slots.take_or_queue([] {}), Grant::queued);
}

TEST(GitProcessSlots, WithoutALineTheCapRefusesAtOnce) {
  ProcessSlots slots(1, 0);
  EXPECT_EQ(slots.take_or_queue([] {}), Grant::taken);
  EXPECT_EQ(slots.take_or_queue([] {}), Grant::full);
}

TEST(GitProcessSlots, ClearedWaitersAreNeverCalled) {
  ProcessSlots slots(1, 4);
  bool called = false;
  EXPECT_EQ(slots.take_or_queue([] {}), Grant::taken);
  EXPECT_EQ(slots.take_or_queue([&] { called = true; }), Grant::queued);
  slots.clear_waiters();
  EXPECT_FALSE(slots.give());
  EXPECT_FALSE(called);
  EXPECT_EQ(slots.running(), 0u);
}

}  // namespace
}  // namespace graspd::runtime::git
