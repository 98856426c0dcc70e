// GRASP-03 Sync+ fetch routing: the fetches in flight (RelayFetch) and the control-plane
// connections opened for them, as a pure state machine beside the SyncPlan. Inputs are facts (a
// fetch asked for, a connection opened or lost, a part's history complete, traffic, a timer
// fired, the plan dialling or hanging up a relay); outputs are commands the SyncManager actor
// executes (connect, subscribe, close, answer, arm a timer). Time is passed in (unix seconds).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "actors/sync/engine/sync_plan.hpp"
#include "messages/nostr/filter.hpp"

namespace graspd::sync {

struct FetchRouterConfig {
  /// How long a fetch may go without progress from its relay (a page, a NIP-77 round, a
  /// requested event), and the longest it may take in all however it progresses.
  std::int64_t fetch_timeout_seconds = 30;
  std::int64_t fetch_max_duration_seconds = 300;
  /// How long a control-plane connection without a fetch stays open before it retires.
  std::int64_t control_idle_seconds = 10;
  /// The plan's settings that fetches follow too: NIP-77 where the peer may speak it, and the
  /// REQ limits assumed when the peer's NIP-11 does not say.
  bool negentropy = true;
  std::size_t default_max_message_bytes = 65536;
  std::size_t default_max_filters = 10;
};

/// What an open connection's peer says in its NIP-11 (0 or unset where it does not say).
struct ConnectionLimits {
  std::size_t max_message_bytes = 0;
  std::size_t max_filters = 0;
  std::optional<bool> nip77 = std::nullopt;
  std::size_t max_subscriptions = 0;
  std::size_t max_subscription_values = 0;
};

/// What the SyncManager knows of the relay a fetch asks for, beside the router's own state.
struct RelayFacts {
  /// One of this service's own URLs.
  bool ours = false;
  /// The plan tracks it (a repository relay).
  bool tracked = false;
  /// A connection to it exists, open or not.
  bool connected = false;
};

/// One RelayFetch. `role` ("discovery" or "history") names who asked, for /api/sync and the log;
/// `trusted` relays are operator-configured (their connection may reach private addresses).
struct FetchRequest {
  RelayUrl relay;
  nostr::Filters filters;
  bool trusted = false;
  std::string role = "discovery";
  /// The most the fetch may take in all (0: fetch_max_duration); a smaller budget cuts it sooner.
  std::int64_t budget_seconds = 0;
};

/// A fetch in flight, by its id `plus-<n>`.
struct PlusFetch {
  RelayUrl relay;
  nostr::Filters filters;
  /// Its subscriptions went to the connection (it was open).
  bool sent = false;
  /// Its subscriptions still open: the filters packed to the peer's NIP-11 limits, `<id>` alone
  /// or `<id>.<k>` when they need more than one REQ.
  std::set<std::string> parts{};
  std::set<std::string> done_parts{};
  /// When it was asked for, and whether its relay progressed since the last timeout: a large
  /// paginated fetch lives on while pages come.
  std::int64_t started = 0;
  bool progressed = false;
  /// When it is cut however it progresses: started + min(budget, fetch_max_duration); `budget`
  /// says the requester's budget set it (the answer then says "budget spent").
  std::int64_t deadline = 0;
  bool budget = false;
};

/// A connection opened for fetches only, not tracked by the plan: promoted to the ordinary
/// lifecycle when the plan dials the same relay.
struct ControlConnection {
  /// The role of the fetch that opened it; a repository connection the plan hung up on while
  /// fetches ran on it stays as a "discovery" one.
  std::string role = "discovery";
  /// Bumped by every new fetch: an idle timer of an older generation is stale.
  std::uint64_t generation = 0;
};

/// What the fetch path counted: /api/sync's `fetches` object under these names, and
/// graspd_sync_total{what="fetches_<name>"} (actors/sync/sync_metrics.hpp).
struct FetchCounts {
  std::uint64_t started = 0;
  std::uint64_t failed = 0;
  std::uint64_t control_dials = 0;
  std::uint64_t promotions = 0;
  std::uint64_t control_retired = 0;
};

/// Traffic a relay's connection reported, as far as it is progress for fetches.
struct RelayProgress {
  std::uint64_t pages = 0;
  std::uint64_t negentropy_rounds = 0;
  std::uint64_t events_received = 0;
  std::uint64_t events_unrequested = 0;
  std::uint64_t events_invalid = 0;
};

// -- commands the SyncManager actor executes ---------------------------------
// OpenSubscription and CloseSubscription (sync_plan.hpp) send a fetch part's REQ / CLOSE on the
// relay's connection (only while it has one).

/// Open a connection for the plan's Dial: there is none to promote.
struct Connect {
  RelayUrl relay;
};
/// Open a control-plane connection for a fetch.
struct ConnectForFetches {
  RelayUrl relay;
  bool trusted = false;
  std::string role;
};
/// The relay's connection now serves the plan too; when it is already `open`, the plan hears
/// SyncPlan::on_connected with its limits at once (after the Dial's other commands).
struct Promoted {
  RelayUrl relay;
  std::optional<ConnectionLimits> open;
};
/// Shut the relay's connection down, when it has one.
struct Disconnect {
  RelayUrl relay;
};
/// Drop the relay's per-relay figures (/api/sync): nothing holds it any more.
struct ForgetRelay {
  RelayUrl relay;
};
/// An idle control-plane connection retires: shut down and its figures dropped.
struct Retire {
  RelayUrl relay;
};
/// Reply to the RelayFetch that started fetch `fetch_id`.
struct AnswerFetch {
  std::string fetch_id;
  bool ok = false;
  std::string error;
};
/// Arm a timer that comes back as on_timeout(fetch_id).
struct ArmFetchTimeout {
  std::string fetch_id;
  std::int64_t delay_seconds = 0;
};
/// Arm a timer that comes back as on_idle(relay, generation).
struct ArmIdle {
  RelayUrl relay;
  std::uint64_t generation = 0;
  std::int64_t delay_seconds = 0;
};
/// What /api/sync shows of the fetch path changed.
struct RefreshStatus {};

using FetchCommand = std::variant<Connect, ConnectForFetches, Promoted, Disconnect, ForgetRelay,
                                  Retire, OpenSubscription, CloseSubscription, AnswerFetch,
                                  ArmFetchTimeout, ArmIdle, RefreshStatus>;
using FetchCommands = std::vector<FetchCommand>;

/// on_fetch's answer: the fetch's id and the commands. A refused fetch has no id; its commands
/// answer it at once (AnswerFetch with an empty id).
struct FetchStart {
  std::string id;
  FetchCommands commands;
};

/// The SyncManager's fetch path: the fetches in flight, their parts, the control-plane
/// connections and the limits of every open connection, and the decisions over them.
class FetchRouter {
 public:
  FetchRouter() = default;
  explicit FetchRouter(FetchRouterConfig config) : config_(config) {}

