#include "runtime/boot/wire_status.hpp"
#include "messages/unix_clock.hpp"

#include <caf/actor_system.hpp>
#include <caf/send.hpp>

#include <chrono>

#include "actors/ops/status_history.hpp"
#include "runtime/ops/metrics.hpp"
#include "runtime/ops/status_board.hpp"
#include "runtime/ops/store_metrics.hpp"

namespace graspd::boot {

WiredStatus wire_status(const Services& services, const WiredStore& store) {
  actors::StatusHistoryOptions options;
  auto gauges = std::make_shared<runtime::StoreSizeGauges>(services.metrics.registry());
  // The store's record sequence counts every commit, by this process or graspd import/sync.
  options.sample = [store = store.store, gauges, &metrics = services.metrics] {
    gauges->sample(*store);
    return actors::ActivitySample{store->next_seq(),
                                  static_cast<std::uint64_t>(metrics.counter_value(
                                      "graspd_sync_total", "what", "events_stored"))};
  };
  options.unix_now = system_unix_now;
  options.publish = [board = services.status](std::string json) {
    board->publish("status_history", std::move(json));
  };
  // Served from the first request on: the actor's own first document comes a moment later, and
  // until then /api/status_history would be a 404.
  options.publish(
      actors::ActivitySeries(options.bucket_secs, options.buckets).json(options.unix_now()));
  return {services.system.spawn(actors::status_history, std::move(options))};
}

void stop(const WiredStatus& wired) {
  caf::anon_send_exit(wired.history, caf::exit_reason::user_shutdown);
}

}  // namespace graspd::boot
