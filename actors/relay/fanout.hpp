// The fan-out actor: owns every live subscription of every connection, fed by
// the store writer's change feed (committed events only, so a replaced or
// refused event is never broadcast as new) and by ephemeral events.
#pragma once

#include <caf/fwd.hpp>

#include <functional>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "actors/relay/engine/subscription_index.hpp"

#include "messages/interfaces.hpp"

namespace graspd {

struct FanoutOptions {
  /// Matches buffered per subscription between registration and FanoutLive.
  std::size_t max_pending_per_subscription = 10000;
  /// Called with the seconds one committed event took to reach every
  /// matching subscription (frames built and handed to the transport).
  std::function<void(double)> observe_latency;
};

/// The fan-out's state (exposed for deterministic tests).
struct FanoutState {
  static inline const char* name = "fanout";

  struct Subscription {
    std::uint64_t connection_id = 0;
    std::string subscription_id;
    FrameSinkPtr sink;
    bool live = false;
    /// From FanoutLive: committed events below it were the stored query's to send (or not).
    std::uint64_t horizon = 0;
    struct Pending {
      nostr::EventPtr event;
      std::shared_ptr<const std::string> json;
      std::uint64_t seq = 0;  // 0: ephemeral (never in a stored query)
    };
    std::vector<Pending> pending;
  };

  FanoutOptions options;
  SubscriptionIndex index;
  std::uint64_t next_key = 1;
  std::unordered_map<SubscriptionIndex::SubscriptionKey, Subscription> subscriptions;
  std::map<std::pair<std::uint64_t, std::string>, SubscriptionIndex::SubscriptionKey> keys;

  void remove(SubscriptionIndex::SubscriptionKey key);
  void remove(std::uint64_t connection_id, const std::string& subscription_id);
  void subscribe(FanoutSubscribe& msg);
  static void send_event(const Subscription& sub, const std::shared_ptr<const std::string>& json);
  static bool seen_by_query(const Subscription& sub, std::uint64_t seq);
  void go_live(const FanoutLive& msg);
  /// `seq` is the commit sequence of a stored event, 0 for an ephemeral one.
  void deliver(const nostr::EventPtr& event, const std::shared_ptr<const std::string>& json,
               std::uint64_t seq);
};

fanout_actor spawn_fanout(caf::actor_system& system, FanoutOptions options = {});

/// The behaviour, for tests that spawn it themselves.
fanout_actor::behavior_type fanout_behavior(fanout_actor::stateful_pointer<FanoutState> self,
                                            FanoutOptions options);

}  // namespace graspd
