// The RELAY CONNECTION actor: one per remote relay, keyed by its canonical
// URL. Owns the outbound transport (runtime/net/relay_client) and the history
// of each subscription: reconciled by NIP-77 (NegentropyHistory) or paged by
// REQ (HistoryPager), the peer's lack of NIP-77 reported as RelayNegentropy. Every event the peer
// sends is parsed, size-checked, id- and signature-verified (on the verifier actors; frames are
// then handled in arrival order), then asked through the acceptance policy and written by the store
// writer, exactly like a client's EVENT. Reports to the manager: RelayUp, RelaySubscriptionDone,
// RelaySubscriptionClosed, RelayRateLimited, RelayTraffic, and RelayDown right before it quits.
// Every frame, whatever it was, is reported consumed to the transport once handled (an event once
// it settled), which bounds what a peer can make it hold.
#pragma once

#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "actors/ops/failed_replies.hpp"
#include "actors/relay/engine/arrival_order.hpp"
#include "actors/relay/verifier_pool.hpp"
#include "actors/sync/engine/history_pager.hpp"
#include "actors/sync/engine/history_slots.hpp"
#include "actors/sync/engine/negentropy_history.hpp"
#include "messages/interfaces.hpp"
#include "messages/nostr/json.hpp"
#include "messages/nostr/verify.hpp"
#include "messages/relay_url.hpp"
#include "runtime/net/relay_client.hpp"

namespace graspd {

struct RelayConnectionConfig {
  runtime::RelayClientOptions client;
  nostr::ParseLimits limits;
  /// Events being validated/stored at once; past it reading pauses.
  std::size_t max_in_flight = 512;
  /// How often counters reach the manager (/api/sync, metrics); one small message per relay, and
  /// only when something happened.
  std::chrono::seconds traffic_report_interval{1};
  /// True when the store already holds this id. An event every peer sends (the usual case in a
  /// mesh) is then skipped before its signature check, acceptance and store round trip; unset =
  /// every event goes the whole way.
  std::function<bool(const nostr::EventId&)> already_stored;
  /// Signature checks off this actor, so one relay's history is verified on every core; empty =
  /// the connection verifies itself.
  std::vector<verifier_actor> verifiers;
  /// Our records for a filter, which NIP-77 reconciles against; unset = an empty set (everything
  /// the peer holds is fetched, and the already-stored shortcut skips what we have).
  sync::LocalRecords local_records;
  sync::NegentropyLimits negentropy;
  /// History REQs (pages and NIP-77 id fetches together) open at once: the slots the plan keeps
  /// free of live REQs (SyncConfig::reserved_subscriptions, set by the manager).
  std::size_t history_slots = 2;
  /// Unix seconds (bounds the time windows split for NIP-77); unset = the system clock.
  std::function<std::int64_t()> unix_now;
  /// The relay key, which answers the peer's NIP-42 AUTH challenges; unset = they are ignored
  /// (docs/sync.md "AUTH from peers").
  std::optional<nostr::SecretKey> auth_key;
};

/// Opens the transport; a factory so tests can script a peer without sockets (boot passes one
/// that dials on the network threads).
using RelayClientFactory = std::function<std::shared_ptr<runtime::RelayClient>(
    const ParsedUrl&, const runtime::RelayClientOptions&,
    std::shared_ptr<runtime::RelayClientHandler>)>;

struct RelayConnectionState {
  static inline const char* name = "relay_connection";

  std::string relay;
  RelayConnectionConfig config;
  sync_manager_actor manager;
  acceptance_actor acceptance;
  store_writer_actor writer;
  std::shared_ptr<runtime::RelayClient> client;
  /// The history REQ slots the pager and the NIP-77 fetches share.
  std::shared_ptr<sync::HistorySlots> slots;
  /// True while the slots' waiters are being granted (apply_step runs inside).
  bool granting = false;
  sync::HistoryPager pager;
  /// Subscriptions whose history is reconciled by NIP-77; each lives here or in the pager.
  sync::NegentropyHistory negentropy;
  /// Whether the peer's NIP-77 support was reported to the manager on this connection.
  bool negentropy_reported = false;
  bool open = false;
  std::size_t in_flight = 0;
  bool paused = false;
  RelayTraffic traffic;  // since the last report
  /// Bytes of handled frames not yet reported to the transport (RelayClient::consumed), which
  /// stops reading past its inbound bound: reported in batches and on every tick.
  std::size_t unreported_consumed = 0;
  /// The peer's frames in arrival order from the first EVENT whose signature check is still out:
  /// the pager must see every valid event of a subscription before its EOSE or CLOSED.
  using Arrivals = ArrivalOrder<std::function<void()>>;
  Arrivals arrivals;
  /// At most `max_in_flight` checks out on the sync's verifiers.
  VerifierPool verifiers;
  /// Events published to this peer (a cluster peer, RelayPublish) whose OK has not come yet.
  std::set<nostr::EventId> published;
  /// The peer's last NIP-42 challenge answered: a repeated one is not signed again.
  std::string auth_challenge;
  /// Failed replies of the store writer and the acceptance actor (the event is then not stored).
  FailedReplies write_failures{name, "store write"};
  FailedReplies acceptance_failures{name, "acceptance query"};
};

relay_connection_actor::behavior_type relay_connection(
    relay_connection_actor::stateful_pointer<RelayConnectionState> self, std::string relay,
    RelayConnectionConfig config, sync_manager_actor manager, acceptance_actor acceptance,
    store_writer_actor writer, RelayClientFactory clients);

/// True when a CLOSED/OK/NOTICE text tells us to slow down.
bool signals_rate_limit(std::string_view message);

}  // namespace graspd
