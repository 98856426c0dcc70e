// One simulated graspd node: the real store writer, acceptance, sync manager and self-subscriber
// over a real LMDB store in a temporary directory, configured from the same option table and the
// same Config -> XConfig translations the daemon uses (runtime/boot), with the simulated clock and
// the simulated network's RelayClientFactory in place of the system clock and the sockets.
#pragma once

#include <caf/fwd.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <set>
#include <string>

#include "actors/sync/engine/sync_plan.hpp"
#include "actors/sync/relay_connection.hpp"
#include "messages/interfaces.hpp"
#include "runtime/config/config.hpp"
#include "store/lmdb/event_store.hpp"

namespace graspd::sim {

struct NodeSetup {
  std::size_t index = 0;
  /// The node's data directory (kept across restarts).
  std::string data_path;
  /// The bootstrap relay every node dials (announcements are discovered there).
  std::string bootstrap_relay;
  std::uint64_t seed = 0;
  /// Unix seconds of the simulated clock.
  std::function<std::int64_t()> unix_now;
};

class SimNode {
 public:
  explicit SimNode(NodeSetup setup);

  /// Opens the store and spawns the actors (again after stop()).
  void start(caf::actor_system& system, RelayClientFactory clients);
  /// Kills the actors; the store closes once they are gone (release_store()).
  void stop();
  /// Drops the node's reference on the store (after the killed actors have run down).
  void release_store();

  bool running() const { return static_cast<bool>(store_); }
  const store::EventStore& store() const { return *store_; }
  const runtime::Config& config() const { return config_; }
  /// The hosts that are this node (never dialled).
  std::set<std::string> own_hosts() const;
  sync_manager_actor manager() const { return manager_; }
  std::uint64_t starts() const { return starts_; }
  /// The sync plan's totals since this start (consolidations, daily resyncs); read between runs of
  /// the coordinator only.
  sync::SyncTotals sync_totals() const;

 private:
  NodeSetup setup_;
  runtime::Config config_;
  std::shared_ptr<store::EventStore> store_;
  store_writer_actor writer_;
  acceptance_actor acceptance_;
  sync_manager_actor manager_;
  self_subscriber_actor subscriber_;
  std::uint64_t starts_ = 0;
};

}  // namespace graspd::sim
