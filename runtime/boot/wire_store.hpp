// Wiring of the event store: opens the LMDB store under NGIT_RELAY_DATA_PATH and spawns its single
// writer, whose commits feed the store metrics.
#pragma once

#include <memory>

#include "messages/interfaces.hpp"
#include "runtime/boot/services.hpp"
#include "runtime/ops/file_change_watch.hpp"
#include "store/lmdb/event_store.hpp"

namespace graspd::boot {

struct WiredStore {
  /// Read transactions for whoever needs them; the writer owns every write.
  std::shared_ptr<store::EventStore> store;
  store_writer_actor writer;
  /// Wakes the writer when another process commits; null when the writer polls instead.
  std::shared_ptr<runtime::FileChangeWatch> foreign_writes;
};

/// Config → StoreOptions.
store::StoreOptions store_options(const runtime::Config& config);

/// Throws std::runtime_error ("event store: ...") when the store cannot be opened.
WiredStore wire_store(const Services& services);

/// Sends the writer exit; writes already in its mailbox still commit.
void stop(const WiredStore& wired);

}  // namespace graspd::boot
