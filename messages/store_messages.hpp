// Payloads of the store writer actor's messages (see store_writer_actor in
// messages/interfaces.hpp) and the store's per-event write outcome.
#pragma once

#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/meta/type_name.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "messages/nostr/event.hpp"

namespace graspd {

/// What the store did with one submitted event.
enum class WriteOutcome : std::uint8_t {
  stored,                  // committed
  duplicate,               // the id is already stored
  replaced_older,          // committed; it superseded an older replaceable/addressable version
  rejected_older_version,  // a newer (or equal with lower id) version is stored
  deleted,                 // refused: deleted by a NIP-09 request
  expired,                 // refused: NIP-40 expiration in the past
  ephemeral_not_stored,    // ephemeral kind: never stored (still broadcast by the relay)
  dependency_missing,      // refused: an event named in StoreWrite::depends_on is not stored
  held,                    // accepted into purgatory: kept back until its git data arrives
  error,                   // the write transaction failed; nothing was committed
};

/// True for outcomes by which the event was written: it is in the store now, as a new event or as
/// the newer version of its address.
constexpr bool wrote(WriteOutcome outcome) {
  return outcome == WriteOutcome::stored || outcome == WriteOutcome::replaced_older;
}

// Enums travel natively in CAF 0.17 (no inspect needed, one would be ambiguous).

/// Request to store one event; answered with a WriteOutcome after commit.
struct StoreWrite {
  nostr::EventPtr event;
  /// Events the acceptance policy accepted this one on while they were not yet committed. It is
  /// stored only if each of them is in the store when it is applied (they are written first, so
  /// they were committed earlier or sit earlier in the same transaction); else the answer is
  /// dependency_missing and the policy judges it again.
  std::vector<nostr::EventId> depends_on;
};

/// Changes to purgatory's records (the store's "held" database, beside the events and never
/// served): the records to write (id → opaque record, see store/lmdb/store_view.hpp) and the ids
/// whose record goes. Applied all or nothing.
struct HeldRecordChanges {
  std::vector<std::pair<nostr::EventId, std::string>> puts;
  std::vector<nostr::EventId> erases;

  bool empty() const { return puts.empty() && erases.empty(); }
};

/// Request to apply HeldRecordChanges in the writer's next transaction; answered true once
/// committed, false when they could not be written (the events of that transaction are not
/// affected).
struct StoreHeld {
  HeldRecordChanges changes;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, StoreHeld& x) {
  return f(caf::meta::type_name("StoreHeld"), x.changes.puts, x.changes.erases);
}

/// The NIP-86 management lists the store keeps (its "moderation" database): runtime bans and the
/// runtime allow list (docs/operations.md, "Management API").
enum class ModerationList : std::uint8_t {
  banned_pubkeys,
  banned_events,
  allowed_pubkeys,
};

/// One entry of a ModerationList: a pubkey or an event id, and the reason it was given with.
struct ModerationEntry {
  ModerationList list = ModerationList::banned_pubkeys;
  nostr::Bytes32 key{};
  std::string reason;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, ModerationEntry& x) {
  return f(caf::meta::type_name("ModerationEntry"), x.list, x.key, x.reason);
}

/// Request to change the management lists and delete banned events (stored ones and their
/// purgatory records), in one write transaction after the writes already queued; answered true
/// once committed, false when it failed (nothing of it was applied).
struct StoreModeration {
  std::vector<ModerationEntry> puts;
  /// Entries to remove (their reason is not looked at).
  std::vector<ModerationEntry> erases;
  std::vector<nostr::EventId> delete_events;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, StoreModeration& x) {
  return f(caf::meta::type_name("StoreModeration"), x.puts, x.erases, x.delete_events);
}

/// An event committed to the store, published once to every feed subscriber
/// in commit order. `json` is the exact stored text (what REQ answers send).
struct StoreCommitted {
  nostr::EventPtr event;
  std::shared_ptr<const std::string> json;
  WriteOutcome outcome = WriteOutcome::stored;  // stored or replaced_older
  /// Commit order (EventStore's record sequence); compare with a query's horizon.
  std::uint64_t seq = 0;
};

/// The change feed's message: the events one write transaction committed (or that another process
/// committed, read back), in commit order. One message per transaction and subscriber, not one per
/// event: a batch holds ~100 events under load, and each message costs an allocation and a mailbox
/// hand-off (docs/store.md). Shared, immutable: every subscriber reads the same vector.
struct StoreCommits {
  std::shared_ptr<const std::vector<StoreCommitted>> commits;

  static StoreCommits of(std::vector<StoreCommitted> commits) {
    return {std::make_shared<const std::vector<StoreCommitted>>(std::move(commits))};
  }
};

}  // namespace graspd

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(graspd::StoreWrite)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(graspd::StoreCommitted)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(graspd::StoreCommits)
