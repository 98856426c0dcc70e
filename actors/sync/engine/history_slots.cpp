#include "actors/sync/engine/history_slots.hpp"

#include <algorithm>

namespace graspd::sync {

bool HistorySlots::take(User user, const std::string& id) {
  if (in_use_ < slots_ && waiting_.empty()) {
    ++in_use_;
    return true;
  }
  const bool queued = std::any_of(waiting_.begin(), waiting_.end(),
                                  [&](const Waiter& w) { return w.user == user && w.id == id; });
  if (!queued) waiting_.push_back({user, id});
  return false;
}

void HistorySlots::give_back() {
  if (in_use_ > 0) --in_use_;
}

std::optional<HistorySlots::Waiter> HistorySlots::grant() {
  if (in_use_ >= slots_ || waiting_.empty()) return std::nullopt;
  auto waiter = std::move(waiting_.front());
  waiting_.pop_front();
  ++in_use_;
  return waiter;
}

std::optional<std::string> HistorySlots::grant(User user) {
  if (waiting_.empty() || waiting_.front().user != user) return std::nullopt;
  auto waiter = grant();
  if (!waiter) return std::nullopt;
  return std::move(waiter->id);
}

void HistorySlots::forget(User user, const std::string& id) {
  std::erase_if(waiting_, [&](const Waiter& w) { return w.user == user && w.id == id; });
}

}  // namespace graspd::sync
