#include "runtime/git/git_process_slots.hpp"

#include <utility>

namespace graspd::runtime::git {

ProcessSlots::ProcessSlots(std::size_t max_running, std::size_t max_waiting)
    : max_running_(max_running), max_waiting_(max_waiting) {}

ProcessSlots::Grant ProcessSlots::take_or_queue(std::function<void()> on_slot) {
  std::lock_guard lock{mutex_};
  // Nobody overtakes the line: a free slot goes to a newcomer only when nobody waits.
  if (running_ < max_running_ && waiters_.empty()) {
    ++running_;
    return Grant::taken;
  }
  if (waiters_.size() >= max_waiting_) return Grant::full;
  waiters_.push_back(std::move(on_slot));
  return Grant::queued;
}

bool ProcessSlots::give() {
  std::function<void()> next;
  {
    std::lock_guard lock{mutex_};
    if (waiters_.empty()) {
      if (running_ > 0) --running_;
      return false;
    }
    next = std::move(waiters_.front());
    waiters_.pop_front();
  }
  next();
  return true;
}

void ProcessSlots::clear_waiters() {
  std::deque<std::function<void()>> dropped;
  {
    std::lock_guard lock{mutex_};
    dropped.swap(waiters_);
  }
}

std::size_t ProcessSlots::running() const {
  std::lock_guard lock{mutex_};
  return running_;
}

std::size_t ProcessSlots::waiting() const {
  std::lock_guard lock{mutex_};
  return waiters_.size();
}

}  // namespace graspd::runtime::git
