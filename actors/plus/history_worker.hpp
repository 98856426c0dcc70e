// A HISTORY WORKER actor (GRASP-03): one per admitted history relay. It asks the Sync+ controller
// for its relay's next filter group (HistoryNext), fetches it through the sync manager's fetch
// path (RelayFetch: pacing, pagination or NIP-77, timeout and the event pipeline are the relay
// connection's), reports the outcome with the next HistoryNext, and quits when the controller
// hands it `done` (the rotation completed, a group failed, or the relay is no longer desired).
#pragma once

#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include <string>

#include "messages/interfaces.hpp"

namespace graspd {

struct HistoryWorkerState {
  static inline const char* name = "history_worker";
  HistoryWorkerState() = default;

  std::string relay;
  sync_plus_actor controller;
  sync_manager_actor manager;
  std::uint64_t groups = 0;
};

history_worker_actor::behavior_type history_worker(
    history_worker_actor::stateful_pointer<HistoryWorkerState> self, std::string relay,
    sync_plus_actor controller, sync_manager_actor manager);

}  // namespace graspd
