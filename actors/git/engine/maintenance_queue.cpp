#include "actors/git/engine/maintenance_queue.hpp"

#include <algorithm>

namespace graspd::git {

bool MaintenanceQueue::written(const RepositoryRef& repository, Clock::time_point now) {
  if (queued_.count(repository)) return true;
  if (order_.size() >= max_queued_) {
    ++dropped_;
    return false;
  }
  queued_.insert(repository);
  order_.push_back({repository, now});
  return true;
}

MaintenanceQueue::Clock::time_point MaintenanceQueue::due(const Queued& queued) const {
  auto it = last_run_.find(queued.repository);
  auto since = it == last_run_.end() ? queued.written_at : std::max(queued.written_at, it->second);
  return since + interval_;
}

void MaintenanceQueue::forget_old_runs(Clock::time_point now) {
  std::erase_if(last_run_, [&](const auto& entry) { return entry.second + interval_ <= now; });
}

std::optional<MaintenanceQueue::RepositoryRef> MaintenanceQueue::take(Clock::time_point now) {
  if (running_) return std::nullopt;
  auto it = std::find_if(order_.begin(), order_.end(),
                         [&](const Queued& queued) { return due(queued) <= now; });
  if (it == order_.end()) return std::nullopt;
  running_ = std::move(it->repository);
  order_.erase(it);
  queued_.erase(*running_);
  forget_old_runs(now);
  return running_;
}

void MaintenanceQueue::finished(Clock::time_point now, bool again) {
  if (!running_) return;
  last_run_[*running_] = now;
  if (again) written(*running_, now);
  running_.reset();
}

std::optional<MaintenanceQueue::Clock::time_point> MaintenanceQueue::next_due() const {
  if (running_ || order_.empty()) return std::nullopt;
  auto earliest = Clock::time_point::max();
  for (const auto& queued : order_) earliest = std::min(earliest, due(queued));
  return earliest;
}

}  // namespace graspd::git
