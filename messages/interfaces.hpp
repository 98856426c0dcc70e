// The catalogue of graspd's typed actor interfaces: one `using` per role, each
// handler documented. Message payload structs live in the other messages/
// headers; this file only composes them. CAF 0.17 dialect: reacts_to /
// replies_to<...>::with<...> (the function-signature form fails at spawn).
#pragma once

#include <caf/typed_actor.hpp>

#include "messages/atoms.hpp"
#include "messages/git_messages.hpp"
#include "messages/management_messages.hpp"
#include "messages/nostr/verify.hpp"
#include "messages/relay_messages.hpp"
#include "messages/replication_messages.hpp"
#include "messages/store_messages.hpp"
#include "messages/sync_messages.hpp"
#include "messages/sync_plus_messages.hpp"

namespace graspd {

// The PROCESS MONITOR actor: samples process statistics into the metrics.
using process_monitor_actor = caf::typed_actor<
    // Timer: sample now and schedule the next tick.
    caf::reacts_to<atom::tick>,
    // JSON snapshot: {"uptime_seconds","resident_memory_bytes","open_fds","samples"}.
    caf::replies_to<atom::status>::with<std::string>>;

// The STATUS HISTORY actor: the status page's 24 h activity buckets.
using status_history_actor = caf::typed_actor<
    // Timer: sample the counters, publish the buckets, schedule the next tick.
    caf::reacts_to<atom::tick>>;

// The MANAGEMENT actor (NIP-86, actors/ops/management.*): checks each call's NIP-98 token (it owns
// the replay cache), runs the method, changes the runtime lists through the acceptance actor and
// the store writer.
using management_actor = caf::typed_actor<caf::replies_to<ManagementCall>::with<ManagementAnswer>>;

// The FAN-OUT actor: live subscriptions of every connection, fed by the
// store writer's change feed and by ephemeral events.
using fanout_actor = caf::typed_actor<
    // Registers a subscription (buffering until FanoutLive); replies true once registered.
    caf::replies_to<FanoutSubscribe>::with<bool>, caf::reacts_to<FanoutLive>,
    caf::reacts_to<FanoutUnsubscribe>, caf::reacts_to<FanoutDisconnect>,
    caf::reacts_to<FanoutEphemeral>,
    // The store writer's change feed: one message per committed batch.
    caf::reacts_to<StoreCommits>>;

// Stateless signature checks, one verifier per scheduler thread: a busy connection's events are
// verified on every core. Enums travel natively in CAF 0.17.
using verifier_actor = caf::typed_actor<caf::replies_to<VerifyEvent>::with<nostr::EventCheck>>;

// One per WebSocket connection: NIP-01 state of that client.
using client_session_actor =
    caf::typed_actor<caf::reacts_to<atom::ws_text, std::string>, caf::reacts_to<atom::ws_binary>,
                     caf::reacts_to<atom::ws_oversize>, caf::reacts_to<atom::ws_closed>,
                     caf::reacts_to<atom::ws_flush>, caf::reacts_to<atom::ws_drained>,
                     caf::reacts_to<atom::neg_idle>,
                     // A NEG-OPEN's store scan ended on the negentropy scanner's threads.
                     caf::reacts_to<NegentropyScanned>>;

// The store's change feed: whatever wants every committed event, once, in
// commit order (the fan-out, the acceptance actor, the self-subscriber).
using store_feed_actor = caf::typed_actor<caf::reacts_to<StoreCommits>>;

// The single writer of the LMDB store: batches the writes waiting in its
// mailbox into one write transaction and answers each only after commit.
using store_writer_actor = caf::typed_actor<
    // Store one event; the reply comes after mdb_txn_commit returned.
    caf::replies_to<StoreWrite>::with<WriteOutcome>,
    // Apply purgatory record changes in the same transaction as the events batched with them;
    // true once committed (the acceptance actor's held events and refs/nostr placeholders).
    caf::replies_to<StoreHeld>::with<bool>,
    // NIP-86: change the management lists and delete banned events, after the writes queued before
    // it; true once committed.
    caf::replies_to<StoreModeration>::with<bool>,
    // Add a change-feed subscriber (monitored; dropped when it dies).
    caf::reacts_to<atom::feed_subscribe, store_feed_actor>,
    // Internal: commit the pending batch / periodic NIP-40 sweep / periodic look for events
    // other processes on the same store committed.
    caf::reacts_to<atom::store_flush>, caf::reacts_to<atom::store_sweep>,
    caf::reacts_to<atom::store_tail>>;

// Whatever follows purgatory's held announcements (the self-subscriber): a snapshot when it
// subscribes, then every change, in the acceptance actor's order.
using held_feed_actor = caf::typed_actor<caf::reacts_to<HeldRepositories>>;

// Whatever sends purgatory's newly held events to the cluster peers (the SyncManager, when
// NGIT_SYNC_PEERS names any): answered once the connected peers hold them, or the wait ended.
using peer_feed_actor = caf::typed_actor<caf::replies_to<HeldForPeers>::with<bool>>;

// The ACCEPTANCE actor: the GRASP-01 policy between validation
// and the store, for client and synced events alike. A session without a
// hook accepts every valid event.
using acceptance_actor = caf::typed_actor<
    // Decides one valid event; refusals carry the OK message with its prefix.
    caf::replies_to<AcceptanceQuery>::with<AcceptanceVerdict>,
    // The store's change feed: keeps eligibility current, releases retries.
    caf::reacts_to<StoreCommits>,
    // Git hosting (git_host_actor): a push (with its refs/nostr refs), a state's objects or a
    // PR's commit arrived; held events restart or leave purgatory, placeholders are kept.
    caf::reacts_to<GitDataArrived>,
    // Add a held-feed subscriber: answered with HeldRepositories (snapshot, then changes).
    caf::reacts_to<atom::feed_subscribe, held_feed_actor>,
    // Set the peer-feed follower: every event held from then on, as it is recorded; the client's
    // OK waits for its answer.
    caf::reacts_to<atom::feed_subscribe, peer_feed_actor>,
    // Every event purgatory holds now (for a cluster peer that just connected).
    caf::replies_to<atom::held_events>::with<HeldForPeers>,
    // NIP-86 management: runtime bans and allowed owners change, banned events leave purgatory;
    // true once applied (the store writer persists the same change afterwards).
    caf::replies_to<StoreModeration>::with<bool>,
    // INTERNAL: periodic expiry of the retry cache; a held state's answer is due.
    caf::reacts_to<atom::tick>, caf::reacts_to<StateAnswerDue>>;

// -- Git hosting -------------------------------------------------------------

// Whatever follows git data arriving (the acceptance actor's purgatory).
using git_data_feed_actor = caf::typed_actor<caf::reacts_to<GitDataArrived>>;

// The GIT HOSTING actor (actors/git/git_host.*): owns the repositories on disk, the state applier,
// the refs/nostr refs of held pull requests and the fetches of missing git data. The only sender
// of GitDataArrived.
using git_host_actor = caf::typed_actor<
    // An announcement listing this service was accepted: its repository is created before the
    // reply (an empty reply: it exists; a git_errc error: it could not be created, logged).
    caf::replies_to<RepoAnnounced>::with<void>,
    // A held announcement expired or was withdrawn: its repository is removed.
    caf::reacts_to<RepoWithdrawn>,
    // Whether a repository of that identifier exists here (for an announced owner).
    caf::replies_to<RepoExists>::with<bool>,
    // Which of the repositories exist here, in the order asked.
    caf::replies_to<ReposHosted>::with<std::vector<RepositoryRef>>,
    // Whether a new archive has room (the `blocked:` refusal when not, else empty).
    caf::replies_to<ArchiveRoom>::with<std::string>,
    // A state event was stored or held: applied here, fetching what is missing.
    caf::reacts_to<StateStored>,
    // Held pull requests: look for (and fetch) their commits; look again; set their refs/nostr
    // refs; delete placeholders' refs (answered with those left).
    caf::reacts_to<PrHeld>, caf::reacts_to<PrCommitsCheck>, caf::reacts_to<PrRefChange>,
    caf::replies_to<PrRefsDelete>::with<std::vector<PrRefPushed>>,
    // GRASP-06: copy a pull request's commit from its submission area into the repositories it
    // tags here.
    caf::reacts_to<PrMirror>,
    // INTERNAL, from the transport and git processes: a push applied (answered once the
    // subscribers were told: the push's HTTP answer ends after that, so what a client publishes
    // after its push is judged after the push's git data); git data found; a held pull
    // request's commit to fetch.
    caf::replies_to<atom::git_pushed, GitDataArrived>::with<void>,
    caf::reacts_to<atom::git_found, GitDataArrived>,
    caf::reacts_to<atom::git_fetch, RepositoryRef, std::string, std::vector<std::string>,
                   std::string>,
    // INTERNAL: repository maintenance (git gc --auto) is due; a run ended (true: try it again).
    caf::reacts_to<atom::git_maintain>, caf::reacts_to<atom::git_maintained, bool>,
    // INTERNAL: the periodic re-check of the repositories' git data goes on.
    caf::reacts_to<atom::git_recheck>,
    caf::reacts_to<atom::git_deleted, std::uint64_t, std::vector<PrRefPushed>>,
    // Add a subscriber of GitDataArrived.
    caf::reacts_to<atom::feed_subscribe, git_data_feed_actor>,
    // Stop the git processes it started (shutdown); true once they were told to stop.
    caf::replies_to<atom::shutdown>::with<bool>>;

// -- GRASP-02 sync -----------------------------------------------------------

// The SYNC MANAGER actor: owns RepoSyncIndex, RelaySyncIndex and
// PendingSyncIndex (actors/sync/engine/sync_plan) and is the only place they change.
using sync_manager_actor = caf::typed_actor<
    // A self-subscriber batch of discovered repositories and root events.
    caf::reacts_to<RepoDiscovery>,
    // Reports of the relay connections it spawned.
    caf::reacts_to<RelayUp>, caf::reacts_to<RelayDown>, caf::reacts_to<RelaySubscriptionDone>,
    caf::reacts_to<RelaySubscriptionClosed>, caf::reacts_to<RelayRateLimited>,
    caf::reacts_to<RelayNegentropy>, caf::reacts_to<RelayTraffic>,
    // The acceptance actor's peer feed: a newly held event, sent on to the cluster peers, answered
    // once they answered it or the wait ended; their answers; the end of that wait.
    caf::replies_to<HeldForPeers>::with<bool>, caf::reacts_to<RelayPublished>,
    caf::reacts_to<PeerAckDue>,
    // INTERNAL: backoff/cooldown retry and the daily fresh sync, per relay.
    caf::reacts_to<RetryTimer>, caf::reacts_to<DailyTick>,
    // INTERNAL: the periodic empty-relay / reconnect check.
    caf::reacts_to<atom::tick>,
    // INTERNAL: publish the /api/sync snapshot.
    caf::reacts_to<atom::publish>,
    // The /api/sync JSON document.
    caf::replies_to<atom::status>::with<std::string>,
    // GRASP-03 Sync+: one fetch on a relay (through its connection, opening a control-plane one
    // when needed), answered when its history is complete or it failed.
    caf::replies_to<RelayFetch>::with<FetchOutcome>,
    // GRASP-03 Sync+: root authors' inboxes joining live coverage; the /api/sync Sync+ section.
    caf::reacts_to<PlusCoverage>, caf::reacts_to<SyncPlusStatus>,
    // INTERNAL: a fetch timed out; a control-plane connection may have gone idle.
    caf::reacts_to<FetchTimeout>, caf::reacts_to<FetchIdle>>;

// The RELAY CONNECTION actor: one per remote relay (canonical URL). Owns the
// outbound transport and the history (NIP-77 or pages); validates every event and feeds
// it through the acceptance policy to the store writer.
using relay_connection_actor =
    caf::typed_actor<caf::reacts_to<SyncSubscribe>, caf::reacts_to<SyncUnsubscribe>,
                     // A cluster peer's connection: publish events to it.
                     caf::reacts_to<RelayPublish>,
                     // Hang up (the manager no longer needs this relay).
                     caf::reacts_to<atom::shutdown>,
                     // INTERNAL, from the transport bridge.
                     caf::reacts_to<atom::relay_open, RelayUp>,
                     caf::reacts_to<atom::relay_msg, std::string>,
                     caf::reacts_to<atom::relay_gone, bool, std::string>,
                     // INTERNAL: report traffic counters to the manager.
                     caf::reacts_to<atom::tick>>;

// The SELF SUBSCRIBER actor: follows the store's change feed (plus a startup
// load) for announcements and root events, and the acceptance actor's held
// feed for repositories in purgatory, and sends batched RepoDiscovery to the
// manager; the batch window does not reset on new events.
using self_subscriber_actor = caf::typed_actor<caf::reacts_to<StoreCommits>,
                                               // Held announcements: StateOnly, Full, dropped.
                                               caf::reacts_to<HeldRepositories>,
                                               // INTERNAL: the batch window closed.
                                               caf::reacts_to<atom::tick>>;

// -- GRASP-03 Sync+ ----------------------------------------------------------

// A HISTORY WORKER actor: one per admitted history relay; fetches the groups the controller hands
// it, one at a time, through the sync manager, and quits when handed `done`.
using history_worker_actor = caf::typed_actor<caf::reacts_to<HistoryGroup>>;

// The SYNC PLUS controller actor: identity discovery and history-only mailbox probes over the
// self-subscriber's inventory.
using sync_plus_actor = caf::typed_actor<
    // The self-subscriber's inventory (startup load, then after each batch window).
    caf::reacts_to<PlusInventoryUpdate>,
    // A history worker's group ended (or it starts): answered with a HistoryGroup to the worker.
    caf::reacts_to<HistoryNext>,
    // INTERNAL: reconciliation, then a maintenance pass.
    caf::reacts_to<atom::tick>,
    // INTERNAL: a maintenance pass (one discovery source, one history relay) while work is due.
    caf::reacts_to<atom::maintain>,
    // The Sync+ section of /api/sync.
    caf::replies_to<atom::status>::with<std::string>,
    // The replication view: the mailboxes followed for one repository's threads.
    caf::replies_to<PlusRepositoryRelays>::with<std::vector<std::string>>>;

// The RELAY PROFILE publisher: dials the user-index relays one after the other, asks each for the
// relay key's kind 0 and 10002, sends ours where it holds none or another, then quits
// (docs/identity.md "Publishing").
using relay_profile_actor = caf::typed_actor<
    // INTERNAL, from the transport bridge of the connection in progress.
    caf::reacts_to<atom::relay_open, RelayUp>, caf::reacts_to<atom::relay_msg, std::string>,
    caf::reacts_to<atom::relay_gone, bool, std::string>,
    // INTERNAL: the deadline of the connection with this sequence number.
    caf::reacts_to<atom::tick, std::uint64_t>>;

// A REPLICATION PROBE (actors/sync/replication_probe.*): compares one relay with our store over a
// repository's filters by NIP-77, reports a RelayProbeOutcome to the replication actor and quits.
using replication_probe_actor = caf::typed_actor<
    // INTERNAL, from the transport bridge.
    caf::reacts_to<atom::relay_open, RelayUp>, caf::reacts_to<atom::relay_msg, std::string>,
    caf::reacts_to<atom::relay_gone, bool, std::string>,
    // INTERNAL: the probe's deadline.
    caf::reacts_to<atom::replication_wait>>;

// The REPLICATION actor (actors/sync/replication.*): the replication view of the hosted
// repositories. Owns the cache of measurements, starts the probes, answers the HTTP requests.
using replication_actor = caf::typed_actor<
    // GET /api/repositories/<npub>/<identifier>/replication (answered once the probes it
    // started are done, or at its deadline).
    caf::replies_to<ReplicationQuery>::with<ReplicationAnswer>,
    // What a relay probe or a git server probe found.
    caf::reacts_to<RelayProbeOutcome>, caf::reacts_to<ServerProbeOutcome>,
    // INTERNAL: the deadline of the waiting request with this number.
    caf::reacts_to<atom::replication_wait, std::uint64_t>,
    // INTERNAL: the background check of the next hosted repository.
    caf::reacts_to<atom::tick>>;

}  // namespace graspd
