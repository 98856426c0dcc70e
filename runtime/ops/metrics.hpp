// The process-wide Prometheus registry (prometheus-cpp core, no civetweb). Every component
// registers its families here with a fixed set of label values (never per-connection or per-event
// labels), and the HTTP handler serves serialize() on /metrics.
#pragma once

#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>

#include <memory>
#include <string>
#include <string_view>

namespace graspd::runtime {

/// Process-level gauges, written by actors/ops/process_monitor.
struct ProcessGauges {
  prometheus::Gauge& start_time_seconds;
  prometheus::Gauge& uptime_seconds;
  prometheus::Gauge& resident_memory_bytes;
  prometheus::Gauge& open_fds;
};

/// A gauge without labels, registered under `name`.
prometheus::Gauge& single_gauge(prometheus::Registry& registry, const std::string& name,
                                const std::string& help);

class Metrics {
 public:
  /// Registers graspd_build_info{version} and the process gauges; start time = now.
  explicit Metrics(const std::string& version);

  Metrics(const Metrics&) = delete;
  Metrics& operator=(const Metrics&) = delete;

  /// Where other components add their own families (thread-safe, as is updating metrics).
  prometheus::Registry& registry() { return *registry_; }
  std::shared_ptr<prometheus::Registry> shared_registry() { return registry_; }

  ProcessGauges& process() { return process_; }

  /// The value of the counter `name{label="value"}`, 0 while it has no such sample (for the
  /// status page's plots: reads what the owning component counted, without a second count).
  double counter_value(std::string_view name, std::string_view label, std::string_view value) const;

  /// The Prometheus text exposition format (version 0.0.4) of every registered family.
  std::string serialize() const;

 private:
  std::shared_ptr<prometheus::Registry> registry_;
  ProcessGauges process_;
};

}  // namespace graspd::runtime
