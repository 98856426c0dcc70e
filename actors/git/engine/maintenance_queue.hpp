// Which repository git hosting maintains next (docs/git-hosting-design.md, "Maintenance"); pure,
// time passed in. A repository written to (a push applied, git data fetched) is queued once,
// however often it is written meanwhile, and is due `interval` after the write that queued it and
// after its last run (a burst of pushes settles first; a repository pushed to every second is
// looked at once per interval). Due repositories are maintained one at a time, oldest write first,
// so a crowd of busy repositories takes turns. Queued repositories are bounded by `max_queued`:
// beyond it the newest is dropped and counted (it is queued again by its next write).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <set>

#include "messages/nostr/nip34.hpp"

namespace graspd::git {

class MaintenanceQueue {
 public:
  using Clock = std::chrono::steady_clock;
  using RepositoryRef = nostr::nip34::RepositoryRef;

  MaintenanceQueue(std::chrono::seconds interval, std::size_t max_queued = 100'000)
      : interval_(interval), max_queued_(max_queued) {}

  /// `repository` was written to at `now`. False when it was dropped (the queue is full).
  bool written(const RepositoryRef& repository, Clock::time_point now);

  /// The next repository due at `now`, taken off the queue and marked running; nullopt when one
  /// is running or none is due.
  std::optional<RepositoryRef> take(Clock::time_point now);

  /// The run taken last ended at `now` (`again`: it could not run, e.g. no git process was free;
  /// it is queued again, due after another interval).
  void finished(Clock::time_point now, bool again = false);

  /// When the earliest queued repository is due; nullopt when none is queued or one is running.
  std::optional<Clock::time_point> next_due() const;

  std::size_t queued() const { return order_.size(); }
  bool running() const { return running_.has_value(); }
  std::uint64_t dropped() const { return dropped_; }

 private:
  struct Queued {
    RepositoryRef repository;
    Clock::time_point written_at;
  };

  Clock::time_point due(const Queued& queued) const;
  void forget_old_runs(Clock::time_point now);

  const std::chrono::seconds interval_;
  const std::size_t max_queued_;
  std::deque<Queued> order_;        ///< queued, oldest write first
  std::set<RepositoryRef> queued_;  ///< the same, for lookup
  /// When each repository's last run ended, kept for one interval (it is not due again before).
  std::map<RepositoryRef, Clock::time_point> last_run_;
  std::optional<RepositoryRef> running_;
  std::uint64_t dropped_ = 0;
};

}  // namespace graspd::git
