#include "actors/ops/process_monitor.hpp"

#include <sstream>

#include "runtime/ops/log.hpp"

namespace graspd::actors {

namespace {

void take_sample(ProcessMonitorActor self) {
  auto& state = self->state;
  state.uptime_seconds = std::chrono::duration<double>(self->clock().now() - state.started).count();
  state.last = state.options.sample();
  ++state.samples;
  if (auto* gauges = state.options.gauges) {
    gauges->uptime_seconds.Set(state.uptime_seconds);
    gauges->resident_memory_bytes.Set(static_cast<double>(state.last.resident_memory_bytes));
    gauges->open_fds.Set(static_cast<double>(state.last.open_fds));
  }
}

void maybe_release_heap(ProcessMonitorActor self) {
  auto& state = self->state;
  const auto now = self->clock().now();
  if (!state.trim.should_trim(state.last, now)) return;
  state.trim.trimmed(now);
  ++state.trims;
  state.options.release_free_heap();
  log::debug("process_monitor", "returned freed heap memory to the system (anonymous resident ",
             state.last.anonymous_memory_bytes >> 20, " MiB, heap in use ",
             state.last.heap_in_use_bytes >> 20, " MiB)");
}

std::string status_json(const ProcessMonitorState& state) {
  std::ostringstream json;
  json << "{\"uptime_seconds\":" << static_cast<std::uint64_t>(state.uptime_seconds)
       << ",\"resident_memory_bytes\":" << state.last.resident_memory_bytes
       << ",\"open_fds\":" << state.last.open_fds << ",\"samples\":" << state.samples << "}";
  return json.str();
}

}  // namespace

process_monitor_actor::behavior_type process_monitor(ProcessMonitorActor self,
                                                     ProcessMonitorOptions options) {
  self->state.options = std::move(options);
  self->state.trim = TrimPolicy(self->state.options.trim);
  self->state.started = self->clock().now();
  take_sample(self);
  self->delayed_send(self, self->state.options.interval, atom::tick::value);
  log::debug("process_monitor", "sampling every ", self->state.options.interval.count(), " s");
  return {
      [=](atom::tick) {
        take_sample(self);
        maybe_release_heap(self);
        self->delayed_send(self, self->state.options.interval, atom::tick::value);
      },
      [=](atom::status) { return status_json(self->state); },
  };
}

}  // namespace graspd::actors
