// One actor per WebSocket connection: the NIP-01 state of that client
// (subscriptions, EVENT rate bucket, NIP-42 keys) mutated serially. EVENT: parse -> id and
// signature check (on the verifier pool, so even one connection's events are
// verified on every core; results are taken back in arrival order) -> acceptance
// hook -> store writer -> OK after commit. REQ:
// register with the fan-out (buffering), stored query, EOSE, then live.
#pragma once

#include <caf/fwd.hpp>

#include <cstdint>
#include <memory>
#include <string>

#include "actors/relay/relay_context.hpp"
#include "messages/interfaces.hpp"
#include "runtime/net/ws_session.hpp"

namespace graspd {

client_session_actor spawn_client_session(caf::actor_system& system,
                                          std::shared_ptr<const RelayContext> context,
                                          std::uint64_t connection_id, FrameSinkPtr sink,
                                          std::string source = {});

/// Bridges the WebSocket transport to client session actors: the transport
/// calls the returned factory for each new connection.
runtime::WsHandlerFactory make_client_session_factory(caf::actor_system& system,
                                                      std::shared_ptr<const RelayContext> context);

}  // namespace graspd
