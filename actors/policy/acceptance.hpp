// The ACCEPTANCE actor: owns the GRASP-01 policy (store/acceptance_policy),
// its pending events and its retry cache. Client sessions and relay
// connections hand it every valid event; it judges the event against the
// store plus the events it accepted whose commit it has not seen yet, sends
// accepted ones to the store writer in decision order and answers after the
// commit. It follows the store's change feed to keep identity eligibility
// current and to re-submit parked events whose dependency was just committed,
// whichever path they came from.
#pragma once

#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "actors/ops/failed_replies.hpp"
#include "messages/interfaces.hpp"
#include "store/policy/acceptance_policy.hpp"
#include "store/lmdb/event_store.hpp"
#include "store/git/pull_requests.hpp"
#include "store/git/purgatory.hpp"
#include "store/lmdb/store_view.hpp"

namespace prometheus {
class Registry;
}

namespace graspd {

/// Git hosting's side of held pull requests (kinds 1618/1619, purgatory on; git-hosting.md §6–§8,
/// store/pull_requests.hpp). Every call only starts work elsewhere; what git finds comes back as
/// GitDataArrived. Unset hooks do nothing.
struct PullRequestHooks {
  /// True when the repository <owner>/<identifier> exists here. Unset = never: PR events are then
  /// stored as without purgatory.
  std::function<bool(const policy::RepositoryRef&)> repository_exists;
  /// A PR event was held for its `c` commit: look for it in `repositories` (those here that the
  /// event `a`-tags) and fetch it by id when missing (§8.1); found → GitDataArrived{commits}.
  std::function<void(nostr::EventPtr pr, std::vector<policy::RepositoryRef> repositories)> held;
  /// Git data arrived for `repository`: look again for `commits` there (no fetch).
  std::function<void(const policy::RepositoryRef& repository, std::vector<std::string> commits)>
      check;
  /// Creates refs/nostr/<id> at `commit` in `repository` unless it exists (a released PR whose
  /// commit arrived some other way stays fetchable).
  std::function<void(const policy::RepositoryRef&, const nostr::EventId& id,
                     const std::string& commit)>
      set_ref;
  /// Deletes refs/nostr/<id> from `repository` if it still names `commit` (§7.3, §7.4).
  std::function<void(const policy::RepositoryRef&, const nostr::EventId& id,
                     const std::string& commit)>
      delete_ref;
};

struct AcceptanceConfig {
  policy::PolicyConfig policy;
  policy::RetryCache::Limits retry;
  /// How often parked events past their TTL are dropped.
  std::chrono::seconds expiry_interval{30};
  /// Seconds since the epoch (retry-cache ages); unset = the system clock.
  std::function<std::int64_t()> unix_now;
  /// Called with an accepted announcement that lists this service, before it is written and
  /// answered (git hosting creates its repository: a push right after the OK finds it). Unset =
  /// nothing.
  std::function<void(const nostr::Event&)> create_repository;
  /// Called with every state event (kind 30618) once it is stored or held (git hosting applies it
  /// to the repositories here, fetching what it misses). Unset = nothing.
  std::function<void(nostr::EventPtr)> state_stored;

  /// Purgatory (git-hosting.md §6, NGIT_PURGATORY_ENABLED): new announcements listing this
  /// service and state events are held, persisted in the store's LMDB, until git data arrives
  /// (GitDataArrived). Off: both are stored at once.
  bool purgatory_enabled = false;
  policy::PurgatoryLimits purgatory;
  /// Where held events are kept (the same LMDB environment as the events, its "held" database);
  /// required when purgatory is on.
  std::shared_ptr<store::EventStore> purgatory_store;
  /// True when a repository named `identifier` exists here (a state for an identifier with none is
  /// stored at once: nothing here could ever release it). Unset = never.
  std::function<bool(std::string_view identifier)> repository_exists;
  /// Called with a held announcement whose hold expired (git hosting removes its repository).
  std::function<void(const nostr::Event&)> announcement_expired;
  /// Figures for /api/sync; may be null.
  std::shared_ptr<policy::PurgatoryFigures> purgatory_figures;
  /// Held pull requests and refs/nostr placeholders (purgatory on).
  PullRequestHooks pull_requests;
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
  std::shared_ptr<AcceptanceMetrics> metrics;
  std::shared_ptr<prometheus::Registry> registry;
  /// Decisions by rule, for status and tests.
  std::array<std::uint64_t, policy::rule_count> decisions{};
  AcceptanceCounts counts;
  /// Writes whose request to the store writer failed (the client is answered "error:").
  FailedReplies write_failures{name, "store write"};
  std::int64_t retry_ttl_minutes = 10;
  std::function<std::int64_t()> unix_now;
  std::function<void(const nostr::Event&)> create_repository;
  std::function<void(nostr::EventPtr)> state_stored;
  /// Held events; null when purgatory is off.
  std::unique_ptr<policy::Purgatory> purgatory;
  std::shared_ptr<store::EventStore> purgatory_store;
  /// Events held so far (graspd_purgatory_total{outcome="held"}).
  std::uint64_t held_total = 0;
  std::function<bool(std::string_view)> repository_exists;
  std::function<void(const nostr::Event&)> announcement_expired;
  std::shared_ptr<policy::PurgatoryFigures> purgatory_figures;
  /// Purgatory records that could not be written (the event is still held, until a restart).
  FailedReplies persist_failures{name, "purgatory record"};
  PullRequestHooks pull_requests;
  /// refs/nostr/<id> refs pushed before their PR event (§7.3); null when purgatory is off.
  std::unique_ptr<policy::PrPlaceholders> placeholders;
  /// Followers of the held announcements (the sync engine's self-subscriber).
  std::vector<held_feed_actor> held_feed;
};

/// Behaviour of the acceptance actor. `registry` may be null (tests).
acceptance_actor::behavior_type acceptance(acceptance_actor::stateful_pointer<AcceptanceState> self,
                                           AcceptanceConfig config,
                                           std::shared_ptr<const store::EventStore> store,
                                           store_writer_actor writer,
                                           std::shared_ptr<prometheus::Registry> registry);

}  // namespace graspd
