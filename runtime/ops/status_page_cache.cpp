#include "runtime/ops/status_page_cache.hpp"

#include <exception>
#include <utility>

#include "runtime/ops/log.hpp"

namespace graspd::runtime {

StatusPageCache::StatusPageCache(Render render, std::chrono::milliseconds interval, Clock clock)
    : render_(std::move(render)), interval_(interval), clock_(std::move(clock)) {
  if (!clock_) clock_ = [] { return std::chrono::steady_clock::now(); };
  thread_ = std::thread([this] { run(); });
}

StatusPageCache::~StatusPageCache() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
  for (auto& deliver : waiting_) deliver(nullptr);
}

bool StatusPageCache::fresh(std::chrono::steady_clock::time_point now) const {
  return started_ && now - *started_ < interval_;
}

void StatusPageCache::get(Delivery deliver) {
  std::shared_ptr<const std::string> page;
  {
    std::lock_guard lock(mutex_);
    if (!fresh(clock_())) {
      waiting_.push_back(std::move(deliver));
      if (waiting_.size() == 1) wake_.notify_one();
      return;
    }
    page = page_;
  }
  deliver(std::move(page));
}

std::uint64_t StatusPageCache::renders() const {
  std::lock_guard lock(mutex_);
  return renders_;
}

/// Renders whenever requests wait, never twice within one interval: a request that came while
/// the last rendering was running is served by that one if it started less than an interval ago.
void StatusPageCache::run() {
  std::unique_lock lock(mutex_);
  while (true) {
    wake_.wait(lock, [this] { return stopping_ || !waiting_.empty(); });
    if (stopping_) return;
    auto now = clock_();
    std::vector<Delivery> served;
    if (fresh(now)) {
      served.swap(waiting_);
    } else {
      ++renders_;
      lock.unlock();
      std::shared_ptr<const std::string> page;
      try {
        page = std::make_shared<const std::string>(render_());
      } catch (const std::exception& failure) {
        log::error(log::components::http, "status page rendering failed: ", failure.what());
      }
      lock.lock();
      // Fresh from when it began: what it shows is at most that old. Set only now, so requests
      // during the rendering wait for it rather than take the page before.
      started_ = now;
      page_ = std::move(page);
      served.swap(waiting_);
    }
    auto page = page_;
    lock.unlock();
    for (auto& deliver : served) deliver(page);
    served.clear();  // the deliveries' captures go before the lock is taken again
    lock.lock();
  }
}

}  // namespace graspd::runtime
