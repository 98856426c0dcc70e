#include "runtime/ops/metrics.hpp"

#include <gtest/gtest.h>
#include <prometheus/counter.h>

#include "runtime/ops/process_stats.hpp"
#include "tests/support/http_client.hpp"

namespace graspd::runtime {
namespace {

TEST(Metrics, ProcessFamiliesAndBuildInfo) {
  Metrics metrics{"1.2.3"};
  metrics.process().uptime_seconds.Set(42);
  auto text = metrics.serialize();
  EXPECT_NE(text.find("graspd_build_info{version=\"1.2.3\"} 1"), std::string::npos) << text;
  EXPECT_NE(text.find("graspd_uptime_seconds 42"), std::string::npos) << text;
  for (auto name :
       {"graspd_start_time_seconds", "graspd_resident_memory_bytes", "graspd_open_fds"}) {
    EXPECT_NE(text.find(std::string("# TYPE ") + name + " gauge"), std::string::npos) << name;
  }
  EXPECT_GT(metrics.process().start_time_seconds.Value(), 1.6e9);
}

TEST(Metrics, OtherComponentsShareTheRegistry) {
  Metrics metrics{"0"};
  auto& family = prometheus::BuildCounter()
                     .Name("graspd_test_things_total")
                     .Help("Things counted by the test.")
                     .Register(metrics.registry());
  family.Add({{"kind", "a"}}).Increment(3);
  EXPECT_NE(metrics.serialize().find("graspd_test_things_total{kind=\"a\"} 3"), std::string::npos);
}

TEST(Metrics, PassesPromtool) {
  Metrics metrics{"0.1.0"};
  prometheus::BuildCounter()
      .Name("graspd_test_events_total")
      .Help("Events.")
      .Register(metrics.registry())
      .Add({{"outcome", "stored"}})
      .Increment();
  std::string output;
  EXPECT_EQ(test::promtool_check_metrics(metrics.serialize(), &output), 0) << output;
}

TEST(ProcessStats, ReadsThisProcess) {
  auto stats = sample_process_stats();
  EXPECT_GT(stats.resident_memory_bytes, 1024u * 1024u);
  EXPECT_GE(stats.open_fds, 3u);  // stdin, stdout, stderr at least
}

}  // namespace
}  // namespace graspd::runtime
