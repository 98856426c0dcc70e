// Wiring of the status page's data: the StatusHistory actor, which every 10 s samples the events
// the store committed and sync stored (for the 24 h plots) and the store size gauges, publishing
// its buckets on the StatusBoard as "status_history".
#pragma once

#include "messages/interfaces.hpp"
#include "runtime/boot/services.hpp"
#include "runtime/boot/wire_store.hpp"

namespace graspd::boot {

struct WiredStatus {
  status_history_actor history;
};

WiredStatus wire_status(const Services& services, const WiredStore& store);

void stop(const WiredStatus& wired);

}  // namespace graspd::boot
