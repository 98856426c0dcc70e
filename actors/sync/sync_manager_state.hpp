// The SyncManager's configuration and state (actors/sync/sync_manager.hpp is the actor): what
// its files (sync_manager*.cpp, sync_status.cpp) and its tests read.
#pragma once

#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <caf/typed_response_promise.hpp>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>

#include "actors/sync/engine/fetch_router.hpp"
#include "actors/sync/engine/sync_plan.hpp"
#include "actors/sync/relay_connection.hpp"
#include "messages/interfaces.hpp"
#include "runtime/ops/status_board.hpp"
#include "store/git/purgatory.hpp"

namespace prometheus {
class Registry;
}

namespace graspd {

struct SyncManagerConfig {
  sync::SyncConfig plan;
  RelayConnectionConfig connection;
  /// Operator-configured relays: trusted (may be private), never dropped.
  std::optional<std::string> bootstrap_relay;
  /// The other nodes of this cluster (NGIT_SYNC_PEERS, canonical, this node's own URLs left out):
  /// trusted, never dropped, synced for everything, and sent what purgatory holds here.
  std::vector<std::string> peers;
  /// How long a newly held event waits for the connected peers' answers before its client is
  /// answered anyway (a peer that is slow or gone must not hold clients up for long).
  std::chrono::milliseconds peer_ack_timeout{2000};
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
  /// GRASP-03 fetches (RelayFetch): how long one may go without progress from its relay (a page,
  /// a NIP-77 round, a requested event), the longest one may take in all however it progresses,
  /// and how long a connection opened only for fetches stays open without one before it retires.
  std::chrono::seconds fetch_timeout{30};
  std::chrono::seconds fetch_max_duration{300};
  std::chrono::seconds control_idle{10};
  /// Purgatory's held counts, shown in /api/sync; null = no purgatory section.
  std::shared_ptr<const policy::PurgatoryFigures> purgatory;
};

struct SyncMetrics;

/// Per-relay figures that are not planning state (for /api/sync).
struct RelayFigures : TrafficCounters {
  std::uint64_t connection_attempts = 0;
  /// Whether the last connection agreed to permessage-deflate.
  bool compressed = false;
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
  // -- GRASP-03 fetch path --
  sync::FetchRouter router;
  /// The reply owed to each fetch in flight, by fetch id (the router's AnswerFetch delivers it).
  std::map<std::string, caf::typed_response_promise<FetchOutcome>> answers;
  /// The router's counts already added to the metrics.
  sync::FetchCounts reported_fetches;
  /// The router's state under the names the actor's tests read.
  const std::map<std::string, sync::ControlConnection>& control = router.control();
  const std::map<std::string, std::string>& fetch_parts = router.fetch_parts();
  const sync::FetchCounts& fetch_counts = router.counts();
  /// The Sync+ section of /api/sync (SyncPlusStatus); empty while Sync+ does not run.
  std::string plus_status;
  /// Newly held events sent to the cluster peers whose answers are awaited: the acceptance
  /// actor's reply, the peers still to answer, whether all answered OK true so far.
  struct PeerAck {
    caf::typed_response_promise<bool> promise;
    std::set<std::string> waiting;
    bool all_accepted = true;
  };
  std::map<nostr::EventId, PeerAck> peer_acks;
  /// The purgatory figures last written to /api/sync (a change makes the status dirty).
  std::array<std::uint64_t, policy::held_kind_count + 2> purgatory_shown{};
};

}  // namespace graspd
