// Boot wiring of the GRASP-01 acceptance actor and the GRASP-02 sync engine
// (SyncManager + SelfSubscriber). Part of graspd_boot: it sees actors/.
#pragma once

#include <caf/fwd.hpp>

#include <memory>

#include "messages/interfaces.hpp"
#include "runtime/config.hpp"
#include "store/acceptance_policy.hpp"

namespace graspd::store {
class EventStore;
}

namespace graspd::runtime {

struct Services;
class StatusBoard;

/// The policy configuration for `config`: the domain and the curation lists as the configuration
/// parsed them.
policy::PolicyConfig policy_config(const Config& config);

/// Spawns the acceptance actor and subscribes it to the store's change feed.
acceptance_actor start_acceptance(Services& services, std::shared_ptr<store::EventStore> store,
                                  store_writer_actor writer);

/// Spawns the SyncManager and the SelfSubscriber (subscribed to the change
/// feed) and publishes /api/sync on `board`. Returns the manager.
sync_manager_actor start_sync(Services& services, std::shared_ptr<store::EventStore> store,
                              store_writer_actor writer, acceptance_actor acceptance,
                              std::shared_ptr<StatusBoard> board);

}  // namespace graspd::runtime
