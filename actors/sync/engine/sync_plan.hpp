// GRASP-02 sync planning: the state the SyncManager owns and every decision
// it takes, as a pure state machine. Inputs are facts (a batch of discovered
// repositories, a relay connected, an EOSE, a timer fired); outputs are
// commands the SyncManager actor executes (dial, subscribe, close, arm a
// timer). Keeping the decisions free of CAF and sockets makes every scenario
// of the design document a plain deterministic test.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "actors/sync/engine/sync_filters.hpp"
#include "messages/nostr/event.hpp"
#include "messages/nostr/filter.hpp"

namespace graspd::sync {

/// What we want to sync for one repository (RepoSyncIndex value).
struct RepoSyncNeeds {
  std::set<RelayUrl> relays;
  std::set<EventId> roots;
  /// StateOnly while its announcement is held in purgatory; Full once stored.
  SyncLevel level = SyncLevel::full;
};
using RepoSyncIndex = std::map<RepoRef, RepoSyncNeeds>;

/// One self-subscriber finding about a repository: its latest announcement's
/// relays (which replace the previous set), its level, new root events, or its
/// removal (a held announcement that expired).
struct RepoUpdate {
  RepoRef repo;
  std::optional<std::set<RelayUrl>> relays;
  std::set<EventId> roots;
  bool removed = false;
  /// Unset: unchanged.
  std::optional<SyncLevel> level = std::nullopt;
};

/// Inverts repo -> relays into relay -> items (derive_relay_targets, sync_targets.cpp): a Full
/// repository brings itself and its roots, a StateOnly one only its state events.
std::map<RelayUrl, SyncItems> derive_relay_targets(const RepoSyncIndex& index);

struct SyncConfig {
  std::int64_t quick_reconnect_seconds = 900;
  std::size_t consolidation_threshold = 70;
  std::int64_t base_backoff_seconds = 5;
  std::int64_t max_backoff_seconds = 3600;
  std::int64_t dead_after_seconds = 86400;
  std::int64_t rate_limit_cooldown_seconds = 65;
  /// References per filter (a/A/q and e/E/q layers).
  std::size_t refs_per_filter = 100;
  /// Assumed REQ frame limit when the peer's NIP-11 does not say.
  std::size_t default_max_message_bytes = 65536;
  /// Filters per REQ when the peer does not advertise limitation.max_filters.
  std::size_t default_max_filters = 10;
  /// REQs open at once when the peer does not advertise limitation.max_subscriptions: strfry's
  /// built-in relay.maxSubsPerConnection (20; its sample configuration may raise it), the tightest
  /// cap in common use.
  std::size_t default_max_subscriptions = 20;
  /// Subscriptions left free of live coverage for history fetches (NIP-77 id batches, REQ pages):
  /// with every slot held by live REQs, no history could ever be asked for.
  std::size_t reserved_subscriptions = 2;
  /// Filter values left free of live coverage on a peer that advertises
  /// limitation.max_subscription_values: a tenth of it, at least this many, at most half.
  std::size_t min_reserved_values = 2000;
  /// Canonical URLs of this service itself: never dialled.
  std::set<RelayUrl> own_relays;
  /// Most relays tracked (and connections opened) at once; hostile or huge
  /// relay lists cannot make graspd dial without bound. Relays past it wait
  /// until a tracked relay is dropped.
  std::size_t max_relays = 1000;
  /// Reconcile history by NIP-77 where the peer speaks it; false = REQ pages only.
  bool negentropy = true;
};

/// Activity counted where it happens, for metrics and /api/sync.
struct SyncTotals {
  std::uint64_t consolidations = 0;
  std::uint64_t daily_syncs = 0;
  /// Tracked relays dropped to give their slot to a relay ranked before them.
  std::uint64_t evictions = 0;
  /// Items not subscribed on a relay because its filter-value budget was full (until its next
  /// fresh sync).
  std::uint64_t over_value_budget = 0;
};

/// Admission order of a target relay when slots are scarce: every author's
/// first relay comes before any author's second, so one announcement (or
/// one author's many) listing a thousand relays cannot keep another
/// repository's relays out.
struct AdmissionRank {
  std::size_t position = 0;   ///< best position in any author's relay list
  std::size_t listed_by = 0;  ///< authors listing it (more ranks first)
  bool operator<(const AdmissionRank& other) const {
    if (position != other.position) return position < other.position;
    return listed_by > other.listed_by;
  }
};
/// The AdmissionRank of every relay the repositories list.
std::map<RelayUrl, AdmissionRank> rank_relays(const RepoSyncIndex& index);

enum class ConnectionStatus { disconnected, connecting, connected };
enum class Health { healthy, degraded, dead };
const char* to_string(ConnectionStatus status);
const char* to_string(Health health);

/// Which part of the three-layer strategy a subscription serves.
enum class Layer { announcements, items, catch_up };

struct Subscription {
  Layer layer = Layer::items;
  nostr::Filters filters;
  std::optional<std::uint64_t> batch;
};

/// Items in flight: confirmed once every one of its subscriptions saw EOSE.
struct PendingBatch {
  std::uint64_t id = 0;
  SyncItems items;
  std::set<std::string> outstanding;
};

struct RelayHealth {
  std::uint32_t failures = 0;
  std::optional<std::int64_t> failing_since;
  std::string last_error;
};

/// Confirmed state and connection lifecycle of one relay (RelaySyncIndex value).
struct RelayState {
  SyncItems confirmed;
  bool is_bootstrap = false;
  /// A cluster peer (NGIT_SYNC_PEERS): synced for everything, never evicted, retried every
  /// base backoff, and reconciled whole (NIP-77 over `{}`) at every connection.
  bool is_peer = false;
  ConnectionStatus status = ConnectionStatus::disconnected;
  /// The last moment we were connected (refreshed at disconnect), the base of
  /// the catch-up `since` on a quick reconnect.
  std::optional<std::int64_t> last_connected;
  std::optional<std::int64_t> disconnected_at;
  std::map<std::string, Subscription> subscriptions;
  std::vector<PendingBatch> pending;
  /// Consolidation requested; it runs once no batch is pending.
  bool consolidation_wanted = false;
  /// Inside consolidate(): what it subscribes does not ask for another consolidation.
  bool consolidating = false;
  std::optional<std::int64_t> rate_limited_until;
  /// Subscriptions the peer closed for rate limiting, re-sent after the cooldown.
  std::map<std::string, Subscription> deferred;
  std::size_t max_message_bytes = 0;
  std::size_t max_filters = 0;
  std::size_t max_subscriptions = 0;
  /// limitation.max_subscription_values (graspd advertises it); 0 = not advertised.
  std::size_t max_subscription_values = 0;
  /// References per filter for this relay: raised above SyncConfig::refs_per_filter when its
  /// items would not fit the subscription budget otherwise (0 = the configured value).
  std::size_t refs_per_filter = 0;
  /// Whether the peer speaks NIP-77: unknown until its connection shows it.
  /// A peer that does not is synced by REQ pagination until the next daily
  /// fresh sync, which asks again.
  std::optional<bool> negentropy;
  /// What the peer's NIP-11 says (supported_nips): a peer that lists NIPs
  /// without 77 is not asked.
  std::optional<bool> advertised_nip77;
  bool retry_armed = false;
  /// The generation of the relay's armed daily timer; ticks of any other
  /// generation are stale (the relay was dropped and tracked again).
  std::optional<std::uint64_t> daily_generation;
  /// Items whose subscriptions the peer refused (not for rate limiting); not
  /// asked again until the next fresh sync.
  SyncItems refused;
  RelayHealth health;
  std::uint64_t consolidations = 0;

