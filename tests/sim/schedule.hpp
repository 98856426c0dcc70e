// The simulator's schedule: everything that happens to a mesh during one run, drawn from one 64-bit
// seed (generate) or read from a hand-written JSON scenario (parse_scenario). Publications carry
// their signed event, so a schedule is replayed exactly; the signature's auxiliary randomness is
// the only thing that differs between two draws of one seed, and no trace or property reads it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "messages/nostr/event.hpp"

namespace graspd::sim {

/// Unix time of the simulation's start; the clock of every node reads kEpoch + simulated seconds.
inline constexpr std::int64_t kEpoch = 1'700'000'000;

/// NGIT_PURGATORY_HOLD_SECS of every node: four hours, longer than any delay the faults of a
/// schedule can cause, so a repository's git data arrives at every node that hosts it exactly
/// when the schedule pushes it somewhere they can fetch it from.
inline constexpr std::int64_t kPurgatoryHoldSeconds = 4 * 3600;

/// What a run looks like: the mesh, how long the schedule lasts and how often faults strike.
struct SimOptions {
  std::uint64_t seed = 1;
  std::size_t nodes = 3;
  std::size_t relays = 2;
  /// Length of the schedule (publications and faults); quiescence follows it.
  std::int64_t seconds = 3600;
  /// Repositories announced over the run.
  std::size_t repos = 3;
  /// Publications (issues, comments, replies, floods) after the announcements; publications / 6
  /// deletions of some of them follow.
  std::size_t publications = 24;
  /// Network faults (drops, refusals, delays, rate limits, limit caps, garbage) per simulated hour.
  double faults_per_hour = 12;
  /// Node restarts per simulated hour.
  double restarts_per_hour = 1;
  /// Smallest `limit` a capping relay enforces. Floods put up to 24 events on one timestamp; a cap
  /// at or below that many stops REQ paging early (docs/simulation.md, known findings).
  std::uint64_t min_limit_cap = 25;
  /// The nodes form one cluster (graspd-sim --cluster): one domain, cluster_host(), that every
  /// hosted announcement lists, every node a sync peer of the others and serving them as a relay.
  bool cluster = false;
  /// Keep every trace line of each node (failure reports), not only the last ones.
  bool keep_full_trace = false;
  /// Print every trace line as it happens (graspd-sim --trace).
  bool print_trace = false;
};

enum class ActionKind {
  publish,     ///< `event` appears on the relays in `relays`
  drop,        ///< the connection of node `node` to relay `relay` breaks
  refuse,      ///< relay `relay` drops every connection and refuses dials for `duration`
  latency,     ///< frames to and from relay `relay` take `value` ms for `duration`
  rate_limit,  ///< relay `relay` answers its next `value` REQs with CLOSED rate-limited
  cap_limit,   ///< relay `relay` returns at most `value` events per filter for `duration`
  garbage,     ///< relay `relay` sends node `node` `value` (index into garbage_frames())
  restart,     ///< node `node` stops (its actors die) and starts again on its store
  push,        ///< the state `event` appears on `relays`; its commit is pushed to node `node`
               ///< (again every 30 s until the node takes it: until it holds the state)
  git_outage,  ///< node `node`'s git serves no fetch for `duration`
};

const char* to_string(ActionKind kind);

struct Action {
  std::int64_t at_ms = 0;
  ActionKind kind = ActionKind::publish;
  std::size_t node = 0;
  std::size_t relay = 0;
  std::int64_t duration_ms = 0;
  std::uint64_t value = 0;
  std::vector<std::size_t> relays;
  std::optional<nostr::Event> event;
};

/// One line describing `action` (traces and the shrunk schedule).
std::string describe(const Action& action);

/// The frames a misbehaving relay sends (garbage actions pick one by index).
const std::vector<std::string>& garbage_frames();

/// A commit id (40 hex) made of two numbers.
std::string commit_id(std::uint64_t high, std::uint64_t low);

/// The relay URL of simulated relay `i` and of node `i` (nodes do not serve).
std::string relay_url(std::size_t i);
std::string node_host(std::size_t i);
/// The cluster's one domain (its balancer's) in cluster mode.
std::string cluster_host();

/// The schedule of `options.seed`, sorted by time.
std::vector<Action> generate(const SimOptions& options);

/// A hand-written schedule (docs/simulation.md):
/// {"nodes":N,"relays":M,"seconds":S,"actions":[...]}. Overrides the mesh size and duration in
/// `options`; the error names the offending entry.
struct ScenarioError {
  std::string message;
};
std::optional<ScenarioError> parse_scenario(const std::string& json, SimOptions& options,
                                            std::vector<Action>& actions);

}  // namespace graspd::sim
