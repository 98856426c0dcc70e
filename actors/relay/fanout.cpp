#include "actors/relay/fanout.hpp"

#include <caf/actor_system.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include <algorithm>
#include <chrono>
#include <map>
#include <unordered_map>

#include "actors/relay/engine/subscription_index.hpp"
#include "messages/nostr/event_frame.hpp"

namespace graspd {

void FanoutState::remove(SubscriptionIndex::SubscriptionKey key) {
  auto it = subscriptions.find(key);
  if (it == subscriptions.end()) return;
  keys.erase({it->second.connection_id, it->second.subscription_id});
  index.remove(key);
  subscriptions.erase(it);
}

void FanoutState::remove(std::uint64_t connection_id, const std::string& subscription_id) {
  auto it = keys.find({connection_id, subscription_id});
  if (it != keys.end()) remove(it->second);
}

void FanoutState::subscribe(FanoutSubscribe& msg) {
  remove(msg.connection_id, msg.subscription_id);
  auto key = next_key++;
  keys[{msg.connection_id, msg.subscription_id}] = key;
  auto& sub = subscriptions[key];
  sub.connection_id = msg.connection_id;
  sub.subscription_id = std::move(msg.subscription_id);
  sub.sink = std::move(msg.sink);
  index.add(key, std::move(msg.filters));
}

// Every subscription's frame shares the one JSON of the event: delivering a large event to many
// subscriptions (on one connection or many) holds it once, not once per subscription.
void FanoutState::send_event(const Subscription& sub,
                             const std::shared_ptr<const std::string>& json) {
  sub.sink->send(nostr::relay_event_frame(sub.subscription_id, json));
}

void FanoutState::go_live(const FanoutLive& msg) {
  auto it = keys.find({msg.connection_id, msg.subscription_id});
  if (it == keys.end()) return;
  auto& sub = subscriptions[it->second];
  sub.live = true;
  sub.horizon = msg.horizon;
  // Nothing arrived while the stored query ran (the usual case): no need to sort what it sent.
  if (sub.pending.empty()) return;
  auto delivered = msg.delivered;
  std::sort(delivered.begin(), delivered.end());
  for (const auto& pending : sub.pending) {
    if (seen_by_query(sub, pending.seq)) continue;
    if (!std::binary_search(delivered.begin(), delivered.end(), pending.event->id))
      send_event(sub, pending.json);
  }
  sub.pending.clear();
  sub.pending.shrink_to_fit();
}

/// A committed event the subscription's stored query could see: it was the query's to return (or
/// to leave out, past its `limit`), never a live event, however late its commit notice arrives.
bool FanoutState::seen_by_query(const Subscription& sub, std::uint64_t seq) {
  return seq != 0 && seq < sub.horizon;
}

void FanoutState::deliver(const nostr::EventPtr& event,
                          const std::shared_ptr<const std::string>& json, std::uint64_t seq) {
  if (!event || !json) return;
  auto started = std::chrono::steady_clock::now();
  std::size_t reached = 0;
  index.for_each_match(*event, [&](SubscriptionIndex::SubscriptionKey key) {
    auto& sub = subscriptions[key];
    ++reached;
    if (sub.live) {
      if (!seen_by_query(sub, seq)) send_event(sub, json);
      return;
    }
    // Dropping here loses an event the stored query will very likely return anyway (committed
    // before the query started) or, while a paced answer waits for a reader that does not read,
    // a live match past the bound: what one such subscription holds stays bounded.
    if (sub.pending.size() < options.max_pending_per_subscription)
      sub.pending.push_back({event, json, seq});
  });
  if (reached != 0 && options.observe_latency) {
    std::chrono::duration<double> took = std::chrono::steady_clock::now() - started;
    options.observe_latency(took.count());
  }
}

fanout_actor::behavior_type fanout_behavior(fanout_actor::stateful_pointer<FanoutState> self,
                                            FanoutOptions options) {
  self->state.options = std::move(options);
  return {
      [self](FanoutSubscribe& msg) {
        self->state.subscribe(msg);
        return true;
      },
      [self](const FanoutLive& msg) { self->state.go_live(msg); },
      [self](const FanoutUnsubscribe& msg) {
        self->state.remove(msg.connection_id, msg.subscription_id);
      },
      [self](const FanoutDisconnect& msg) {
        auto& keys = self->state.keys;
        auto it = keys.lower_bound({msg.connection_id, std::string()});
        std::vector<SubscriptionIndex::SubscriptionKey> doomed;
        for (; it != keys.end() && it->first.first == msg.connection_id; ++it)
          doomed.push_back(it->second);
        for (auto key : doomed) self->state.remove(key);
      },
      [self](const FanoutEphemeral& msg) { self->state.deliver(msg.event, msg.json, 0); },
      [self](const StoreCommits& batch) {
        for (const auto& msg : *batch.commits) self->state.deliver(msg.event, msg.json, msg.seq);
      },
  };
}

fanout_actor spawn_fanout(caf::actor_system& system, FanoutOptions options) {
  return system.spawn(fanout_behavior, std::move(options));
}

}  // namespace graspd
