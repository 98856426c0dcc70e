// The catalogue of graspd's typed actor interfaces: one `using` per role, each
// handler documented. Message payload structs live in the other messages/
// headers; this file only composes them. CAF 0.17 dialect: reacts_to /
// replies_to<...>::with<...> (the function-signature form fails at spawn).
#pragma once

#include <caf/typed_actor.hpp>

#include "messages/atoms.hpp"
#include "messages/relay_messages.hpp"
#include "messages/store_messages.hpp"

namespace graspd {

// Interfaces are added here by the issues that introduce each actor.

// Relay (issue 4). The fan-out: live subscriptions of every connection,
// fed by the store writer's change feed and by ephemeral events.
using fanout_actor = caf::typed_actor<
    // Registers a subscription (buffering until FanoutLive); replies true once registered.
    caf::replies_to<FanoutSubscribe>::with<bool>,
    caf::reacts_to<FanoutLive>, caf::reacts_to<FanoutUnsubscribe>, caf::reacts_to<FanoutDisconnect>,
    caf::reacts_to<FanoutEphemeral>,
    // The store writer's change feed: one message per committed event.
    caf::reacts_to<StoreCommitted>>;

// One per WebSocket connection: NIP-01 state of that client.
using client_session_actor =
    caf::typed_actor<caf::reacts_to<atom::ws_text, std::string>, caf::reacts_to<atom::ws_binary>,
                     caf::reacts_to<atom::ws_oversize>, caf::reacts_to<atom::ws_closed>>;

// The acceptance hook between validation and the store (GRASP-01 policy
// plugs in here). A session without a hook accepts every valid event.
using acceptance_actor = caf::typed_actor<caf::replies_to<AcceptanceQuery>::with<AcceptanceVerdict>>;

// Store (issue 3). Anything that wants every committed event, once, in
// commit order (fan-out, later the sync engine and GRASP inventories).
using store_feed_actor = caf::typed_actor<caf::reacts_to<StoreCommitted>>;

// The single writer of the LMDB store: batches the writes waiting in its
// mailbox into one write transaction and answers each only after commit.
using store_writer_actor = caf::typed_actor<
    // Store one event; the reply comes after mdb_txn_commit returned.
    caf::replies_to<StoreWrite>::with<WriteOutcome>,
    // Add a change-feed subscriber (monitored; dropped when it dies).
    caf::reacts_to<atom::feed_subscribe, store_feed_actor>,
    // Internal: commit the pending batch / periodic NIP-40 sweep.
    caf::reacts_to<atom::store_flush>, caf::reacts_to<atom::store_sweep>>;

}  // namespace graspd
