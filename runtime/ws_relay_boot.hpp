// Boot wiring of the NIP-01 relay (issue 4): opens the event store, spawns the
// store writer and the fan-out, and plugs client sessions into the HTTP
// server's WebSocket upgrades. Part of graspd_boot (it sees actors/).
#pragma once

#include <caf/fwd.hpp>

#include <memory>

namespace graspd::runtime {

struct Services;
struct RelayBootState;

/// Shared by the daemon's registry entries so they can hand each other handles.
class RelayBoot {
 public:
  RelayBoot();
  ~RelayBoot();
  /// Opens the store under config.data_path and spawns its writer.
  caf::actor start_store_writer(Services& services);
  /// Spawns the GRASP-01 acceptance actor (client sessions and sync ask it
  /// about every event); needs start_store_writer first.
  caf::actor start_acceptance(Services& services);
  /// Spawns the fan-out, subscribes it to the change feed and installs the
  /// WebSocket handler; needs start_store_writer (and start_acceptance).
  caf::actor start_relay(Services& services);
  /// Spawns the GRASP-02 sync engine when NGIT_SYNC_ENABLED; returns an
  /// invalid handle otherwise.
  caf::actor start_sync(Services& services);

 private:
  std::shared_ptr<RelayBootState> state_;
};

}  // namespace graspd::runtime
