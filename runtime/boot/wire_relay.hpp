// Wiring of the NIP-01 relay: the fan-out (fed by the store's change feed), the client sessions'
// verifiers and the WebSocket endpoint, whose upgrade handler goes on the HTTP server. Each new
// connection gets a client session on the store, the writer, the acceptance actor and the fan-out.
#pragma once

#include <memory>

#include "actors/relay/engine/negentropy_sessions.hpp"
#include "actors/relay/negentropy_scanner.hpp"
#include "messages/interfaces.hpp"
#include "runtime/boot/services.hpp"
#include "runtime/boot/verifiers.hpp"
#include "runtime/boot/wire_policy.hpp"
#include "runtime/boot/wire_store.hpp"
#include "runtime/net/relay_limits.hpp"
#include "runtime/net/ws_session.hpp"

namespace graspd::boot {

struct WiredRelay {
  fanout_actor fanout;
  Verifiers verifiers;  ///< the client sessions' signature checks
  std::shared_ptr<runtime::WsEndpoint> endpoint;
  std::shared_ptr<NegentropyScanner>
      negentropy_scanner;  ///< NEG-OPEN scans, on threads of their own
};

/// Config → RelayLimits (also what NIP-11 `limitation` advertises).
runtime::RelayLimits relay_limits(const runtime::Config& config);
/// What every connection's NIP-77 sessions share: four NEG-OPENs of the largest size in all, a
/// share of it per client address, and each address's scan rate.
NegentropyBudgetLimits negentropy_budget_limits(const runtime::Config& config);

/// The NEG-OPEN scanner over the store, with its threads started.
std::shared_ptr<NegentropyScanner> spawn_negentropy_scanner(
    const runtime::Config& config, std::shared_ptr<const store::EventStore> events);

/// RelayLimits → the WebSocket transport's options.
runtime::WsOptions ws_options(const runtime::RelayLimits& limits, bool compression,
                              std::size_t deflate_cache_bytes);

/// Spawns the fan-out and the verifiers and installs the WebSocket endpoint on services.http.
WiredRelay wire_relay(const Services& services, const WiredStore& store, const WiredPolicy& policy);

/// Shutdown, before the network threads drain: starts closing every client session, then stops the
/// verifiers (events still out for verification get "error:" answers on connections that are
/// closing anyway).
void close_sessions(const WiredRelay& wired);

/// Sends the fan-out exit.
void stop(const WiredRelay& wired);

}  // namespace graspd::boot
