// The SYNC MANAGER actor (GRASP-02): owns the SyncPlan (RepoSyncIndex,
// RelaySyncIndex, PendingSyncIndex) and is the only place they change. It
// turns the plan's commands into actions: spawning one RelayConnection per
// relay it dials, forwarding subscribe/close, and arming per-relay retry and
// daily timers as delayed messages. The GRASP-03 fetches (RelayFetch) and the
// control-plane connections opened for them are the FetchRouter's, whose
// commands it carries out the same way. It receives RepoDiscovery from the
// SelfSubscriber and reports from its connections, publishes the /api/sync
// snapshot to the StatusBoard and keeps the sync metrics.
#pragma once

#include <caf/stateful_actor.hpp>

#include <memory>
#include <string>

#include "actors/sync/sync_manager_state.hpp"
#include "messages/interfaces.hpp"
#include "runtime/ops/status_board.hpp"

namespace prometheus {
class Registry;
}

namespace graspd {

sync_manager_actor::behavior_type sync_manager(
    sync_manager_actor::stateful_pointer<SyncManagerState> self, SyncManagerConfig config,
    acceptance_actor acceptance, store_writer_actor writer, RelayClientFactory clients,
    std::shared_ptr<runtime::StatusBoard> board, std::shared_ptr<prometheus::Registry> registry);

/// The /api/sync document: the plan's totals and one entry per relay
/// (sync_status.cpp).
std::string sync_status_json(const SyncManagerState& state, std::int64_t now);

}  // namespace graspd
