// Store writer metrics on the process registry: how long each commit takes (the LMDB transaction
// including its fsyncs) and how many events it carried; and the size of the store. Fixed labels
// only.
#pragma once

#include <cstddef>

namespace prometheus {
class Registry;
class Counter;
class Histogram;
class Gauge;
}  // namespace prometheus

namespace graspd::store {
class EventStore;
}

namespace graspd::runtime {

class StoreMetrics {
 public:
  explicit StoreMetrics(prometheus::Registry& registry);

  /// One write transaction: `events` in it, `seconds` from begin to durable commit.
  void commit(std::size_t events, double seconds, bool failed);

 private:
  prometheus::Histogram* commit_seconds_ = nullptr;
  prometheus::Histogram* batch_events_ = nullptr;
  prometheus::Counter* committed_ = nullptr;
  prometheus::Counter* failed_ = nullptr;
};

/// How big the store is: events, the LMDB map and its ceiling (an alert fires well before a full
/// map makes writes fail) and the data file on disk. Sampled by the status history's timer.
class StoreSizeGauges {
 public:
  explicit StoreSizeGauges(prometheus::Registry& registry);

  void sample(const store::EventStore& store);

 private:
  prometheus::Gauge* events_ = nullptr;
  prometheus::Gauge* map_bytes_ = nullptr;
  prometheus::Gauge* map_max_bytes_ = nullptr;
  prometheus::Gauge* file_bytes_ = nullptr;
};

}  // namespace graspd::runtime
