#include "actors/ops/status_history.hpp"

#include <gtest/gtest.h>

#include "tests/support/actor_fixture.hpp"

namespace graspd::actors {
namespace {

using namespace std::chrono_literals;

constexpr std::int64_t kHour = 3600;
constexpr std::int64_t kStart = 1764547200;  // 2025-12-01 00:00:00 UTC

TEST(ActivitySeries, AddsGrowthToTheBucketOfNow) {
  ActivitySeries series(kHour, 24);
  series.add(kStart + 10, {100, 7});  // the baseline: nothing counted yet
  series.add(kStart + 20, {103, 7});
  series.add(kStart + kHour + 5, {110, 9});
  ASSERT_EQ(series.buckets().size(), 2u);
  EXPECT_EQ(series.buckets()[0].start, kStart);
  EXPECT_EQ(series.buckets()[0].stored, 3u);
  EXPECT_EQ(series.buckets()[1].start, kStart + kHour);
  EXPECT_EQ(series.buckets()[1].stored, 7u);
  EXPECT_EQ(series.buckets()[1].synced, 2u);
}

TEST(ActivitySeries, ACounterThatRestartsCountsFromZero) {
  ActivitySeries series(kHour, 24);
  series.add(kStart, {100, 50});
  series.add(kStart + 1, {4, 3});
  EXPECT_EQ(series.buckets().back().stored, 4u);
  EXPECT_EQ(series.buckets().back().synced, 3u);
}

TEST(ActivitySeries, KeepsOnlyTheWindow) {
  ActivitySeries series(kHour, 24);
  for (std::int64_t hour = 0; hour < 100; ++hour) series.add(kStart + hour * kHour, {0, 0});
  EXPECT_EQ(series.buckets().size(), 24u);
  EXPECT_EQ(series.buckets().front().start, kStart + 76 * kHour);
  // After a long silence only the current bucket is left.
  series.add(kStart + 200 * kHour, {0, 0});
  EXPECT_EQ(series.buckets().size(), 1u);
  EXPECT_EQ(series.json(kStart + 200 * kHour + 1),
            R"({"bucket_secs":3600,"now":)" + std::to_string(kStart + 200 * kHour + 1) +
                R"(,"buckets":[{"start":)" + std::to_string(kStart + 200 * kHour) +
                R"(,"stored":0,"synced":0}]})");
}

class StatusHistoryTest : public test::ActorTest {
 protected:
  StatusHistoryOptions options() {
    StatusHistoryOptions result;
    result.interval = 10s;
    result.sample = [this] { return ActivitySample{stored_, 0}; };
    result.unix_now = [this] { return now_; };
    result.publish = [this](std::string json) { published_.push_back(std::move(json)); };
    return result;
  }

  std::uint64_t stored_ = 0;
  std::int64_t now_ = kStart;
  std::vector<std::string> published_;
};

TEST_F(StatusHistoryTest, PublishesAtStartAndEveryInterval) {
  auto history = spawn(status_history, options());
  run();
  ASSERT_EQ(published_.size(), 1u);
  stored_ = 5;
  now_ += 10;
  advance_time(9s);
  EXPECT_EQ(published_.size(), 1u) << "no sample before the interval";
  advance_time(1s);
  ASSERT_EQ(published_.size(), 2u);
  EXPECT_NE(published_.back().find(R"("stored":5)"), std::string::npos) << published_.back();
  advance_time(10s);
  EXPECT_EQ(published_.size(), 3u);
  EXPECT_TRUE(has_pending_timeout()) << "the next tick stays scheduled";
}

}  // namespace
}  // namespace graspd::actors
