// The acceptance actor and the cluster peers (NGIT_SYNC_PEERS, docs/sync.md "Cluster peers"): each
// newly held announcement or state goes to the peer feed (the SyncManager), and its client's OK
// waits until the peers hold it too; a peer that connects gets everything held here.
#include <caf/typed_event_based_actor.hpp>

#include <algorithm>
#include <chrono>
#include <memory>
#include <optional>

#include "actors/policy/acceptance_steps.hpp"
#include "messages/nostr/nip34.hpp"

namespace graspd::acceptance_steps {

/// A held event's `OK true` waits until the cluster peers hold it too (or the SyncManager's wait
/// for them ends): a push that reaches another node of the cluster right after the OK then finds
/// the repository and its state there. Refusals go at once.
struct PeerGate {
  Reply reply;
  bool open = false;
  std::optional<AcceptanceVerdict> waiting;

  void answer(AcceptanceVerdict verdict) {
    if (open || !verdict.accepted) return reply(std::move(verdict));
    waiting = std::move(verdict);
  }
  void release() {
    open = true;
    if (!waiting) return;
    auto verdict = std::move(*waiting);
    waiting.reset();
    reply(std::move(verdict));
  }
};

/// With cluster peers, routes the submission's answer through a gate that send_to_peers opens.
std::shared_ptr<PeerGate> gate_on_peers(Self self, Submission& submission) {
  if (!self->state.peer_feed) return nullptr;
  auto gate = std::make_shared<PeerGate>();
  gate->reply = std::move(submission.reply);
  submission.reply = [gate](AcceptanceVerdict verdict) { gate->answer(std::move(verdict)); };
  return gate;
}

/// The recorded hold goes to the cluster peers; its answer opens the gate. The SyncManager bounds
/// the wait (NGIT_SYNC_PEERS: 2 s); the request's own timeout only covers a SyncManager gone.
void send_to_peers(Self self, const nostr::EventPtr& event, std::shared_ptr<PeerGate> gate) {
  self->request(*self->state.peer_feed, std::chrono::seconds(10), HeldForPeers{{event}})
      .then([gate](bool) { gate->release(); }, [gate](caf::error&) { gate->release(); });
}

/// Every event purgatory holds (none without purgatory), for a cluster peer that connected.
HeldForPeers held_for_peers(const AcceptanceState& st) {
  HeldForPeers out;
  if (!st.purgatory) return out;
  st.purgatory->scan({nostr::Filter{}}, [&](const nostr::Event& ev) {
    if (const auto* held = st.purgatory->find(ev.id)) out.events.push_back(held->event);
    return true;
  });
  // Announcements first, then states: a peer judges a state against the announcement it holds.
  auto rank = [](const nostr::EventPtr& ev) {
    return ev->kind == nostr::nip34::kind::repo_announcement ? 0
           : ev->kind == nostr::nip34::kind::repo_state      ? 1
                                                             : 2;
  };
  std::stable_sort(out.events.begin(), out.events.end(),
                   [&](const auto& a, const auto& b) { return rank(a) < rank(b); });
  return out;
}

}  // namespace graspd::acceptance_steps
