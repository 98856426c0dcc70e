#include "runtime/ops/metrics.hpp"

#include <prometheus/text_serializer.h>

#include <chrono>
#include <sstream>

namespace graspd::runtime {

prometheus::Gauge& single_gauge(prometheus::Registry& registry, const std::string& name,
                                const std::string& help) {
  return prometheus::BuildGauge().Name(name).Help(help).Register(registry).Add({});
}

namespace {

ProcessGauges make_process_gauges(prometheus::Registry& registry) {
  return ProcessGauges{
      single_gauge(registry, "graspd_start_time_seconds",
                   "Start time of the process since the Unix epoch, in seconds."),
      single_gauge(registry, "graspd_uptime_seconds", "Seconds since the process started."),
      single_gauge(registry, "graspd_resident_memory_bytes", "Resident memory size in bytes."),
      single_gauge(registry, "graspd_open_fds", "Number of open file descriptors."),
  };
}

}  // namespace

Metrics::Metrics(const std::string& version)
    : registry_(std::make_shared<prometheus::Registry>()),
      process_(make_process_gauges(*registry_)) {
  prometheus::BuildGauge()
      .Name("graspd_build_info")
      .Help("Build information; the value is always 1.")
      .Register(*registry_)
      .Add({{"version", version}})
      .Set(1);
  auto now = std::chrono::system_clock::now().time_since_epoch();
  process_.start_time_seconds.Set(std::chrono::duration<double>(now).count());
}

std::string Metrics::serialize() const {
  std::ostringstream text;
  prometheus::TextSerializer().Serialize(text, registry_->Collect());
  return text.str();
}

double Metrics::counter_value(std::string_view name, std::string_view label,
                              std::string_view value) const {
  double total = 0;
  for (const auto& family : registry_->Collect()) {
    if (family.name != name) continue;
    for (const auto& metric : family.metric) {
      for (const auto& pair : metric.label)
        if (pair.name == label && pair.value == value) total += metric.counter.value;
    }
  }
  return total;
}

}  // namespace graspd::runtime
