#include "runtime/ops/store_metrics.hpp"

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <filesystem>

#include "runtime/ops/metrics.hpp"
#include "store/lmdb/event_store.hpp"

namespace graspd::runtime {

StoreMetrics::StoreMetrics(prometheus::Registry& registry) {
  commit_seconds_ =
      &prometheus::BuildHistogram()
           .Name("graspd_store_commit_seconds")
           .Help("Time of one store write transaction, fsyncs included")
           .Register(registry)
           .Add({}, prometheus::Histogram::BucketBoundaries{0.0005, 0.001, 0.0025, 0.005, 0.01,
                                                            0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5});
  // Small batches mean many commits per event (each costs two syncs): the operator's view of
  // whether the writer keeps up by batching.
  batch_events_ = &prometheus::BuildHistogram()
                       .Name("graspd_store_batch_events")
                       .Help("Events carried by one store write transaction")
                       .Register(registry)
                       .Add({}, prometheus::Histogram::BucketBoundaries{1, 2, 5, 10, 25, 50, 100,
                                                                        250, 500, 1000, 2000});
  auto& commits = prometheus::BuildCounter()
                      .Name("graspd_store_commits_total")
                      .Help("Store write transactions by result")
                      .Register(registry);
  committed_ = &commits.Add({{"result", "ok"}});
  failed_ = &commits.Add({{"result", "failed"}});
}

void StoreMetrics::commit(std::size_t events, double seconds, bool failed) {
  (failed ? failed_ : committed_)->Increment();
  commit_seconds_->Observe(seconds);
  batch_events_->Observe(static_cast<double>(events));
}

StoreSizeGauges::StoreSizeGauges(prometheus::Registry& registry)
    : events_(&single_gauge(registry, "graspd_store_events", "Events in the store")),
      map_bytes_(&single_gauge(registry, "graspd_store_map_bytes", "Current LMDB map size")),
      map_max_bytes_(&single_gauge(registry, "graspd_store_map_max_bytes",
                                   "Ceiling of the LMDB map; writes fail once the map is full")),
      file_bytes_(&single_gauge(registry, "graspd_store_file_bytes", "Size of data.mdb on disk")) {}

void StoreSizeGauges::sample(const store::EventStore& store) {
  events_->Set(static_cast<double>(store.size()));
  map_bytes_->Set(static_cast<double>(store.map_size()));
  map_max_bytes_->Set(static_cast<double>(store.max_map_size()));
  std::error_code error;
  auto bytes = std::filesystem::file_size(store.path() / "data.mdb", error);
  if (!error) file_bytes_->Set(static_cast<double>(bytes));
}

}  // namespace graspd::runtime