  std::size_t open_filter_count() const;
  /// Whether new subscriptions reconcile their history by NIP-77.
  bool uses_negentropy() const { return negentropy.value_or(advertised_nip77 != false); }
};

/// How a relay's history is synced: "negentropy", "req", or "unknown" before the peer showed.
const char* history_method(const RelayState& state);

// -- commands the SyncManager actor executes ---------------------------------

struct Dial {
  RelayUrl relay;
};
struct HangUp {
  RelayUrl relay;
};
struct OpenSubscription {
  RelayUrl relay;
  std::string subscription_id;
  nostr::Filters filters;
  /// Reconcile the history by NIP-77 (else REQ pagination).
  bool negentropy = true;
};
struct CloseSubscription {
  RelayUrl relay;
  std::string subscription_id;
};
/// Arm a timer that comes back as on_retry_timer(relay).
struct ArmRetry {
  RelayUrl relay;
  std::int64_t delay_seconds = 0;
};
/// Arm the relay's random 23-25 h fresh-sync timer (comes back as
/// on_daily_tick with the same generation).
struct ArmDaily {
  RelayUrl relay;
  std::uint64_t generation = 0;
};
using Command = std::variant<Dial, HangUp, OpenSubscription, CloseSubscription, ArmRetry, ArmDaily>;
using Commands = std::vector<Command>;

/// The SyncManager's state: RepoSyncIndex, RelaySyncIndex (with the
/// PendingSyncIndex folded into each RelayState) and the decisions over them.
class SyncPlan {
 public:
  explicit SyncPlan(SyncConfig config) : config_(config) {}

