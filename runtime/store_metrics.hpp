// Store writer metrics on the process registry: how long each commit takes (the LMDB transaction
// including its fsyncs) and how many events it carried. Fixed labels only.
#pragma once

#include <cstddef>

namespace prometheus {
class Registry;
class Counter;
class Histogram;
}  // namespace prometheus

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

}  // namespace graspd::runtime
