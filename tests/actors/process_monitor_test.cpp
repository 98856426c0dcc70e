#include "actors/process_monitor.hpp"

#include <gtest/gtest.h>

#include "tests/support/actor_fixture.hpp"

namespace graspd::actors {
namespace {

using namespace std::chrono_literals;

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

}  // namespace
}  // namespace graspd::actors
