// FailedReplies alone: the first failure is logged at once, later ones at most once per interval
// with how many went unreported, and every one is counted.
#include "actors/ops/failed_replies.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "runtime/ops/log.hpp"

namespace graspd {
namespace {

using namespace std::chrono_literals;

class FailedRepliesTest : public ::testing::Test {
 protected:
  FailedRepliesTest() {
    log::set_sink([this](std::string_view line) { lines_.emplace_back(line); });
  }
  ~FailedRepliesTest() override { log::reset_sink(); }

  FailedReplies::time_point at(std::chrono::seconds offset) {
    return FailedReplies::time_point{} + std::chrono::hours(1) + offset;
  }

  std::vector<std::string> lines_;
};

TEST_F(FailedRepliesTest, TheFirstFailureIsLoggedAtOnceWithComponentRequestAndReason) {
  FailedReplies failures{"acceptance", "store write"};
  failures.report("system_error(request_receiver_down)", at(0s));
  ASSERT_EQ(lines_.size(), 1u);
  EXPECT_NE(lines_[0].find("WARN"), std::string::npos) << lines_[0];
  EXPECT_NE(
      lines_[0].find("[acceptance] store write failed: system_error(request_receiver_down)\n"),
      std::string::npos)
      << lines_[0];
  EXPECT_EQ(failures.total(), 1u);
}

TEST_F(FailedRepliesTest, FailuresWithinTheIntervalAreCountedAndToldOnTheNextLine) {
  FailedReplies failures{"relay", "signature check", 10s};
  failures.report("first", at(0s));
  failures.report("second", at(3s));
  failures.report("third", at(9s));
  EXPECT_EQ(lines_.size(), 1u);
  failures.report("fourth", at(10s));
  ASSERT_EQ(lines_.size(), 2u);
  EXPECT_NE(lines_[1].find("signature check failed: fourth (and 2 more since the last report)"),
            std::string::npos)
      << lines_[1];
  // The interval runs from the last line: a failure long after it is logged plainly.
  failures.report("fifth", at(60s));
  ASSERT_EQ(lines_.size(), 3u);
  EXPECT_EQ(lines_[2].find("more since"), std::string::npos) << lines_[2];
  EXPECT_EQ(failures.total(), 5u);
}

}  // namespace
}  // namespace graspd
