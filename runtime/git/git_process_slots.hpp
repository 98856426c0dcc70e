// The git process cap with a line (docs/spec/git-hosting.md §9.4). git does not retry a 503 (a
// clone fails with `RPC failed; HTTP 503`), so a request that finds every slot taken waits in line,
// oldest first, for one to free up; only a full line or a wait over NGIT_GIT_QUEUE_SECS gets the
// 503. A freed slot passes straight to the oldest waiter, so the running count never dips while
// requests wait. Thread-safe; no I/O (the caller posts the waiter's continuation).
#pragma once

#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>

namespace graspd::runtime::git {

class ProcessSlots {
 public:
  enum class Grant { taken, queued, full };

  /// `max_waiting` = 0 disables the line: a request beyond the cap is refused at once.
  ProcessSlots(std::size_t max_running, std::size_t max_waiting);

  /// A slot now (taken), or `on_slot` in line (queued): it is called, with the slot already
  /// its own, by whichever thread frees one. Full when the line is at its bound.
  Grant take_or_queue(std::function<void()> on_slot);

  /// Frees a slot: the oldest waiter gets it (its callback runs here, after the lock is released).
  /// False when nobody waited and the slot is free.
  bool give();

  /// Forgets every waiter (shutdown): their callbacks are destroyed, never called.
  void clear_waiters();

  std::size_t running() const;
  std::size_t waiting() const;

 private:
  const std::size_t max_running_;
  const std::size_t max_waiting_;
  mutable std::mutex mutex_;
  std::size_t running_ = 0;                    // guarded by mutex_
  std::deque<std::function<void()>> waiters_;  // guarded by mutex_
};

}  // namespace graspd::runtime::git
