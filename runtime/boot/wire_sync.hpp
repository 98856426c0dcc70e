// Wiring of the GRASP-02 sync engine: the SyncManager (publishing /api/sync), its verifiers, the
// SelfSubscriber on the store's change feed, and the outbound relay connections it dials on the
// network threads. Spawned only when NGIT_SYNC_ENABLED; with NGIT_SYNC_PLUS_ENABLED also the
// GRASP-03 Sync+ controller, fed by the self-subscriber's inventory.
#pragma once

#include <memory>
#include <optional>
#include <set>
#include <string>

#include "actors/plus/sync_plus.hpp"
#include "actors/sync/relay_connection.hpp"
#include "actors/sync/sync_manager.hpp"
#include "messages/interfaces.hpp"
#include "runtime/boot/services.hpp"
#include "runtime/boot/verifiers.hpp"
#include "runtime/boot/wire_policy.hpp"
#include "runtime/boot/wire_store.hpp"
#include "runtime/config/cluster_peers.hpp"
#include "runtime/net/relay_client.hpp"

namespace boost::asio {
class io_context;
}

namespace graspd::boot {

struct WiredSync {
  sync_manager_actor manager;
  /// Lives as long as the manager (attached to its exit).
  self_subscriber_actor subscriber;
  /// GRASP-03 Sync+ controller (null when NGIT_SYNC_PLUS_ENABLED=false); lives as long as the
  /// manager.
  sync_plus_actor plus;
  /// Their own set, not the client sessions': a large history then queues behind these, and the
  /// scheduler still gives the clients' verifiers their turn.
  Verifiers verifiers;
  /// Every outbound connection, closed at shutdown.
  std::shared_ptr<runtime::RelayClientRegistry> clients;
};

// The peer rules live in runtime/config/cluster_peers.hpp (operator commands use them too).
using runtime::own_relay_urls;
using runtime::peer_git_bases;
using runtime::sync_peer_urls;

/// Config → SyncManagerConfig, without the parts that need the running store (already_stored)
/// and the verifiers.
SyncManagerConfig sync_manager_config(const runtime::Config& config);

/// Config → SyncPlusConfig.
SyncPlusConfig sync_plus_config(const runtime::Config& config);

/// The factory of real connections on `io`, recorded in `registry`.
RelayClientFactory network_relay_clients(boost::asio::io_context& io,
                                         std::shared_ptr<runtime::RelayClientRegistry> registry);

/// Spawns the sync engine; std::nullopt when NGIT_SYNC_ENABLED is false.
std::optional<WiredSync> wire_sync(const Services& services, const WiredStore& store,
                                   const WiredPolicy& policy);

/// Shutdown, before the network threads drain: closes every outbound connection.
void close_connections(const WiredSync& wired);

/// Sends the manager (and with it the subscriber) and the verifiers exit.
void stop(const WiredSync& wired);

}  // namespace graspd::boot
