// Internal to the acceptance actor (actors/policy/acceptance*.cpp): the steps its source files
// share. acceptance.cpp judges and writes, acceptance_purgatory.cpp holds announcements and states
// in purgatory and records the holds; acceptance_pr.cpp holds
// pull requests and keeps the refs/nostr placeholders (docs/spec/git-hosting.md §6–§7);
// acceptance_peers.cpp tells the cluster peers what is held.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "actors/policy/acceptance.hpp"

namespace graspd::acceptance_steps {

using Self = acceptance_actor::stateful_pointer<AcceptanceState>;
/// Where the outcome of an accepted event goes: the asking session, or nowhere for a retry.
using Reply = std::function<void(AcceptanceVerdict)>;

/// One event on its way through the policy and the writer.
struct Submission {
  nostr::EventPtr event;
  /// Who sent it (a client's address, a sync peer): its share of the retry cache.
  std::string source;
  Reply reply;
  /// Rounds judged again because a dependency was not stored after all.
  int attempt = 0;
};

/// Sent by a sync peer ("relay:<url>", messages/relay_messages.hpp), not by a client.
inline bool came_by_sync(const Submission& submission) {
  return submission.source.rfind("relay:", 0) == 0;
}

// acceptance.cpp and acceptance_purgatory.cpp (the purgatory steps)

/// Stores an accepted event and answers after the commit; writes leave in decision order.
void write(Self self, Submission submission, std::vector<nostr::EventId> depends_on);
/// Stores an accepted event that is not held: an announcement listing this service has its
/// repository created first (a push right after the OK finds it), then write().
void store_accepted(Self self, Submission submission, policy::Decision decision);
/// Hands purgatory record changes to the store writer (its next transaction); a failure is logged
/// and counted (the state in memory stays).
void persist(Self self, HeldRecordChanges changes);
/// The answer to an event whose hold could not be recorded.
inline constexpr std::string_view unrecorded_hold_message =
    "error: could not record the event while it waits for git data; try again later";
/// Writes the record of a hold purgatory just took (erasing the one of the version it replaced)
/// and calls `then` once it is committed; when that fails the hold is undone and the submitter
/// gets unrecorded_hold_message instead. Awaited: nothing else is judged meanwhile.
void record_hold(Self self, const Submission& submission,
                 const policy::Purgatory::HoldResult& result, std::function<void()> then);
/// The refusal of an event purgatory would not hold (a bound or a share is reached), counted;
/// nullopt when it was held (or is a duplicate).
std::optional<AcceptanceVerdict> hold_refusal(Self self, policy::Purgatory::Hold outcome);
/// Held counts to metrics and /api/sync.
void publish_purgatory(Self self);
/// A stored deletion request (kind 5) ends the holds of the events it names (§4.6).
void withdraw_held(Self self, const nostr::Event& deletion);
/// NIP-86: the management lists change at once; a banned event leaves purgatory (the store writer
/// deletes its record with the stored copy). True: applied.
bool moderate(Self self, const StoreModeration& changes);
/// Stores an event released from purgatory; its purgatory record goes only once the store answered
/// (kept when the write failed, so a restart holds it again), and `then` gets the answer.
void write_released(Self self, nostr::EventPtr ev, Reply then);
/// Tells the held feed about announcements whose repository changed level (StateOnly sync while
/// held, Full once released, nothing once dropped).
void tell_held_feed(Self self, const std::vector<nostr::EventPtr>& events,
                    HeldRepositories::Change change);
/// A new follower gets every held announcement now, then each change.
void subscribe_held_feed(Self self, held_feed_actor subscriber);
/// Purgatory records to erase, for persist().
HeldRecordChanges erase_records(std::vector<nostr::EventId> ids);
/// The repositories of held announcements that left purgatory without git data go (§4.7).
void withdraw_repositories(Self self, const std::vector<policy::HeldEvent>& entries,
                           std::vector<nostr::EventPtr>& dropped);

// acceptance_peers.cpp

/// Holds a client's answer to a held event until the cluster peers hold it too.
struct PeerGate;
/// With cluster peers, routes the submission's answer through a gate that send_to_peers opens;
/// null (the answer goes straight to the client) without them.
std::shared_ptr<PeerGate> gate_on_peers(Self self, Submission& submission);
/// The recorded hold goes to the cluster peers; their answer (or the wait's end) opens the gate.
void send_to_peers(Self self, const nostr::EventPtr& event, std::shared_ptr<PeerGate> gate);
/// Every event purgatory holds (none without purgatory), announcements first, for a cluster peer
/// that connected.
HeldForPeers held_for_peers(const AcceptanceState& st);

// acceptance_pr.cpp

/// An accepted PR event with purgatory on: stored (store_accepted) when no repository here that it
/// `a`-tags exists or a placeholder ref already names its commit (§7.4); else held or refused (no
/// `c` tag), and answered.
void hold_pull_request(Self self, Submission submission, policy::Decision decision);
/// Git data arrived: pushed refs/nostr refs release held PR events or become placeholders, found
/// commits release the PR events naming them, and other arrivals have held ones looked for again.
void on_pull_request_git_data(Self self, const GitDataArrived& arrived);
/// Placeholders past their time (or doomed): their refs are handed to git hosting for deletion in
/// bounded batches; each placeholder and its record stay until git says its ref is gone (§7.3).
void expire_placeholders(Self self);
/// GRASP-06 back-fill: a committed announcement gets the stored pull requests that tag it and
/// whose commit waits in their submission area here (docs/policy.md "Pull request submissions").
void mirror_submissions_into(Self self, const nostr::Event& announcement);
/// Start-up: the placeholders are read with the held events.
void start_pull_requests(Self self, std::int64_t hold_seconds);
/// Hands the held PR events to git hosting again (start-up: their fetches did not survive).
void resume_pull_requests(Self self);

// ---------------------------------------------------------------- archives
// (acceptance_archives.cpp)

/// GRASP-05 storage caps: a new archive needs room, which git hosting (owning the disk) knows;
/// asked and awaited, then `next` goes on with the submission, or it is refused `blocked:`.
void with_archive_room(Self self, Submission submission, policy::Decision decision,
                       void (*next)(Self, Submission, policy::Decision));
/// The identifiers of the archive announcements whose hold ends at `now`: neither they nor the
/// states of their identifier are remembered, so sync brings them back and their git data is
/// fetched again (docs/policy.md "Archives").
std::set<std::string> expiring_archives(Self self, std::int64_t now);

}  // namespace graspd::acceptance_steps
