// Every atom (verb) of graspd's actor messages. Payloads travel as structs
// (see the other headers in messages/); atoms are only verbs. CAF 0.17 limits
// atom text to 10 characters.
#pragma once

#include <caf/atom.hpp>

namespace graspd::atom {

/// Ask a long-lived actor for a JSON status snapshot.
using status = caf::atom_constant<caf::atom("status")>;
/// Ask an actor to finish its work and quit cleanly.
using shutdown = caf::atom_constant<caf::atom("shutdown")>;
/// Periodic timer tick an actor sends to itself.
using tick = caf::atom_constant<caf::atom("tick")>;

// Relay (client sessions): what the WebSocket transport reports.
/// A text frame from the client.
using ws_text = caf::atom_constant<caf::atom("ws_text")>;
/// A binary frame (refused with a NOTICE).
using ws_binary = caf::atom_constant<caf::atom("ws_binary")>;
/// A message over the size limit was discarded (NOTICE).
using ws_oversize = caf::atom_constant<caf::atom("ws_oversz")>;
/// The connection is gone.
using ws_closed = caf::atom_constant<caf::atom("ws_closed")>;
/// Client session to itself: hand the frames produced so far to the transport in one batch.
using ws_flush = caf::atom_constant<caf::atom("ws_flush")>;
/// The transport's outbound queue drained below the mark a stored answer waits for.
using ws_drained = caf::atom_constant<caf::atom("ws_drain")>;
/// Client session timer: close the NIP-77 sessions that waited too long for a NEG-MSG.
using neg_idle = caf::atom_constant<caf::atom("neg_idle")>;

// Store writer.
/// Subscribe an actor to the store's change feed (StoreCommits messages).
using feed_subscribe = caf::atom_constant<caf::atom("feed_sub")>;
/// Store writer to itself: commit the pending batch.
using store_flush = caf::atom_constant<caf::atom("st_flush")>;
/// Store writer timer: sweep NIP-40 expired events.
using store_sweep = caf::atom_constant<caf::atom("st_sweep")>;
/// Store writer timer: publish what other processes committed to the store.
using store_tail = caf::atom_constant<caf::atom("st_tail")>;

// Git hosting, to itself: what the Smart HTTP transport and git processes report from the
// io_context's threads.
/// A push was applied (GitDataArrived with its refs/nostr refs).
using git_pushed = caf::atom_constant<caf::atom("git_push")>;
/// A state's objects or a pull request's commit were found (GitDataArrived).
using git_found = caf::atom_constant<caf::atom("git_found")>;
/// A held pull request's commit is missing here: fetch it by id.
using git_fetch = caf::atom_constant<caf::atom("git_fetch")>;
/// Maintenance timer: the next queued repository may be due.
using git_maintain = caf::atom_constant<caf::atom("git_maint")>;
/// A maintenance run ended (with whether it must be tried again: no git process was free).
using git_maintained = caf::atom_constant<caf::atom("git_mdone")>;
/// A batch of refs/nostr deletions ended (its ticket and the refs left).
using git_deleted = caf::atom_constant<caf::atom("git_del")>;
/// Re-check timer: the next identifiers are looked at against their newest state (and fetched).
using git_recheck = caf::atom_constant<caf::atom("git_rechk")>;

// Sync: what the outbound transport reports to a relay connection.
/// The connection to the remote relay is open (with the peer's max message length).
using relay_open = caf::atom_constant<caf::atom("rc_open")>;
/// A text frame from the remote relay.
using relay_msg = caf::atom_constant<caf::atom("rc_msg")>;
/// The connection ended or never opened.
using relay_gone = caf::atom_constant<caf::atom("rc_gone")>;
/// Every event purgatory holds, for the cluster peers (HeldForPeers).
using held_events = caf::atom_constant<caf::atom("held_evts")>;
/// Publish a status snapshot (SyncManager timer).
using publish = caf::atom_constant<caf::atom("publish")>;
/// Sync+ controller timer: admit due work between reconciliations.
using maintain = caf::atom_constant<caf::atom("plus_mnt")>;
/// Replication view: a waiting request's deadline, and the deadline of a relay probe.
using replication_wait = caf::atom_constant<caf::atom("repl_wait")>;

}  // namespace graspd::atom
