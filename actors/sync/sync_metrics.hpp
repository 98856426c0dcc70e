// The sync engine's Prometheus families (graspd_sync_*): internal to actors/sync/*.cpp, and
// registered by boot with sync off too, so that the dashboard and the alerts find every series
// they query (at zero) on any graspd. The GRASP-03 fetch counters are named as in /api/sync's
// `fetches` object, prefixed `fetches_` (fetches.started is what="fetches_started").
#pragma once

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>

#include <cstdint>

#include "actors/sync/engine/fetch_router.hpp"
#include "messages/sync_messages.hpp"

namespace graspd {

struct SyncMetrics {
  explicit SyncMetrics(prometheus::Registry& r)
      : relays(prometheus::BuildGauge()
                   .Name("graspd_sync_relays")
                   .Help("Tracked relays by connection status")
                   .Register(r)),
        health(prometheus::BuildGauge()
                   .Name("graspd_sync_relay_health")
                   .Help("Tracked relays by health")
                   .Register(r)),
        totals(
            prometheus::BuildCounter()
                .Name("graspd_sync_total")
                .Help("Sync activity: connection_attempts, events_received, events_stored, "
                      "events_invalid, events_known, events_unrequested, events_protected, pages, "
                      "bytes_received, negentropy_rounds, ids_needed, id_requests, consolidations, "
                      "daily_syncs, evictions, over_value_budget, and the GRASP-03 fetch path (as "
                      "in /api/sync's fetches object): fetches_started, fetches_failed, "
                      "fetches_control_dials, fetches_promotions, fetches_control_retired")
                .Register(r)),
        open(prometheus::BuildGauge()
                 .Name("graspd_sync_open")
                 .Help("Open sync work: subscriptions, filters, pending_batches")
                 .Register(r)) {
    for (const char* status : {"connected", "connecting", "disconnected"})
      relays.Add({{"status", status}});
    for (const char* state : {"healthy", "degraded", "dead"}) health.Add({{"health", state}});
    for (const char* what : {"subscriptions", "filters", "pending_batches"})
      open.Add({{"what", what}});
    for (const char* what :
         {"connection_attempts", "consolidations", "daily_syncs", "evictions", "over_value_budget"})
      totals.Add({{"what", what}});
    RelayTraffic{}.for_each([&](const char* what, std::uint64_t) { totals.Add({{"what", what}}); });
    add_fetch_counts({}, {});
  }

  void add(const char* what, std::uint64_t n) {
    auto& counter = totals.Add({{"what", what}});
    if (n) counter.Increment(static_cast<double>(n));
  }

  /// What the fetch router counted between `before` and `now`.
  void add_fetch_counts(const sync::FetchCounts& now, const sync::FetchCounts& before) {
    add("fetches_started", now.started - before.started);
    add("fetches_failed", now.failed - before.failed);
    add("fetches_control_dials", now.control_dials - before.control_dials);
    add("fetches_promotions", now.promotions - before.promotions);
    add("fetches_control_retired", now.control_retired - before.control_retired);
  }

  prometheus::Family<prometheus::Gauge>& relays;
  prometheus::Family<prometheus::Gauge>& health;
  prometheus::Family<prometheus::Counter>& totals;
  prometheus::Family<prometheus::Gauge>& open;
};

}  // namespace graspd
