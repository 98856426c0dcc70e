#include "runtime/git/git_process_slots.hpp"

#include <algorithm>
#include <utility>

namespace graspd::runtime::git {

ProcessSlots::ProcessSlots(std::size_t max_running, std::size_t max_waiting,
                           std::size_t max_per_key)
    : max_running_(max_running), max_waiting_(max_waiting), max_per_key_(max_per_key) {}

bool ProcessSlots::within_share(const std::string& key) const {
  if (max_per_key_ == 0) return true;
  auto it = by_key_.find(key);
  return it == by_key_.end() || it->second < max_per_key_;
}

void ProcessSlots::count(const std::string& key, int delta) {
  auto& n = by_key_[key];
  n = delta > 0 ? n + 1 : (n > 0 ? n - 1 : 0);
  if (n == 0) by_key_.erase(key);
}

void ProcessSlots::change_running(int delta) {
  if (delta < 0 && running_ == 0) return;
  running_ = delta > 0 ? running_ + 1 : running_ - 1;
  if (on_running_) on_running_(running_);
}

ProcessSlots::Grant ProcessSlots::take_or_queue(const std::string& key,
                                                std::function<void()> on_slot) {
  std::lock_guard lock{mutex_};
  // Nobody overtakes the line: a free slot goes to a newcomer only when no waiter may have it.
  bool line_ahead = std::any_of(waiters_.begin(), waiters_.end(),
                                [this](const Waiter& w) { return within_share(w.key); });
  if (running_ < max_running_ && within_share(key) && !line_ahead) {
    change_running(+1);
    count(key, +1);
    return Grant::taken;
  }
  if (waiters_.size() >= max_waiting_) return Grant::full;
  waiters_.push_back({key, std::move(on_slot)});
  return Grant::queued;
}

bool ProcessSlots::give(const std::string& key) {
  std::function<void()> next;
  {
    std::lock_guard lock{mutex_};
    count(key, -1);
    auto it = std::find_if(waiters_.begin(), waiters_.end(),
                           [this](const Waiter& w) { return within_share(w.key); });
    if (it == waiters_.end()) {
      change_running(-1);
      return false;
    }
    count(it->key, +1);
    next = std::move(it->on_slot);
    waiters_.erase(it);
  }
  next();
  return true;
}

void ProcessSlots::clear_waiters() {
  std::deque<Waiter> dropped;
  {
    std::lock_guard lock{mutex_};
    dropped.swap(waiters_);
  }
}

void ProcessSlots::observe(std::function<void(std::size_t running)> on_running) {
  std::lock_guard lock{mutex_};
  on_running_ = std::move(on_running);
  if (on_running_) on_running_(running_);
}

std::size_t ProcessSlots::running() const {
  std::lock_guard lock{mutex_};
  return running_;
}

std::size_t ProcessSlots::running(const std::string& key) const {
  std::lock_guard lock{mutex_};
  auto it = by_key_.find(key);
  return it == by_key_.end() ? 0 : it->second;
}

std::size_t ProcessSlots::waiting() const {
  std::lock_guard lock{mutex_};
  return waiters_.size();
}

}  // namespace graspd::runtime::git
