// Payloads of the GRASP-03 Sync+ actors' messages (SYNC PLUS controller, HISTORY WORKER, and the
// fetch path of the SYNC MANAGER in messages/interfaces.hpp). All travel inside one process.
#pragma once

#include <caf/allowed_unsafe_message_type.hpp>

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>

#include "messages/nostr/filter.hpp"

namespace graspd::sync {
struct PlusSnapshot;  // actors/plus/engine/plus_inventory.hpp
}  // namespace graspd::sync

namespace graspd {

/// SelfSubscriber -> SyncPlus: the inventory after a batch window (or the startup load).
struct PlusInventoryUpdate {
  std::shared_ptr<const sync::PlusSnapshot> snapshot;
};

/// Who asks the sync manager for a fetch: the role of the connection it may open.
enum class FetchRole : std::uint8_t { discovery, history };

/// SyncPlus / HistoryWorker -> SyncManager: fetch what `filters` match on `relay` (canonical)
/// through its relay connection (one REQ lifecycle: history pages or NIP-77, then closed), opening
/// a control-plane connection when there is none. `trusted` relays are operator-configured (may
/// be private). Replied with FetchOutcome when the history is complete, failed or timed out.
struct RelayFetch {
  std::string relay;
  nostr::Filters filters;
  bool trusted = false;
  FetchRole role = FetchRole::discovery;
  /// The most this fetch may take in all, however its relay progresses (0: the sync manager's
  /// fetch_max_duration). Sync+ passes what is left of the relay's time budget.
  std::int64_t budget_seconds = 0;
};

struct FetchOutcome {
  bool ok = false;
  std::string error;
};

/// SyncPlus -> SyncManager: the roots each relay covers live as a root author's inbox (or their
/// fallback relay); replaces the previous coverage. Joins ordinary GRASP-02 coverage.
struct PlusCoverage {
  std::map<std::string, std::set<nostr::EventId>> roots;
};

/// SyncPlus -> SyncManager: the Sync+ section of /api/sync, a JSON object.
struct SyncPlusStatus {
  std::string json;
};

/// SyncManager INTERNAL: a fetch ran out of time / a control connection may be idle.
struct FetchTimeout {
  std::string subscription_id;
};
struct FetchIdle {
  std::string relay;
  std::uint64_t generation = 0;
};

/// HistoryWorker -> SyncPlus: the worker's last group ended (`previous` = its outcome; unset on
/// the first ask); the controller answers with the next HistoryGroup.
struct HistoryNext {
  std::string relay;
  bool has_previous = false;
  bool previous_ok = false;
};

/// SyncPlus -> HistoryWorker: the next group to fetch; `done` ends the worker.
struct HistoryGroup {
  bool done = true;
  nostr::Filters filters;
  bool trusted = false;
  /// What is left of the relay's time budget for this admission (RelayFetch::budget_seconds).
  std::int64_t budget_seconds = 0;
};

/// Replication view -> SyncPlus: the mailboxes Sync+ follows for one repository's threads
/// ("30617:<owner hex>:<identifier>"); answered with their canonical URLs.
struct PlusRepositoryRelays {
  std::string repo;
};

}  // namespace graspd

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(graspd::PlusInventoryUpdate)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(graspd::PlusRepositoryRelays)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(graspd::RelayFetch)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(graspd::FetchOutcome)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(graspd::PlusCoverage)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(graspd::SyncPlusStatus)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(graspd::FetchTimeout)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(graspd::FetchIdle)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(graspd::HistoryNext)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(graspd::HistoryGroup)
