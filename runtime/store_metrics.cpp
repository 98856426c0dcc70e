#include "runtime/store_metrics.hpp"

#include <prometheus/counter.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

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

}  // namespace graspd::runtime
