// The REPLICATION actor: the replication view of the hosted repositories (docs/replication.md).
// For one repository it reads from the store the relays and clone URLs its announcement names,
// the newest state and the filters of its events; it compares each relay with our store by NIP-77
// (a replication probe actor per relay) and reads each git server's ref advertisement (through
// `probe_server`), at most once an hour per relay or server and repository, a few probes at once,
// a bounded number started per request. It owns the cache of what was measured, answers the HTTP
// requests (once the probes they started are done, or at their deadline) and publishes the
// figures at a glance for the status page. It downloads nothing and writes nothing to the store.
#pragma once

#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <caf/typed_response_promise.hpp>

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>

#include "actors/sync/engine/replication_view.hpp"
#include "actors/sync/replication_probe.hpp"
#include "messages/interfaces.hpp"
#include "store/policy/acceptance_policy.hpp"

namespace graspd {

/// One git server to read the refs of: a clone URL, or this service's own repository.
struct ServerProbeRequest {
  std::string url;
  bool own = false;  ///< the URL names this service: our repository's refs, read locally
  nostr::Pubkey owner{};
  std::string identifier;
};

/// Reads a server's refs and calls `done` once, from any thread.
using ServerProbe =
    std::function<void(ServerProbeRequest, std::function<void(ServerProbeOutcome)> done)>;

struct ReplicationConfig {
  std::shared_ptr<const policy::StoreView> view;
  ReplicationProbeConfig probe;
  /// Unset: servers are listed without refs ("git hosting is off here").
  ServerProbe probe_server;
  /// The Sync+ controller, asked which mailboxes it follows for a repository's threads (listed
  /// with source "sync_plus"); null when Sync+ is off.
  sync_plus_actor plus;
  /// Whether a clone URL names this service (its refs are then read locally).
  std::function<bool(std::string_view url)> is_own_server;
  /// This service's own relay URLs (canonical): never compared with ourselves, not listed.
  std::set<std::string> own_relays;
  /// Publishes the figures at a glance (the StatusBoard's "replication" document).
  std::function<void(std::string json)> publish;
  std::function<std::int64_t()> unix_now;
  std::size_t max_running = 4;          ///< probes at once
  std::size_t max_queued = 256;         ///< probes waiting for a turn; past it none is queued
  std::size_t probes_per_request = 16;  ///< probes one request (or sweep step) may start
  std::size_t max_repositories = 1000;  ///< repositories whose figures are kept
  std::size_t max_roots = 2000;         ///< root events (threads) compared per repository
  /// How long a request waits for the probes it started before it is answered with what is known.
  std::chrono::milliseconds answer_wait{10000};
  /// Background checks: one hosted repository every this often (the one measured longest ago
  /// among the newest `sweep_repositories`); 0 = only on request (NGIT_REPLICATION_SWEEP_SECS).
  std::chrono::seconds sweep_interval{0};
  std::size_t sweep_repositories = 500;
};

struct ReplicationState {
  static inline const char* name = "replication";

  struct Probe {
    std::string repo;
    std::string url;
    bool relay = true;  ///< a relay (NIP-77), else a git server
  };
  struct Waiter {
    std::string repo;
    caf::typed_response_promise<ReplicationAnswer> promise;
  };

  ReplicationConfig config;
  std::unique_ptr<sync::ReplicationCache> cache;
  std::map<std::uint64_t, Probe> running;
  std::deque<std::pair<std::uint64_t, Probe>> queued;
  std::map<caf::actor_addr, std::uint64_t> probe_actors;
  std::map<std::uint64_t, Waiter> waiters;
  std::uint64_t next_id = 1;
};

replication_actor::behavior_type replication(
    replication_actor::stateful_pointer<ReplicationState> self, ReplicationConfig config);

/// What the store says about `owner`'s repository `identifier`: nullopt when no announcement of it
/// is stored here. Relays (the announcement's, then the Sync+ `mailboxes`; our own left out) and
/// servers capped at sync::max_replication_targets,
/// roots at `config.max_roots` (the newest).
std::optional<sync::RepositoryTargets> read_repository_targets(
    const ReplicationConfig& config, const nostr::Pubkey& owner, const std::string& identifier,
    const std::vector<std::string>& mailboxes = {});

}  // namespace graspd
