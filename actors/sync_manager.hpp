// The SYNC MANAGER actor (GRASP-02): owns the SyncPlan (RepoSyncIndex,
// RelaySyncIndex, PendingSyncIndex) and is the only place they change. It
// turns the plan's commands into actions: spawning one RelayConnection per
// relay it dials, forwarding subscribe/close, and arming per-relay retry and
// daily timers as delayed messages. It receives RepoDiscovery from the
// SelfSubscriber and reports from its connections, publishes the /api/sync
// snapshot to the StatusBoard and keeps the sync metrics.
#pragma once

#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>

#include "actors/relay_connection.hpp"
#include "actors/sync_plan.hpp"
#include "messages/interfaces.hpp"
#include "runtime/status_board.hpp"

namespace prometheus {
class Registry;
}

namespace graspd {

struct SyncManagerConfig {
  sync::SyncConfig plan;
  RelayConnectionConfig connection;
  /// Operator-configured relays: trusted (may be private), never dropped.
  std::optional<std::string> bootstrap_relay;
  std::chrono::seconds daily_min{82800};
  std::chrono::seconds daily_max{90000};
  std::chrono::seconds disconnect_check_interval{60};
  std::chrono::milliseconds status_interval{1000};
  /// Where the confirmed sync state survives restarts; empty = not persisted.
  std::string state_file;
  std::chrono::seconds state_save_interval{30};
  /// Unix time in seconds (injectable: tests drive it from the test clock).
  std::function<std::int64_t()> unix_now;
  std::uint64_t random_seed = std::random_device{}();
};

struct SyncMetrics;

/// Per-relay figures that are not planning state (for /api/sync).
struct RelayFigures : TrafficCounters {
  std::uint64_t connection_attempts = 0;
  std::optional<std::int64_t> last_connect;
  std::optional<std::int64_t> last_disconnect;
  std::string last_error;
};

struct SyncManagerState {
  static inline const char* name = "sync_manager";

  SyncManagerConfig config;
  std::unique_ptr<sync::SyncPlan> plan;
  acceptance_actor acceptance;
  store_writer_actor writer;
  RelayClientFactory clients;
  std::shared_ptr<runtime::StatusBoard> board;
  std::shared_ptr<SyncMetrics> metrics;
  std::map<std::string, relay_connection_actor> connections;
  std::map<std::string, RelayFigures> figures;
  std::mt19937_64 rng;
  /// The plan's totals already added to the metrics.
  sync::SyncTotals reported;
  bool status_dirty = true;
  bool state_dirty = false;
  /// A publish message is on its way: at most one, and none while there is nothing to refresh.
  bool publish_armed = false;
  /// Unix time of the last state-file save.
  std::int64_t last_state_save = 0;
};

sync_manager_actor::behavior_type sync_manager(
    sync_manager_actor::stateful_pointer<SyncManagerState> self, SyncManagerConfig config,
    acceptance_actor acceptance, store_writer_actor writer, RelayClientFactory clients,
    std::shared_ptr<runtime::StatusBoard> board, std::shared_ptr<prometheus::Registry> registry);

/// The /api/sync document: the plan's totals and one entry per relay
/// (sync_status.cpp).
std::string sync_status_json(const SyncManagerState& state, std::int64_t now);

}  // namespace graspd
