// Wiring of the ProcessMonitor, which samples uptime, memory and descriptors into the process
// gauges every 5 s.
#pragma once

#include "messages/interfaces.hpp"
#include "runtime/boot/services.hpp"

namespace graspd::boot {

struct WiredMonitor {
  process_monitor_actor monitor;
};

WiredMonitor wire_monitor(const Services& services);

void stop(const WiredMonitor& wired);

}  // namespace graspd::boot
