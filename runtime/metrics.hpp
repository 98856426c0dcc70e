// The process-wide Prometheus registry (prometheus-cpp core, no civetweb). Every component
// registers its families here with a fixed set of label values (never per-connection or per-event
// labels), and the HTTP handler serves serialize() on /metrics.
#pragma once

#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>

#include <memory>
#include <string>

namespace graspd::runtime {

/// Process-level gauges, written by actors/process_monitor.
struct ProcessGauges {
  prometheus::Gauge& start_time_seconds;
  prometheus::Gauge& uptime_seconds;
  prometheus::Gauge& resident_memory_bytes;
  prometheus::Gauge& open_fds;
};

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

  /// The Prometheus text exposition format (version 0.0.4) of every registered family.
  std::string serialize() const;

 private:
  std::shared_ptr<prometheus::Registry> registry_;
  ProcessGauges process_;
};

}  // namespace graspd::runtime
