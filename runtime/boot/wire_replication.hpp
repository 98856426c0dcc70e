// Wiring of the replication view (docs/replication.md): the replication actor
// (actors/sync/replication.*) reading the store, dialling relays through the sync's transport and
// URL guard on the network threads, reading git servers' ref advertisements through git hosting,
// publishing its figures at a glance on the StatusBoard ("replication"), and the site content's
// entry that hands each GET /api/repositories/<npub>/<identifier>/replication to it.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "actors/sync/replication.hpp"
#include "runtime/boot/services.hpp"
#include "runtime/boot/wire_store.hpp"
#include "runtime/net/http_routes.hpp"
#include "runtime/net/relay_client.hpp"

namespace graspd::boot {

struct WiredReplication {
  replication_actor actor;
  /// The probes' outbound connections, closed at shutdown.
  std::shared_ptr<runtime::RelayClientRegistry> clients;
};

/// `probe_server` reads a git server's refs (empty: servers are listed without refs);
/// `plus`: the Sync+ controller (null when Sync+ is off).
WiredReplication wire_replication(const Services& services, const WiredStore& store,
                                  ServerProbe probe_server, sync_plus_actor plus);

/// SiteContent::replication for `wired`: each request goes to the actor through a one-shot
/// requester, the network thread does not wait.
std::function<void(std::string, std::string, runtime::HttpRespond)> replication_entry(
    caf::actor_system& system, const WiredReplication& wired);

/// Shutdown, before the network threads drain: closes the probes' connections.
void close_connections(const WiredReplication& wired);

void stop(const WiredReplication& wired);

}  // namespace graspd::boot
