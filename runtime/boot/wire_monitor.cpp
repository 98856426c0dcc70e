#include "runtime/boot/wire_monitor.hpp"

#include <caf/actor_system.hpp>
#include <caf/send.hpp>

#include <chrono>

#include "actors/ops/process_monitor.hpp"
#include "runtime/ops/metrics.hpp"

namespace graspd::boot {

WiredMonitor wire_monitor(const Services& services) {
  actors::ProcessMonitorOptions options;
  options.gauges = &services.metrics.process();
  options.interval = std::chrono::seconds{5};
  return {services.system.spawn(actors::process_monitor, std::move(options))};
}

void stop(const WiredMonitor& wired) {
  caf::anon_send_exit(wired.monitor, caf::exit_reason::user_shutdown);
}

}  // namespace graspd::boot
