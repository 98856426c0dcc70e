// The git process cap's line: requests beyond the cap wait, oldest first, and a freed slot passes
// straight to the oldest waiter allowed one; one address holds at most its share.
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
  EXPECT_EQ(slots.take_or_queue("ip", waiter("a")), Grant::taken);
  EXPECT_EQ(slots.take_or_queue("ip", waiter("b")), Grant::taken);
  EXPECT_EQ(slots.take_or_queue("ip", waiter("c")), Grant::queued);
  EXPECT_EQ(slots.take_or_queue("ip", waiter("d")), Grant::queued);
  EXPECT_EQ(slots.take_or_queue("ip", waiter("e")), Grant::queued);
  EXPECT_EQ(slots.take_or_queue("ip", waiter("f")), Grant::full) << "the line is bounded";
  EXPECT_TRUE(served.empty()) << "a slot taken at once runs no callback";
  EXPECT_EQ(slots.waiting(), 3u);

  EXPECT_TRUE(slots.give("ip"));
  EXPECT_EQ(served, std::vector<std::string>{"c"});
  EXPECT_EQ(slots.running(), 2u) << "the slot passed on, it was never free";
  EXPECT_TRUE(slots.give("ip"));
  EXPECT_TRUE(slots.give("ip"));
  EXPECT_EQ(served, (std::vector<std::string>{"c", "d", "e"}));
  EXPECT_FALSE(slots.give("ip")) << "nobody waits: the slot is free";
  EXPECT_EQ(slots.running(), 1u);
}

TEST(GitProcessSlots, ANewcomerDoesNotOvertakeTheLine) {
  ProcessSlots slots(1, 4);
  int served = 0;
  EXPECT_EQ(slots.take_or_queue("ip", [] {}), Grant::taken);
  EXPECT_EQ(slots.take_or_queue("ip", [&] { ++served; }), Grant::queued);
  // The slot goes to the waiter inside give(), before anyone else can ask.
  EXPECT_TRUE(slots.give("ip"));
  EXPECT_EQ(served, 1);
  EXPECT_EQ(slots.take_or_queue("ip", [] {}), Grant::queued);
}

TEST(GitProcessSlots, WithoutALineTheCapRefusesAtOnce) {
  ProcessSlots slots(1, 0);
  EXPECT_EQ(slots.take_or_queue("ip", [] {}), Grant::taken);
  EXPECT_EQ(slots.take_or_queue("ip", [] {}), Grant::full);
}

TEST(GitProcessSlots, ClearedWaitersAreNeverCalled) {
  ProcessSlots slots(1, 4);
  bool called = false;
  EXPECT_EQ(slots.take_or_queue("ip", [] {}), Grant::taken);
  EXPECT_EQ(slots.take_or_queue("ip", [&] { called = true; }), Grant::queued);
  slots.clear_waiters();
  EXPECT_FALSE(slots.give("ip"));
  EXPECT_FALSE(called);
  EXPECT_EQ(slots.running(), 0u);
}

TEST(GitProcessSlots, OneAddressHoldsAtMostItsShareWhileOthersAreServed) {
  ProcessSlots slots(4, 8, 1);
  std::vector<std::string> served;
  auto waiter = [&](std::string name) { return [&served, name] { served.push_back(name); }; };
  EXPECT_EQ(slots.take_or_queue("attacker", waiter("a1")), Grant::taken);
  EXPECT_EQ(slots.take_or_queue("attacker", waiter("a2")), Grant::queued) << "beyond its share";
  EXPECT_EQ(slots.take_or_queue("attacker", waiter("a3")), Grant::queued);
  // Three slots are free: the victim is not held behind the attacker's waiting requests.
  EXPECT_EQ(slots.take_or_queue("victim", waiter("v1")), Grant::taken);
  EXPECT_EQ(slots.running(), 2u);
  EXPECT_EQ(slots.running("attacker"), 1u);
  // The victim's slot freed: no waiter may have it (the attacker is at its share), so it is free.
  EXPECT_FALSE(slots.give("victim"));
  EXPECT_TRUE(served.empty());
  // The attacker's own slot freed: its oldest waiting request takes it.
  EXPECT_TRUE(slots.give("attacker"));
  EXPECT_EQ(served, std::vector<std::string>{"a2"});
  EXPECT_EQ(slots.running("attacker"), 1u);
  EXPECT_EQ(slots.running(), 1u);
}

TEST(GitProcessSlots, AWaiterWithinItsShareIsNotOvertakenByANewcomer) {
  ProcessSlots slots(1, 8, 1);
  std::vector<std::string> served;
  auto waiter = [&](std::string name) { return [&served, name] { served.push_back(name); }; };
  EXPECT_EQ(slots.take_or_queue("a", waiter("a1")), Grant::taken);
  EXPECT_EQ(slots.take_or_queue("b", waiter("b1")), Grant::queued) << "the cap, not the share";
  EXPECT_TRUE(slots.give("a"));
  EXPECT_EQ(served, std::vector<std::string>{"b1"});
  EXPECT_EQ(slots.take_or_queue("c", waiter("c1")), Grant::queued);
  EXPECT_EQ(slots.running("b"), 1u);
}

}  // namespace
}  // namespace graspd::runtime::git
