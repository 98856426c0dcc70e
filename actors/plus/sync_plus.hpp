// The SYNC PLUS controller actor (GRASP-03): the discovery controller and history scheduler over
// the self-subscriber's inventory. It owns the mailbox selection (target hygiene and the
// four-relay bound, actors/plus/engine/mailboxes), the DiscoveryPlan and the HistoryPlan, and only
// carries out their decisions:
//  - a reconciliation derives sources, coverage and history work from the inventory as soon as
//    a fact changes them: every inventory (the start-up one included) and every discovery answer
//    that lets an author use the fallback relays; every `reconcile_interval` too, for what time
//    alone makes due;
//  - a maintenance pass after each reconciliation and whenever a discovery batch or a worker
//    ends, then every `maintenance_interval` while work is admissible, starts at most one
//    discovery batch on a new source and admits at most one history relay (spawning its
//    HistoryWorker): relays join one by one, yet 200 mailbox relays are all visited within
//    minutes rather than 200 reconciliations;
//  - discovery batches (kind 0 + 10002, at most 100 authors, a few in flight on distinct
//    sources) and history groups go through the sync manager's fetch path (RelayFetch), which
//    opens control-plane connections; each carries what is left of its relay's time budget, so
//    a relay trickling progress is cut there and backed off (the plans decide);
//  - root authors' read/unmarked inboxes (or the fallback relays) go to the sync manager as
//    PlusCoverage: ordinary GRASP-02 live coverage;
//  - the Sync+ section of /api/sync goes to the sync manager (SyncPlusStatus).
#pragma once

#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "actors/plus/engine/discovery_plan.hpp"
#include "actors/plus/engine/history_plan.hpp"
#include "actors/plus/engine/mailboxes.hpp"
#include "actors/plus/engine/plus_inventory.hpp"
#include "messages/interfaces.hpp"

namespace prometheus {
class Registry;
}

namespace graspd {

struct SyncPlusConfig {
  sync::HygieneConfig hygiene;
  /// Operator-configured (trusted) relays, canonical.
  std::vector<std::string> user_index_relays;
  std::optional<std::string> bootstrap_relay;
  std::vector<std::string> fallback_relays;
  std::chrono::seconds reconcile_interval{60};
  /// Between reconciliations, while a history relay is admissible or discovery just started.
  std::chrono::milliseconds maintenance_interval{1000};
  sync::DiscoveryConfig discovery;
  sync::HistoryConfig history;
  /// Repository-scoped probes of owners' and maintainers' inboxes (public instances).
  bool repository_probes = true;
  /// Unix seconds (injectable: tests drive it from the test clock).
  std::function<std::int64_t()> unix_now;
};

/// Why a relay is tracked by Sync+: counts of authors per reason (never the authors).
struct PlusRelayReasons {
  std::size_t discovery_authors = 0;
  std::size_t live_root_authors = 0;
  std::size_t history_participants = 0;
  std::size_t history_members = 0;
  std::size_t fallback_authors = 0;
};

struct SyncPlusCounts {
  std::uint64_t discovery_batches = 0;
  std::uint64_t discovery_failures = 0;
  /// Batches cut because their source spent its time budget (the source is backed off).
  std::uint64_t discovery_budget_spent = 0;
  std::uint64_t history_groups = 0;
  std::uint64_t history_failures = 0;
  /// History admissions ended because the relay spent its time budget.
  std::uint64_t history_budget_spent = 0;
  std::uint64_t workers_started = 0;
  std::uint64_t passes = 0;
};

struct SyncPlusMetrics;

struct SyncPlusState {
  static inline const char* name = "sync_plus";
  SyncPlusState() = default;

  SyncPlusConfig config;
  sync_manager_actor manager;
  std::shared_ptr<const sync::PlusSnapshot> snapshot;
  std::unique_ptr<sync::DiscoveryPlan> discovery;
  std::unique_ptr<sync::HistoryPlan> history;
  std::map<std::string, history_worker_actor> workers;
  /// Selected mailboxes of every eligible author with a retained relay list.
  std::map<nostr::Pubkey, sync::AuthorMailboxes> mailboxes;
  /// The live coverage last sent to the sync manager.
  std::map<std::string, std::set<nostr::EventId>> coverage;
  std::map<std::string, PlusRelayReasons> reasons;
  /// Relay-list URLs the hygiene refused, in the current inventory.
  std::size_t refused_urls = 0;
  SyncPlusCounts counts;
  std::shared_ptr<SyncPlusMetrics> metrics;
  /// A maintenance timer is out (at most one).
  bool maintenance_armed = false;
};

sync_plus_actor::behavior_type sync_plus(sync_plus_actor::stateful_pointer<SyncPlusState> self,
                                         SyncPlusConfig config, sync_manager_actor manager,
                                         std::shared_ptr<prometheus::Registry> registry);

/// The Sync+ section of /api/sync.
std::string sync_plus_status_json(const SyncPlusState& state, std::int64_t now);

}  // namespace graspd
