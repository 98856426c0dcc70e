// The git process cap with a line (docs/spec/git-hosting.md §9.4), shared fairly between peer
// addresses. git does not retry a 503 (a clone fails with `RPC failed; HTTP 503`), so a request
// that finds every slot taken waits in line, oldest first, for one to free up; only a full line or
// a wait over NGIT_GIT_QUEUE_SECS gets the 503. One address holds at most `max_per_key` slots
// (NGIT_GIT_MAX_PROCESSES_PER_IP): its requests beyond that wait while others' are served, so one
// client cannot take every process. A freed slot passes straight to the oldest waiter whose address
// is below its share, so the running count never dips while such requests wait. Thread-safe; no
// I/O (the caller posts the waiter's continuation). Shared by git hosting's requests and repository
// maintenance (runtime/git/git_maintenance.*), which holds its slots under its own key.
#pragma once

#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <unordered_map>

namespace graspd::runtime::git {

class ProcessSlots {
 public:
  enum class Grant { taken, queued, full };

  /// `max_waiting` = 0 disables the line: a request beyond the cap is refused at once.
  /// `max_per_key` = 0: no share per address (only the overall cap).
  ProcessSlots(std::size_t max_running, std::size_t max_waiting, std::size_t max_per_key = 0);

  /// A slot for `key` (the peer address) now (taken), or `on_slot` in line (queued): it is called,
  /// with the slot already its own, by whichever thread frees one. Full when the line is at its
  /// bound.
  Grant take_or_queue(const std::string& key, std::function<void()> on_slot);

  /// Frees `key`'s slot: the oldest waiter allowed one gets it (its callback runs here, after the
  /// lock is released). False when nobody could take it and the slot is free.
  bool give(const std::string& key);

  /// Forgets every waiter (shutdown): their callbacks are destroyed, never called.
  void clear_waiters();

  /// `on_running` is called with the number of slots taken each time it changes (under the lock:
  /// it must only record the number, e.g. in a gauge). One observer; replaces the previous one.
  void observe(std::function<void(std::size_t running)> on_running);

  std::size_t running() const;
  std::size_t running(const std::string& key) const;
  std::size_t waiting() const;

 private:
  struct Waiter {
    std::string key;
    std::function<void()> on_slot;
  };

  bool within_share(const std::string& key) const;  // mutex_ held
  void count(const std::string& key, int delta);    // mutex_ held
  void change_running(int delta);                   // mutex_ held

  const std::size_t max_running_;
  const std::size_t max_waiting_;
  const std::size_t max_per_key_;
  mutable std::mutex mutex_;
  std::size_t running_ = 0;                              // guarded by mutex_
  std::unordered_map<std::string, std::size_t> by_key_;  // guarded by mutex_
  std::deque<Waiter> waiters_;                           // guarded by mutex_
  std::function<void(std::size_t)> on_running_;          // guarded by mutex_
};

}  // namespace graspd::runtime::git
