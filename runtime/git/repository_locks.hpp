// The per-repository lock that keeps two writers of one repository's refs apart: a push
// (runtime/git/git_exchange*) and the state applier (runtime/git/git_state_sync.*). Keyed by the
// repository's path; try_lock never waits (a push that finds it taken retries on a timer, the
// applier tries again later). Thread-safe.
#pragma once

#include <mutex>
#include <set>
#include <string>

namespace graspd::runtime::git {

class RepositoryLocks {
 public:
  /// True when `path` was free and is now taken by the caller.
  bool try_lock(const std::string& path) {
    std::lock_guard lock{mutex_};
    return taken_.insert(path).second;
  }
  /// True when `path` is taken (a push holds it): a look, nothing is taken.
  bool is_locked(const std::string& path) {
    std::lock_guard lock{mutex_};
    return taken_.count(path) > 0;
  }
  void unlock(const std::string& path) {
    std::lock_guard lock{mutex_};
    taken_.erase(path);
  }

 private:
  std::mutex mutex_;
  std::set<std::string> taken_;
};

}  // namespace graspd::runtime::git
