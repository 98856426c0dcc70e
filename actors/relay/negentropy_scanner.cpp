#include "actors/relay/negentropy_scanner.hpp"

#include <utility>

namespace graspd {

NegentropyScanner::NegentropyScanner(NegentropyScannerLimits limits, Source source)
    : limits_(limits), source_(std::move(source)) {
  for (std::size_t i = 0; i < limits_.threads; ++i) threads_.emplace_back([this] { work(); });
}

NegentropyScanner::~NegentropyScanner() {
  stop();
}

NegentropyScanner::Refusal NegentropyScanner::submit(const std::string& address,
                                                     nostr::Filter filter, std::uint64_t max,
                                                     Done done) {
  {
    std::lock_guard lock(mutex_);
    if (stopped_) return Refusal::stopped;
    if (queued_ >= limits_.max_queued) return Refusal::full;
    auto& queue = queues_[address];
    if (queue.size() >= limits_.max_queued_per_address) return Refusal::address_full;
    if (queue.empty()) turns_.push_back(address);
    queue.push_back(Job{std::move(filter), max, std::move(done)});
    ++queued_;
  }
  wake_.notify_one();
  return Refusal::none;
}

NegentropyScanner::Job NegentropyScanner::take_locked() {
  auto address = std::move(turns_.front());
  turns_.pop_front();
  auto queue = queues_.find(address);
  auto job = std::move(queue->second.front());
  queue->second.pop_front();
  --queued_;
  // An address with more waiting goes to the back: the others' first scans come before its next.
  if (queue->second.empty())
    queues_.erase(queue);
  else
    turns_.push_back(std::move(address));
  return job;
}

void NegentropyScanner::run(Job& job) const {
  NegentropyScan scan;
  try {
    scan.items = source_(job.filter, job.max);
  } catch (const std::exception&) {
    scan.failed = true;
  }
  job.done(std::move(scan));
}

bool NegentropyScanner::run_one() {
  Job job;
  {
    std::lock_guard lock(mutex_);
    if (turns_.empty()) return false;
    job = take_locked();
  }
  run(job);
  return true;
}

void NegentropyScanner::work() {
  for (;;) {
    Job job;
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [this] { return stopped_ || !turns_.empty(); });
      if (stopped_) return;
      job = take_locked();
    }
    run(job);
  }
}

void NegentropyScanner::stop() {
  {
    std::lock_guard lock(mutex_);
    stopped_ = true;
    queues_.clear();
    turns_.clear();
    queued_ = 0;
  }
  wake_.notify_all();
  for (auto& thread : threads_)
    if (thread.joinable()) thread.join();
  threads_.clear();
}

std::size_t NegentropyScanner::queued() const {
  std::lock_guard lock(mutex_);
  return queued_;
}

std::size_t NegentropyScanner::queued_by(const std::string& address) const {
  std::lock_guard lock(mutex_);
  auto it = queues_.find(address);
  return it == queues_.end() ? 0 : it->second.size();
}

}  // namespace graspd
