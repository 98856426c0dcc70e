// Repository maintenance (docs/git-hosting-design.md, "Maintenance"): `git gc --auto` in one
// repository, run in the foreground under the git process cap it shares with git hosting's
// requests (runtime/git/git_process_slots.hpp, its own key, so it holds at most a per-address
// share), with a wall-clock limit and a memory limit (the address space of git and everything it
// starts, and git's pack window and delta cache sized within it). Git hosting's own processes run
// with auto-gc off (a detached `git gc` would escape the cap and the limits); which repository is
// maintained when is the git hosting actor's decision (actors/git/engine/maintenance_queue.hpp).
// The process is driven without blocking (runtime/git/git_process.*). Include only in runtime/git
// and the git hosting actor (Asio).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "runtime/git/git_process_slots.hpp"
#include "runtime/git/git_repository.hpp"

namespace boost::asio {
class io_context;
}

namespace prometheus {
class Registry;
}

namespace graspd::runtime::git {

struct GitMaintenanceOptions {
  /// The git executable; empty = nothing runs (every run fails).
  std::string git_binary;
  /// NGIT_GIT_MAINTENANCE_TIMEOUT_SECS: the run is killed after this long.
  std::chrono::seconds timeout{1800};
  /// NGIT_GIT_MAINTENANCE_MAX_MEMORY_BYTES: the address space of the run (0 = unlimited).
  std::uint64_t max_memory_bytes = 1ull << 30;
  /// git's gc.auto and gc.autoPackLimit: loose objects and packs beyond which `gc --auto` repacks
  /// (git's defaults; below them the run only counts and ends).
  std::uint32_t auto_loose_objects = 6700;
  std::uint32_t auto_pack_limit = 50;
};

enum class MaintenanceOutcome {
  done,       ///< git gc --auto ended well (whether or not it had to repack)
  failed,     ///< it could not start, or ended with an error (memory limit included)
  timed_out,  ///< killed at the wall-clock limit
  busy,       ///< the line for a git process was full: nothing ran, try again later
};

/// The label of `outcome` in graspd_git_maintenance_total.
const char* to_string(MaintenanceOutcome outcome);

struct GitMaintenanceCounters {
  std::atomic<std::uint64_t> done{0};
  std::atomic<std::uint64_t> failed{0};
  std::atomic<std::uint64_t> timed_out{0};
  std::atomic<std::uint64_t> busy{0};
};

/// The key maintenance holds its process slots under (never a peer address).
inline constexpr const char* maintenance_slot_key = "maintenance";

/// The `-c` settings of a maintenance run: auto-gc thresholds, in the foreground, one pack thread,
/// and git's memory-hungry caches sized to fit in `options.max_memory_bytes`.
std::vector<std::string> maintenance_settings(const GitMaintenanceOptions& options);

class GitMaintenance {
 public:
  /// `slots` is the process cap shared with git hosting's requests (make_process_slots).
  GitMaintenance(boost::asio::io_context& io, Repositories repositories,
                 GitMaintenanceOptions options, std::shared_ptr<ProcessSlots> slots,
                 prometheus::Registry* registry = nullptr);
  ~GitMaintenance();
  GitMaintenance(const GitMaintenance&) = delete;
  GitMaintenance& operator=(const GitMaintenance&) = delete;

  /// Runs `git gc --auto` in `name` once a process slot is free (waiting in line for one);
  /// `done` is called once, on an io_context thread, with the outcome (never after stop()).
  /// Thread-safe; returns at once.
  void run(const RepositoryRef& name, std::function<void(MaintenanceOutcome)> done);

  /// No `done` is called after it; a run under way ends on its own (or when the io_context ends).
  void stop();

  const GitMaintenanceCounters& counters() const;

  struct Impl;

 private:
  std::shared_ptr<Impl> impl_;
};

}  // namespace graspd::runtime::git
