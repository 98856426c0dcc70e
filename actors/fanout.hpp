// The fan-out actor: owns every live subscription of every connection, fed by
// the store writer's change feed (committed events only, so a replaced or
// refused event is never broadcast as new) and by ephemeral events.
#pragma once

#include <caf/fwd.hpp>

#include <functional>

#include "messages/interfaces.hpp"

namespace graspd {

struct FanoutOptions {
  /// Matches buffered per subscription between registration and FanoutLive.
  std::size_t max_pending_per_subscription = 10000;
  /// Called with the seconds one committed event took to reach every
  /// matching subscription (frames built and handed to the transport).
  std::function<void(double)> observe_latency;
};

fanout_actor spawn_fanout(caf::actor_system& system, FanoutOptions options = {});

/// The behaviour, for tests that spawn it themselves.
fanout_actor::behavior_type fanout_behavior(fanout_actor::stateful_pointer<struct FanoutState> self,
                                            FanoutOptions options);

}  // namespace graspd
