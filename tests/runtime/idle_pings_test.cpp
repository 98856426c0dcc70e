// The idle-ping rule on a clock of the test's own (runtime/net/engine/idle_pings.hpp).
#include "runtime/net/engine/idle_pings.hpp"

#include <gtest/gtest.h>

namespace graspd::runtime {
namespace {

using namespace std::chrono_literals;
using Step = IdlePings::Step;

const IdlePings::Clock::time_point opened{};

TEST(IdlePings, AChattyPeerIsNeverPingedAndTheCheckMovesWithWhatWasHeard) {
  IdlePings pings(1s, opened);
  pings.heard(opened + 700ms);
  const auto decision = pings.check(opened + 1s);
  EXPECT_EQ(decision.step, Step::wait);
  EXPECT_EQ(decision.next_check, opened + 1700ms);
}

TEST(IdlePings, ASilentPeerIsPingedAfterAnIntervalAndDroppedAfterOneMore) {
  IdlePings pings(1s, opened);
  const auto first = pings.check(opened + 1s);
  EXPECT_EQ(first.step, Step::ping);
  EXPECT_EQ(first.next_check, opened + 2s);
  EXPECT_EQ(pings.check(first.next_check).step, Step::drop);
}

// The case that dropped answering peers: the pong came 1 ms after the ping, and the check meant
// for one interval after the ping ran 5 ms late, 1,004 ms after the pong. The peer answered.
TEST(IdlePings, APeerThatAnsweredStaysHoweverLateTheCheckRuns) {
  IdlePings pings(1s, opened);
  const auto pinged = pings.check(opened + 1s);
  ASSERT_EQ(pinged.step, Step::ping);
  pings.heard(opened + 1001ms);
  const auto late = pings.check(pinged.next_check + 5ms);
  EXPECT_EQ(late.step, Step::ping)
      << "silent an interval since its pong: pinged again, not dropped";
  EXPECT_EQ(late.next_check, opened + 3005ms);
  pings.heard(opened + 2100ms);
  EXPECT_EQ(pings.check(late.next_check).step, Step::wait);
}

TEST(IdlePings, AnAnswerBeforeTheCheckSetsTheNextCheckFromTheAnswer) {
  IdlePings pings(1s, opened);
  ASSERT_EQ(pings.check(opened + 1s).step, Step::ping);
  pings.heard(opened + 1200ms);
  const auto decision = pings.check(opened + 2s);
  EXPECT_EQ(decision.step, Step::wait);
  EXPECT_EQ(decision.next_check, opened + 2200ms);
}

TEST(IdlePings, WhatWasHeardBeforeThePingDoesNotAnswerIt) {
  IdlePings pings(1s, opened);
  pings.heard(opened + 100ms);
  ASSERT_EQ(pings.check(opened + 1100ms).step, Step::ping);
  pings.heard(opened + 50ms);  // an older time never moves the last frame back
  EXPECT_EQ(pings.last_heard(), opened + 100ms);
  EXPECT_EQ(pings.check(opened + 2100ms).step, Step::drop);
}

}  // namespace
}  // namespace graspd::runtime
