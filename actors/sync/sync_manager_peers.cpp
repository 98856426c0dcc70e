#include "actors/sync/sync_manager_peers.hpp"

#include <set>
#include <vector>

#include "runtime/ops/log.hpp"

namespace graspd::sync_manager_detail {

namespace {

bool peer_is_up(const SyncManagerState& st, const std::string& peer) {
  auto relay = st.plan->relays().find(peer);
  return relay != st.plan->relays().end() && st.connections.contains(peer) &&
         relay->second.status == sync::ConnectionStatus::connected;
}

/// Sends `events` to the peer's connection, when it is up.
void publish_to_peer(SyncManagerSelf self, const std::string& peer,
                     std::vector<nostr::EventPtr> events) {
  auto& st = self->state;
  if (events.empty() || !peer_is_up(st, peer)) return;
  self->send(st.connections.at(peer), RelayPublish{std::move(events)});
}

/// `relay` answered, or will not: the held event's reply goes once no peer is left to answer.
void settle_peer_ack(SyncManagerSelf self, const nostr::EventId& id, const std::string& relay,
                     bool accepted) {
  auto& acks = self->state.peer_acks;
  auto it = acks.find(id);
  if (it == acks.end() || !it->second.waiting.erase(relay)) return;
  it->second.all_accepted = it->second.all_accepted && accepted;
  if (!it->second.waiting.empty()) return;
  it->second.promise.deliver(it->second.all_accepted);
  acks.erase(it);
}

}  // namespace

caf::result<bool> on_held_for_peers(SyncManagerSelf self, HeldForPeers& held) {
  auto& st = self->state;
  if (held.events.empty()) return true;
  std::set<std::string> waiting;
  for (const auto& peer : st.config.peers)
    if (peer_is_up(st, peer)) {
      publish_to_peer(self, peer, held.events);
      waiting.insert(peer);
    }
  if (waiting.empty()) return true;
  // A connection answers in order: the last event's answer comes last.
  const auto id = held.events.back()->id;
  if (auto old = st.peer_acks.find(id); old != st.peer_acks.end())
    old->second.promise.deliver(false);
  auto promise = self->make_response_promise<bool>();
  st.peer_acks[id] = SyncManagerState::PeerAck{promise, std::move(waiting), true};
  self->delayed_send(self, st.config.peer_ack_timeout, PeerAckDue{id});
  return promise;
}

void on_relay_published(SyncManagerSelf self, const RelayPublished& published) {
  if (!published.accepted)
    log::warn(log::components::sync_manager, "cluster peer ", published.relay,
              " refused held event ", nostr::to_hex(published.id), ": ", published.message);
  settle_peer_ack(self, published.id, published.relay, published.accepted);
}

void on_peer_ack_due(SyncManagerSelf self, const PeerAckDue& due) {
  auto& acks = self->state.peer_acks;
  auto it = acks.find(due.id);
  if (it == acks.end()) return;
  log::warn(log::components::sync_manager, "held event ", nostr::to_hex(due.id),
            " not confirmed by ", it->second.waiting.size(),
            " cluster peer(s) in time: its client is answered anyway");
  it->second.promise.deliver(false);
  acks.erase(it);
}

void forget_peer_acks(SyncManagerSelf self, const std::string& relay) {
  std::vector<nostr::EventId> waiting_on;
  for (const auto& [id, ack] : self->state.peer_acks)
    if (ack.waiting.contains(relay)) waiting_on.push_back(id);
  for (const auto& id : waiting_on) settle_peer_ack(self, id, relay, false);
}

void send_held_to_peer(SyncManagerSelf self, const std::string& peer) {
  if (!self->state.acceptance) return;
  self->request(self->state.acceptance, std::chrono::seconds(30), atom::held_events::value)
      .then(
          [self, peer](HeldForPeers& held) { publish_to_peer(self, peer, std::move(held.events)); },
          [peer](caf::error& error) {
            log::warn(log::components::sync_manager, "held events for peer ", peer,
                      " not sent: ", caf::to_string(error));
          });
}

}  // namespace graspd::sync_manager_detail
