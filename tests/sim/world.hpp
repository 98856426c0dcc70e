// One simulated run: N nodes and M plain relays on one CAF test coordinator, driven by a schedule
// (schedule.hpp). Time only moves when the run moves it, straight to the next network delivery or
// actor timer, so an idle day costs only the timers that fire in it. Properties are checked at
// every step (subscriptions per connection, held frames, no self-dial) and after quiescence (each
// node holds exactly what the GRASP-01 policy accepts from the relays its repositories name).
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "tests/sim/schedule.hpp"

namespace graspd::sim {

struct RunResult {
  std::uint64_t seed = 0;
  std::vector<std::string> violations;
  /// Hash of every trace line of the run: equal for two runs of one schedule.
  std::uint64_t trace_hash = 0;
  std::uint64_t trace_lines = 0;
  /// The last trace lines of each node, for a failure report.
  std::vector<std::deque<std::string>> node_traces;
  std::uint64_t publications = 0;
  /// Publications that are NIP-09 deletions (counted in publications too).
  std::uint64_t deletions = 0;
  std::uint64_t faults = 0;
  std::uint64_t restarts = 0;
  /// Push actions (counted in publications too: each publishes its state) and git fetches the
  /// nodes made from each other.
  std::uint64_t pushes = 0;
  std::uint64_t git_fetches = 0;
  std::uint64_t frames = 0;
  /// NIP-77 rounds the relays answered (odd relays speak it).
  std::uint64_t negentropy_rounds = 0;
  /// Frames between the nodes of a cluster (peer sync).
  std::uint64_t peer_frames = 0;
  std::uint64_t dials = 0;
  std::uint64_t properties_checked = 0;
  /// Events stored over all nodes at the last check.
  std::uint64_t stored_events = 0;
  std::uint64_t max_open_subscriptions = 0;
  /// What the nodes' sync plans did (SyncTotals), summed over nodes and restarts.
  std::uint64_t consolidations = 0;
  std::uint64_t daily_syncs = 0;
  double simulated_seconds = 0;
  double wall_seconds = 0;
  bool ok() const { return violations.empty(); }
};

/// Runs the first `prefix` actions of `actions` (all when prefix >= size), then lets the mesh
/// quiesce and checks the properties.
RunResult run(const SimOptions& options, const std::vector<Action>& actions,
              std::size_t prefix = static_cast<std::size_t>(-1));

/// The shortest prefix of `actions` whose run still fails (binary search over prefix lengths;
/// a failure that needs a later action keeps it).
std::size_t shrink(const SimOptions& options, const std::vector<Action>& actions);

/// The failure report: seed, violations, the shrunk schedule and each node's trace.
std::string report(const SimOptions& options, const std::vector<Action>& actions,
                   const RunResult& failed, std::size_t shrunk_prefix, const RunResult& shrunk);

}  // namespace graspd::sim