  /// Operator-configured relay that is always connected (never "empty").
  Commands add_bootstrap_relay(const RelayUrl& relay, std::int64_t now);
  /// A node of this cluster (NGIT_SYNC_PEERS): always connected and asked for every event it
  /// holds, whatever the repositories list.
  Commands add_peer_relay(const RelayUrl& relay, std::int64_t now);
  /// A self-subscriber batch. Only deltas reach the relays.
  Commands on_repositories(const std::vector<RepoUpdate>& updates, std::int64_t now);

  /// GRASP-03 Sync+: the roots each relay covers as a root author's inbox (or fallback relay),
  /// replacing the previous set. They join the relays' targets like repository relays do.
  Commands on_plus_coverage(std::map<RelayUrl, std::set<EventId>> roots, std::int64_t now);
  const std::map<RelayUrl, std::set<EventId>>& plus_coverage() const { return plus_; }

  /// `max_message_bytes` / `max_filters` / `max_subscriptions` / `max_subscription_values`: the
  /// peer's NIP-11 limits, 0 when unknown. `advertised_nip77`: whether its NIP-11 supported_nips
  /// lists 77 (unset without a list).
  Commands on_connected(const RelayUrl& relay, std::size_t max_message_bytes,
                        std::size_t max_filters, std::int64_t now,
                        std::optional<bool> advertised_nip77 = std::nullopt,
                        std::size_t max_subscriptions = 0, std::size_t max_subscription_values = 0);
  /// Live subscriptions this relay may hold: its REQ cap less the reserve for history fetches.
  std::size_t subscription_budget(const RelayState& state) const;
  /// Filter values (nostr::value_count) live coverage may hold on this relay: its advertised
  /// max_subscription_values less the reserve for history fetches; none when it advertises none.
  std::optional<std::size_t> value_budget(const RelayState& state) const;
  /// Filter values the relay's open and deferred subscriptions hold.
  std::size_t open_values(const RelayState& state) const;
  Commands on_connect_failed(const RelayUrl& relay, const std::string& error, std::int64_t now);
  Commands on_disconnected(const RelayUrl& relay, const std::string& reason, std::int64_t now);
  Commands on_eose(const RelayUrl& relay, const std::string& subscription_id, std::int64_t now);
  /// CLOSED from the peer; `rate_limited` when the message says so.
  Commands on_closed(const RelayUrl& relay, const std::string& subscription_id, bool rate_limited,
                     std::int64_t now);
  /// A NOTICE (or OK) signalled a rate limit for the whole connection.
  Commands on_rate_limited(const RelayUrl& relay, std::int64_t now);
  /// The peer answered NIP-77, or showed it does not speak it.
  void on_negentropy(const RelayUrl& relay, bool supported);
  Commands on_retry_timer(const RelayUrl& relay, std::int64_t now);
  /// The random 23-25 h fresh sync of one relay; a stale generation (or a
  /// relay no longer tracked) is ignored.
  Commands on_daily_tick(const RelayUrl& relay, std::uint64_t generation, std::int64_t now);
  /// The periodic empty-relay and reconnect check.
  Commands on_disconnect_check(std::int64_t now);

  /// Confirmed state and last connection time of every relay, as JSON, so a
  /// restart resumes with a catch-up instead of a full download.
  std::string snapshot_json(std::int64_t now) const;
  /// Restores a snapshot taken at `saved_at` (every relay starts
  /// disconnected, as if it had dropped then); false when `json` is invalid.
  bool restore_json(const std::string& json);

  const RepoSyncIndex& repositories() const { return repos_; }
  /// Repositories of the index at `level`.
  std::size_t repositories_at(SyncLevel level) const;
  /// Target relays not tracked because of max_relays.
  std::size_t untracked_targets() const;
  const std::map<RelayUrl, RelayState>& relays() const { return relays_; }
  Health health_of(const RelayState& state, std::int64_t now) const;
  const SyncTotals& totals() const { return totals_; }
  std::int64_t backoff_seconds(const RelayState& state, std::int64_t now) const;

