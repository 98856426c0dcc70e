// The store writer actor: the daemon's only writer of the LMDB EventStore. It
// turns the StoreWrite and StoreHeld requests waiting in its mailbox into one
// write transaction, answers each request only after the commit (so `OK true` means
// durable), then publishes every newly committed event once, in commit order,
// to the change-feed subscribers, together with what other processes (graspd
// sync, graspd import) committed to the same store. It also sweeps NIP-40
// expired events on a timer.
#pragma once

#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <caf/typed_response_promise.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "messages/interfaces.hpp"
#include "store/lmdb/event_store.hpp"

namespace caf {
class actor_system;
}

namespace graspd {

struct StoreWriterConfig {
  /// Most events committed in one write transaction.
  std::size_t max_batch = 2000;
  /// Period of the NIP-40 expiration sweep; zero disables it.
  std::chrono::seconds sweep_interval{60};
  /// How often events other processes committed to the store (graspd sync, graspd import) are
  /// looked for and published on the change feed; zero disables it. They are published before
  /// any later commit of this writer in every case, so the feed stays in commit order.
  std::chrono::milliseconds tail_interval{0};
  /// Events of other processes published per look; the rest follow at the next one.
  std::size_t tail_max = 5000;
  /// Optional: told about every write transaction (events, seconds, whether it failed).
  std::function<void(std::size_t, double, bool)> observe_commit;
};

struct StoreWriterState {
  std::shared_ptr<store::EventStore> store;
  StoreWriterConfig config;
  std::vector<nostr::EventPtr> pending;
  /// Parallel to `pending`: StoreWrite::depends_on of each (mostly empty).
  std::vector<std::vector<nostr::EventId>> depends_on;
  bool any_dependencies = false;
  std::vector<caf::typed_response_promise<WriteOutcome>> promises;
  /// Purgatory record changes for the same transaction, and who waits for each.
  std::vector<HeldRecordChanges> held;
  std::vector<caf::typed_response_promise<bool>> held_promises;
  bool flush_queued = false;
  std::vector<store_feed_actor> subscribers;
  /// First record sequence number not published yet: records below it were published (or were
  /// there at spawn); records from it on that this writer did not commit are another process's.
  std::uint64_t tail_from = 0;
  /// Events of other processes published.
  std::uint64_t foreign = 0;
  // Counters for status and tests.
  std::uint64_t batches = 0;
  std::uint64_t committed = 0;
  std::uint64_t failed_batches = 0;
  std::uint64_t swept = 0;

  static inline const char* name = "store_writer";
};

store_writer_actor::behavior_type store_writer(
    store_writer_actor::stateful_pointer<StoreWriterState> self,
    std::shared_ptr<store::EventStore> store, StoreWriterConfig config);

/// Spawns the writer on its own thread (detached): commits wait for fsync,
/// which must not stall the cooperative scheduler's workers.
store_writer_actor spawn_store_writer(caf::actor_system& system,
                                      std::shared_ptr<store::EventStore> store,
                                      StoreWriterConfig config = {});

}  // namespace graspd
