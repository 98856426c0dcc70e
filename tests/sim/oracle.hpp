// The expected contents of a node once the mesh is quiet, computed without actors: the real
// GRASP-01 policy (store/policy/acceptance_policy.hpp) over an in-memory store, applied to every
// event of every relay the node can reach until nothing more is accepted. A node reaches the
// bootstrap relay and every relay named by an announcement it accepted; relays the URL guard
// refuses hold nothing it can see. The fixed point makes the answer independent of arrival order,
// as sync must be.
#pragma once

#include <set>
#include <vector>

#include "messages/nostr/event.hpp"
#include "store/policy/acceptance_policy.hpp"
#include "tests/sim/network.hpp"

namespace graspd::sim {

std::set<nostr::EventId> expected_events(const policy::PolicyConfig& config,
                                         const std::vector<const SimRelay*>& relays,
                                         std::size_t bootstrap);

}  // namespace graspd::sim