  /// Refused ("relay not available") for our own relays and for a relay the plan tracks that has
  /// no connection (its reconnect is the plan's to time). Otherwise sent on the relay's
  /// connection once it is open, dialling a control-plane one when there is none, and given
  /// fetch_timeout to make progress.
  FetchStart on_fetch(FetchRequest request, const RelayFacts& relay, std::int64_t now);
  /// The relay's connection opened: fetches waiting for it go out.
  FetchCommands on_relay_up(const RelayUrl& relay, const ConnectionLimits& limits);
  /// The relay's connection ended (it went down, or its actor quit): its fetches fail with
  /// `reason` and it is no control-plane connection any more.
  FetchCommands on_connection_lost(const RelayUrl& relay, const std::string& reason);
  /// Whether the relay's connection serves fetches only (`tracked`: the plan tracks the relay):
  /// its end then is none of the plan's business.
  bool serves_fetches_only(const RelayUrl& relay, bool tracked) const;

  /// A subscription's history is complete. nullopt when it is not a fetch part (it is the
  /// plan's); a fetch completes once every part did.
  std::optional<FetchCommands> on_part_done(const std::string& subscription_id);
  /// The peer closed a subscription; nullopt when it is not a fetch part. Its fetch fails.
  std::optional<FetchCommands> on_part_closed(const std::string& subscription_id,
                                              const std::string& message);
  /// Pages, NIP-77 rounds and requested events are progress for the relay's sent fetches;
  /// unrequested or invalid events are not (a peer cannot keep a fetch open with noise).
  void on_traffic(const RelayUrl& relay, const RelayProgress& traffic);
  /// A fetch's timer: one that progressed since the last one waits another fetch_timeout (at
  /// most until its deadline) unless it reached its deadline: fetch_max_duration, or the
  /// requester's budget ("budget spent: ..."); any other fails ("timed out").
  FetchCommands on_timeout(const std::string& fetch_id, std::int64_t now);
  /// A control-plane connection's idle timer: it retires when the generation is current, it has
  /// no fetch and the plan does not track the relay (`tracked`).
  FetchCommands on_idle(const RelayUrl& relay, std::uint64_t generation, bool tracked);

  /// The plan dials the relay. With a connection there (`connected`: a control-plane one) it is
  /// promoted instead of a second one opening.
  FetchCommands on_plan_dial(const RelayUrl& relay, bool connected);
  /// The plan hangs up on the relay: the connection stays as a control-plane one while fetches
  /// run on it, else it is shut down and forgotten.
  FetchCommands on_plan_hang_up(const RelayUrl& relay);

  const std::map<std::string, PlusFetch>& fetches() const { return fetches_; }
  /// The fetch each open part subscription belongs to.
  const std::map<std::string, std::string>& fetch_parts() const { return parts_; }
  const std::map<RelayUrl, ControlConnection>& control() const { return control_; }
  const FetchCounts& counts() const { return counts_; }
  /// Fetches in flight on the relay.
  std::size_t fetches_on(const RelayUrl& relay) const;
  /// Whether the relay's connection is open (a promoted control connection already is).
  bool is_open(const RelayUrl& relay) const { return open_.count(relay) > 0; }

 private:
  bool has_fetches(const RelayUrl& relay) const { return fetches_on(relay) > 0; }
  /// The delay of the fetch's next timer: fetch_timeout, or less when its deadline comes first.
  std::int64_t next_timer(const PlusFetch& fetch, std::int64_t now) const;
  /// Hands a fetch to its relay's open connection, packed so that every REQ fits the peer's
  /// NIP-11 limits.
  void send(const std::string& id, PlusFetch& fetch, FetchCommands& out);
  void finish(const std::string& id, bool ok, std::string error, FetchCommands& out);
  void fail_fetches(const RelayUrl& relay, const std::string& reason, FetchCommands& out);
  /// A control-plane connection with no fetch left retires after control_idle, unless a fetch
  /// comes first.
  void arm_idle(const RelayUrl& relay, FetchCommands& out);

  FetchRouterConfig config_;
  std::map<std::string, PlusFetch> fetches_;
  std::map<std::string, std::string> parts_;
  std::map<RelayUrl, ControlConnection> control_;
  /// The limits of every open connection, the plan's and the control-plane ones.
  std::map<RelayUrl, ConnectionLimits> open_;
  std::uint64_t next_fetch_ = 1;
  FetchCounts counts_;
};

}  // namespace graspd::sync
