// The maintenance queue of git hosting (actors/git/engine/maintenance_queue.*), pure: a repository
// is queued once however often it is written, is due an interval after the write that queued it
// and after its last run, runs one at a time oldest write first, and the queue is bounded.
#include "actors/git/engine/maintenance_queue.hpp"

#include <gtest/gtest.h>

namespace graspd::git {
namespace {

using namespace std::chrono_literals;
using Clock = MaintenanceQueue::Clock;

nostr::nip34::RepositoryRef repo(const std::string& identifier) {
  return {nostr::Pubkey{}, identifier};
}

TEST(MaintenanceQueue, ARepositoryWrittenOftenIsQueuedOnceAndDueAnIntervalAfterItsFirstWrite) {
  MaintenanceQueue queue(60s);
  auto t0 = Clock::time_point{} + 1000s;
  EXPECT_TRUE(queue.written(repo("a"), t0));
  EXPECT_TRUE(queue.written(repo("a"), t0 + 10s));
  EXPECT_EQ(queue.queued(), 1u);
  EXPECT_EQ(queue.next_due(), t0 + 60s);
  EXPECT_FALSE(queue.take(t0 + 59s));
  EXPECT_EQ(queue.take(t0 + 60s), repo("a"));
  EXPECT_EQ(queue.queued(), 0u);
}

TEST(MaintenanceQueue, OneRunsAtATimeOldestWriteFirst) {
  MaintenanceQueue queue(60s);
  auto t0 = Clock::time_point{} + 1000s;
  queue.written(repo("b"), t0);
  queue.written(repo("a"), t0 + 1s);
  auto later = t0 + 120s;
  EXPECT_EQ(queue.take(later), repo("b"));
  EXPECT_FALSE(queue.take(later)) << "b is running";
  EXPECT_FALSE(queue.next_due());
  queue.finished(later);
  EXPECT_EQ(queue.take(later), repo("a"));
}

TEST(MaintenanceQueue, ARepositoryIsNotDueAgainBeforeAnIntervalAfterItsLastRun) {
  MaintenanceQueue queue(60s);
  auto t0 = Clock::time_point{} + 1000s;
  queue.written(repo("a"), t0);
  ASSERT_TRUE(queue.take(t0 + 60s));
  queue.written(repo("a"), t0 + 61s);  // written while it ran
  queue.finished(t0 + 90s);
  EXPECT_EQ(queue.next_due(), t0 + 150s) << "an interval after the run ended";
  EXPECT_FALSE(queue.take(t0 + 149s));
  EXPECT_EQ(queue.take(t0 + 150s), repo("a"));
}

TEST(MaintenanceQueue, ARunThatFoundNoProcessIsQueuedAgain) {
  MaintenanceQueue queue(60s);
  auto t0 = Clock::time_point{} + 1000s;
  queue.written(repo("a"), t0);
  ASSERT_TRUE(queue.take(t0 + 60s));
  queue.finished(t0 + 60s, true);
  EXPECT_EQ(queue.queued(), 1u);
  EXPECT_EQ(queue.next_due(), t0 + 120s);
}

TEST(MaintenanceQueue, BeyondItsBoundNewRepositoriesAreDroppedAndCounted) {
  MaintenanceQueue queue(60s, 2);
  auto t0 = Clock::time_point{} + 1000s;
  EXPECT_TRUE(queue.written(repo("a"), t0));
  EXPECT_TRUE(queue.written(repo("b"), t0));
  EXPECT_FALSE(queue.written(repo("c"), t0));
  EXPECT_TRUE(queue.written(repo("a"), t0)) << "already queued";
  EXPECT_EQ(queue.queued(), 2u);
  EXPECT_EQ(queue.dropped(), 1u);
}

}  // namespace
}  // namespace graspd::git
