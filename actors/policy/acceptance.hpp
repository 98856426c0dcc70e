// The ACCEPTANCE actor: owns the GRASP-01 policy (store/policy/acceptance_policy),
// its pending events, its retry cache and purgatory (store/git/purgatory). Client sessions and
// relay connections hand it every valid event; it judges the event against the store plus the
// events it accepted whose commit it has not seen yet, sends accepted ones to the store writer in
// decision order and answers after the commit. It follows the store's change feed to keep identity
// eligibility current and to re-submit parked events whose dependency was just committed, whichever
// path they came from. Purgatory's records go to the store writer (StoreHeld); git hosting is
// reached by messages (git_host_actor).
#pragma once

#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "actors/ops/failed_replies.hpp"
#include "messages/interfaces.hpp"
#include "store/git/pull_requests.hpp"
#include "store/git/purgatory.hpp"
#include "store/lmdb/event_store.hpp"
#include "store/lmdb/store_view.hpp"
#include "store/policy/acceptance_policy.hpp"

namespace prometheus {
class Registry;
}

namespace graspd {

struct AcceptanceConfig {
  policy::PolicyConfig policy;
  policy::RetryCache::Limits retry;
  /// How often parked events past their TTL are dropped.
  std::chrono::seconds expiry_interval{30};
  /// Seconds since the epoch (retry-cache ages, purgatory expiry); unset = the system clock.
  std::function<std::int64_t()> unix_now;
  /// Git hosting (docs/git-hosting-design.md): told about accepted announcements, stored and held
  /// states and held pull requests, asked whether repositories exist; its GitDataArrived releases
  /// held events. Invalid = no git hosting (no repository exists, nothing is told).
  git_host_actor git;

  /// Purgatory (docs/spec/git-hosting.md §6, NGIT_PURGATORY_ENABLED): new announcements listing
  /// this service, states and pull requests are held, their records kept in the store's LMDB
  /// (written by the store writer), until git data arrives (GitDataArrived). Off: stored at once.
  bool purgatory_enabled = false;
  policy::PurgatoryLimits purgatory;
  /// Figures for /api/sync; may be null.
  std::shared_ptr<policy::PurgatoryFigures> purgatory_figures;
  /// How long a held state's answer waits for git hosting to say whether its objects are here:
  /// present, it is released and answered as stored (`OK true ""`); missing (or no word in time),
  /// `OK true "purgatory: …"`. Zero: answered as held at once.
  std::chrono::milliseconds state_answer_wait{0};
};

/// What happened to events beyond the per-rule decisions; exported as graspd_policy_retry_total.
struct AcceptanceCounts {
  /// Accepted on an event that was itself accepted but not yet committed (pipelined dependants).
  std::uint64_t accepted_on_pending = 0;
  /// Parked events released by a commit and then stored.
  std::uint64_t accepted_after_retry = 0;
  /// Writes answered dependency_missing (what they relied on was not stored) and judged again.
  std::uint64_t rejudged = 0;
};

/// Counters the actor keeps; exported to Prometheus when a registry is given.
struct AcceptanceMetrics;

struct AcceptanceState {
  static inline const char* name = "acceptance";

  std::shared_ptr<const store::EventStore> store;
  std::unique_ptr<store::EventStoreView> view;
  std::unique_ptr<policy::AcceptancePolicy> policy;
  std::unique_ptr<policy::RetryCache> retry;
  store_writer_actor writer;
  /// The configuration it was spawned with (its clock and git hosting).
  AcceptanceConfig config;
  std::shared_ptr<AcceptanceMetrics> metrics;
  std::shared_ptr<prometheus::Registry> registry;
  /// Decisions by rule, for status and tests.
  std::array<std::uint64_t, policy::rule_count> decisions{};
  AcceptanceCounts counts;
  /// Writes whose request to the store writer failed (the client is answered "error:").
  FailedReplies write_failures{name, "store write"};
  std::int64_t retry_ttl_minutes = 10;
  /// Held events; null when purgatory is off.
  std::unique_ptr<policy::Purgatory> purgatory;
  /// Events held so far (graspd_purgatory_total{outcome="held"}).
  std::uint64_t held_total = 0;
  /// Purgatory records that could not be written (the event is still held, until a restart).
  FailedReplies persist_failures{name, "purgatory record"};
  /// refs/nostr/<id> refs pushed before their PR event (§7.3); null when purgatory is off.
  std::unique_ptr<policy::PrPlaceholders> placeholders;
  /// Followers of the held announcements (the sync engine's self-subscriber).
  std::vector<held_feed_actor> held_feed;
  /// The follower of newly held announcements and states (the SyncManager, for the cluster
  /// peers); their clients' OK waits for its answer.
  std::optional<peer_feed_actor> peer_feed;
  /// Held states whose submitters wait for their answer (AcceptanceConfig::state_answer_wait).
  std::map<nostr::EventId, std::function<void(AcceptanceVerdict)>> state_answers;
};

/// Behaviour of the acceptance actor. `registry` may be null (tests).
acceptance_actor::behavior_type acceptance(acceptance_actor::stateful_pointer<AcceptanceState> self,
                                           AcceptanceConfig config,
                                           std::shared_ptr<const store::EventStore> store,
                                           store_writer_actor writer,
                                           std::shared_ptr<prometheus::Registry> registry);

}  // namespace graspd
