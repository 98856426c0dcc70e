// The SyncManager's part in a cluster (NGIT_SYNC_PEERS): held events sent to the peers, the
// client's answer waiting for theirs, and what a peer is sent when it connects. Internal to
// actors/sync/sync_manager*.cpp.
#pragma once

#include <caf/typed_event_based_actor.hpp>

#include <string>

#include "actors/sync/sync_manager_state.hpp"
#include "messages/interfaces.hpp"

namespace graspd::sync_manager_detail {

using SyncManagerSelf = sync_manager_actor::stateful_pointer<SyncManagerState>;

/// Sends a newly held event to every connected peer; the acceptance actor's reply (and with it
/// the client's OK) waits for their answers, at most `peer_ack_timeout`.
caf::result<bool> on_held_for_peers(SyncManagerSelf self, HeldForPeers& held);
/// A peer's answer to a held event it was sent.
void on_relay_published(SyncManagerSelf self, const RelayPublished& published);
/// The wait for the peers' answers to a held event is over: its client is answered anyway.
void on_peer_ack_due(SyncManagerSelf self, const PeerAckDue& due);
/// A peer that went cannot answer: what waited for it waits for the others only.
void forget_peer_acks(SyncManagerSelf self, const std::string& relay);
/// A peer that connects is sent everything purgatory holds here: what it held while it was away.
void send_held_to_peer(SyncManagerSelf self, const std::string& peer);

}  // namespace graspd::sync_manager_detail
