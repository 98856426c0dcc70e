// ProcessMonitor: samples this process's uptime, resident memory and open descriptors every
// `interval` (a delayed tick to itself) into the process gauges of runtime/ops/metrics.hpp, returns
// freed heap memory to the system when a sample shows much of it kept (TrimPolicy), and answers
// `status` with a JSON snapshot. One instance per daemon.
#pragma once

#include <caf/actor_clock.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_actor.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

#include "actors/ops/engine/trim_policy.hpp"
#include "messages/interfaces.hpp"
#include "runtime/ops/metrics.hpp"
#include "runtime/ops/process_stats.hpp"

namespace graspd::actors {

struct ProcessMonitorOptions {
  runtime::ProcessGauges* gauges = nullptr;  ///< owned by runtime::Metrics, outlives the actor
  std::chrono::seconds interval{5};
  /// Source of the samples; tests substitute a fake.
  std::function<runtime::ProcessStats()> sample = runtime::sample_process_stats;
  /// Returns freed heap memory to the system when `trim` says so, checked at each sample: no
  /// timer of its own, so an idle process wakes no more often than it samples.
  std::function<void()> release_free_heap = runtime::release_free_heap;
  TrimPolicy::Options trim;
};

struct ProcessMonitorState {
  static inline const char* name = "process_monitor";
  ProcessMonitorOptions options;
  caf::actor_clock::time_point started;
  double uptime_seconds = 0;
  runtime::ProcessStats last;
  std::uint64_t samples = 0;
  TrimPolicy trim;
  std::uint64_t trims = 0;
};

using ProcessMonitorActor = process_monitor_actor::stateful_pointer<ProcessMonitorState>;

process_monitor_actor::behavior_type process_monitor(ProcessMonitorActor self,
                                                     ProcessMonitorOptions options);

}  // namespace graspd::actors