 private:
  RelayState& ensure_relay(const RelayUrl& relay);
  /// Applies one finding to repos_.
  void apply(const RepoUpdate& update);
  /// Removes `repo` from what every relay confirmed or refused at `level` (or at both levels).
  void forget(const RepoRef& repo, std::optional<SyncLevel> level);
  /// The relay's state, nullptr when the relay is not tracked (events about it are ignored).
  RelayState* tracked(const RelayUrl& relay);
  SyncItems targets_for(const RelayUrl& relay) const;
  SyncItems pending_items(const RelayState& state) const;
  void add_items(const RelayUrl& relay, RelayState& state, SyncItems items, std::int64_t now,
                 Commands& out);
  void subscribe_items(const RelayUrl& relay, RelayState& state, const SyncItems& items,
                       Commands& out);
  void subscribe_catch_up(const RelayUrl& relay, RelayState& state, const SyncItems& items,
                          std::int64_t since, Commands& out);
  void subscribe_announcements(const RelayUrl& relay, RelayState& state,
                               std::optional<std::int64_t> since, Commands& out);
  std::vector<std::string> open(const RelayUrl& relay, RelayState& state, Layer layer,
                                const nostr::Filters& filters, std::optional<std::uint64_t> batch,
                                Commands& out);
  void drop_batch(const RelayUrl& relay, RelayState& state, std::uint64_t batch, Commands& out);
  void resend_deferred(const RelayUrl& relay, RelayState& state, Commands& out);
  void record_failure(RelayState& state, const std::string& error, std::int64_t now);
  void recompute(const RelayUrl& relay, RelayState& state, std::int64_t now, Commands& out);
  /// Starts tracking target relays not tracked yet, in AdmissionRank order:
  /// while under max_relays, then by evicting tracked relays ranked after them.
  void admit_targets(std::int64_t now, Commands& out);
  void refresh_targets();
  AdmissionRank rank_of(const RelayUrl& relay) const;
  void evict(const RelayUrl& relay, Commands& out);
  void consolidate(const RelayUrl& relay, RelayState& state, std::int64_t now, Commands& out);
  void close_all(const RelayUrl& relay, RelayState& state, Commands& out);
  void dial(const RelayUrl& relay, RelayState& state, Commands& out);
  void arm_retry(const RelayUrl& relay, RelayState& state, std::int64_t now, Commands& out);
  bool has_work(const RelayUrl& relay, const RelayState& state) const;
  std::size_t max_bytes(const RelayState& state) const;
  std::size_t max_filters(const RelayState& state) const;
  std::size_t refs_per_filter(const RelayState& state) const;
  /// REQs `filters` take once packed for this relay.
  std::size_t groups(const RelayState& state, const nostr::Filters& filters) const;
  /// Whether subscribing `items` keeps the relay within its subscription budget.
  bool fits_budget(const RelayState& state, const SyncItems& items) const;
  /// Raises the relay's refs per filter until announcements and `items` fit its subscription
  /// budget, or a filter would not fit half a REQ frame. True when they fit.
  bool widen_to_fit(RelayState& state, const SyncItems& items) const;
  /// The items whose filters fit the relay's value budget with what it holds (repositories, then
  /// StateOnly repositories, then roots); the rest count as refused until the next fresh sync.
  SyncItems within_value_budget(RelayState& state, SyncItems items);

  SyncConfig config_;
  RepoSyncIndex repos_;
  /// derive_relay_targets(repos_), refreshed when repos_ changes.
  std::map<RelayUrl, SyncItems> targets_;
  std::map<RelayUrl, AdmissionRank> ranks_;
  /// GRASP-03 Sync+ live coverage (on_plus_coverage).
  std::map<RelayUrl, std::set<EventId>> plus_;
  /// The cluster peers (add_peer_relay).
  std::set<RelayUrl> peers_;
  std::map<RelayUrl, RelayState> relays_;
  std::uint64_t next_batch_ = 1;
  std::uint64_t next_subscription_ = 1;
  std::uint64_t next_daily_generation_ = 1;
  SyncTotals totals_;
};

/// The sync state file's text; nullopt when it does not exist or cannot be read.
std::optional<std::string> read_state_file(const std::string& path);
/// Replaces the file through a temporary and a rename, so a crash leaves the
/// old or the new state, never half of one; false with `error` set on failure.
bool write_state_file(const std::string& path, const std::string& text, std::string& error);

}  // namespace graspd::sync
