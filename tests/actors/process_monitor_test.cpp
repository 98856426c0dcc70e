#include "actors/ops/process_monitor.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <vector>

#include "tests/support/actor_fixture.hpp"

namespace graspd::actors {
namespace {

using namespace std::chrono_literals;

#if defined(__SANITIZE_ADDRESS__)
constexpr bool under_address_sanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool under_address_sanitizer = true;
#else
constexpr bool under_address_sanitizer = false;
#endif
#else
constexpr bool under_address_sanitizer = false;
#endif

class ProcessMonitorTest : public test::ActorTest {
 protected:
  ProcessMonitorOptions options() {
    ProcessMonitorOptions result;
    result.gauges = &metrics_.process();
    result.interval = 5s;
    // Deterministic fake samples: each call reports one more descriptor and 1 MiB more memory.
    result.sample = [this] {
      ++calls_;
      return runtime::ProcessStats{calls_ * 1024 * 1024, 10 + calls_};
    };
    return result;
  }

  ProcessMonitorState& monitor_state(const process_monitor_actor& handle) {
    return state<ProcessMonitorState, process_monitor_actor::base>(handle);
  }

  runtime::Metrics metrics_{"test"};
  std::uint64_t calls_ = 0;
};

TEST_F(ProcessMonitorTest, SamplesOnStartAndEveryInterval) {
  auto monitor = spawn(process_monitor, options());
  run();
  EXPECT_EQ(monitor_state(monitor).samples, 1u);
  EXPECT_EQ(metrics_.process().open_fds.Value(), 11);
  EXPECT_EQ(metrics_.process().uptime_seconds.Value(), 0);

  advance_time(4s);
  EXPECT_EQ(monitor_state(monitor).samples, 1u) << "no sample before the interval";

  advance_time(1s);
  EXPECT_EQ(monitor_state(monitor).samples, 2u);
  EXPECT_DOUBLE_EQ(metrics_.process().uptime_seconds.Value(), 5.0);
  EXPECT_EQ(metrics_.process().resident_memory_bytes.Value(), 2.0 * 1024 * 1024);
  EXPECT_EQ(metrics_.process().open_fds.Value(), 12);

  advance_time(5s);
  advance_time(5s);
  EXPECT_EQ(monitor_state(monitor).samples, 4u);
  EXPECT_DOUBLE_EQ(metrics_.process().uptime_seconds.Value(), 15.0);
  EXPECT_TRUE(has_pending_timeout()) << "the next tick stays scheduled";
}

TEST_F(ProcessMonitorTest, StatusIsJsonSnapshot) {
  auto monitor = spawn(process_monitor, options());
  run();
  advance_time(5s);
  auto status = request<std::string>(monitor, atom::status::value);
  ASSERT_TRUE(status);
  EXPECT_EQ(*status,
            R"({"uptime_seconds":5,"resident_memory_bytes":2097152,"open_fds":12,"samples":2})");
}

TEST_F(ProcessMonitorTest, RealSamplerReadsThisProcess) {
  auto real = options();
  real.sample = runtime::sample_process_stats;
  auto monitor = spawn(process_monitor, std::move(real));
  run();
  EXPECT_GT(metrics_.process().resident_memory_bytes.Value(), 1024 * 1024);
  EXPECT_GE(metrics_.process().open_fds.Value(), 3);
}

TEST_F(ProcessMonitorTest, WorksWithoutGauges) {
  auto no_gauges = options();
  no_gauges.gauges = nullptr;
  auto monitor = spawn(process_monitor, std::move(no_gauges));
  run();
  advance_time(5s);
  EXPECT_EQ(monitor_state(monitor).samples, 2u);
}

TEST_F(ProcessMonitorTest, ReturnsFreedHeapMemoryOnceItIsWorthIt) {
  if (under_address_sanitizer) GTEST_SKIP() << "the sanitizer's allocator keeps its own heap";
  auto real = options();
  real.sample = runtime::sample_process_stats;
  // 256 MiB in 64 KiB blocks (below malloc's mmap threshold, so from the heap), freed behind one
  // block still in use: glibc keeps the freed range resident, as after a large REQ answer.
  constexpr std::size_t block = 64 * 1024;
  constexpr std::size_t blocks = 4096;
  std::vector<char*> transient;
  for (std::size_t i = 0; i < blocks; ++i) {
    transient.push_back(static_cast<char*>(std::malloc(block)));
    std::memset(transient.back(), 1, block);
  }
  auto* pin = static_cast<char*>(std::malloc(block));
  std::memset(pin, 1, block);
  for (auto* b : transient) std::free(b);
  const auto before = runtime::sample_process_stats().anonymous_memory_bytes;

  auto monitor = spawn(process_monitor, std::move(real));
  run();
  advance_time(5s);
  const auto after = runtime::sample_process_stats().anonymous_memory_bytes;
  std::free(pin);
  EXPECT_EQ(monitor_state(monitor).trims, 1u);
  EXPECT_LT(after + (200u << 20), before)
      << "anonymous resident memory went from " << (before >> 20) << " MiB to " << (after >> 20)
      << " MiB";
  advance_time(5s);
  EXPECT_EQ(monitor_state(monitor).trims, 1u) << "at most once a minute";
}

TEST(TrimPolicy, TrimsOnlyAMarginWorthReturningAndAtMostOncePerInterval) {
  using namespace std::chrono_literals;
  TrimPolicy policy(TrimPolicy::Options{64u << 20, 60s});
  const TrimPolicy::TimePoint t0{};
  const auto mib = [](std::uint64_t n) { return n << 20; };
  auto stats = [&](std::uint64_t anonymous, std::uint64_t heap) {
    runtime::ProcessStats s;
    s.anonymous_memory_bytes = mib(anonymous);
    s.heap_in_use_bytes = mib(heap);
    return s;
  };
  EXPECT_FALSE(policy.should_trim(stats(100, 50), t0)) << "50 MiB over the live heap";
  EXPECT_FALSE(policy.should_trim(stats(500, 400), t0)) << "less than half the live heap over";
  EXPECT_FALSE(policy.should_trim(stats(10, 400), t0)) << "resident below the heap";
  ASSERT_TRUE(policy.should_trim(stats(400, 100), t0));
  policy.trimmed(t0);
  EXPECT_FALSE(policy.should_trim(stats(400, 100), t0 + 59s)) << "rate-limited";
  EXPECT_TRUE(policy.should_trim(stats(400, 100), t0 + 60s));
}

}  // namespace
}  // namespace graspd::actors
