// The store writer actor: the only writer of the LMDB EventStore. It turns
// the StoreWrite requests waiting in its mailbox into one write transaction,
// answers each request only after the commit (so `OK true` means durable),
// then publishes every newly committed event once, in commit order, to the
// change-feed subscribers. It also sweeps NIP-40 expired events on a timer.
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
#include "store/event_store.hpp"

namespace caf {
class actor_system;
}

namespace graspd {

struct StoreWriterConfig {
  /// Most events committed in one write transaction.
  std::size_t max_batch = 2000;
  /// Period of the NIP-40 expiration sweep; zero disables it.
  std::chrono::seconds sweep_interval{60};
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
  bool flush_queued = false;
  std::vector<store_feed_actor> subscribers;
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
