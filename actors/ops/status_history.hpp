// StatusHistory: the last 24 hours of activity for the status page's plots. Every `interval` (a
// delayed tick to itself) it samples two ever-growing counters (events the store committed,
// events sync stored), adds their growth to the current hour's bucket and publishes the buckets
// as JSON (GET /api/status_history, read by the status page). Memory is bounded: at most
// `buckets` buckets are kept. One instance per daemon.
#pragma once

#include <caf/stateful_actor.hpp>
#include <caf/typed_actor.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <string>

#include "messages/interfaces.hpp"

namespace graspd::actors {

/// Counters that only grow (a smaller value than before means a restart of its source: counted
/// from zero again).
struct ActivitySample {
  std::uint64_t stored = 0;
  std::uint64_t synced = 0;
};

/// What happened from `start` (Unix seconds, a multiple of the bucket length) on.
struct ActivityBucket {
  std::int64_t start = 0;
  std::uint64_t stored = 0;
  std::uint64_t synced = 0;
};

/// The bucketing, apart from the actor so it is testable on its own.
class ActivitySeries {
 public:
  ActivitySeries(std::int64_t bucket_secs, std::size_t buckets)
      : bucket_secs_(bucket_secs), max_buckets_(buckets) {}

  /// Adds the growth since the previous sample (the first sample is only the baseline) to the
  /// bucket of `now`, and drops buckets older than the window.
  void add(std::int64_t now, const ActivitySample& sample);

  const std::deque<ActivityBucket>& buckets() const { return buckets_; }

  /// {"bucket_secs":..,"now":..,"buckets":[{"start":..,"stored":..,"synced":..},...]}
  std::string json(std::int64_t now) const;

 private:
  std::int64_t bucket_secs_;
  std::size_t max_buckets_;
  std::deque<ActivityBucket> buckets_;
  std::optional<ActivitySample> last_;
};

struct StatusHistoryOptions {
  std::chrono::seconds interval{10};
  std::int64_t bucket_secs = 3600;
  std::size_t buckets = 24;
  std::function<ActivitySample()> sample;
  std::function<std::int64_t()> unix_now;
  /// Receives each new JSON document (the daemon puts it on the StatusBoard).
  std::function<void(std::string)> publish;
};

struct StatusHistoryState {
  static inline const char* name = "status_history";
  StatusHistoryOptions options;
  ActivitySeries series{3600, 24};
};

using StatusHistoryActor = status_history_actor::stateful_pointer<StatusHistoryState>;

status_history_actor::behavior_type status_history(StatusHistoryActor self,
                                                   StatusHistoryOptions options);

}  // namespace graspd::actors
