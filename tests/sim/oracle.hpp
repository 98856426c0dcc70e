// The expected contents of a node once the mesh is quiet, computed without actors: the real
// GRASP-01 policy (store/policy/acceptance_policy.hpp) over an in-memory store, applied to every
// event of every relay the node can reach until nothing more is accepted. A node reaches the
// bootstrap relay and every relay named by an announcement it accepted; relays the URL guard
// refuses hold nothing it can see. The fixed point makes the answer independent of arrival order,
// as sync must be. With purgatory, git data decides what of a hosted repository is stored.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "messages/nostr/event.hpp"
#include "messages/nostr/nip34.hpp"
#include "store/policy/acceptance_policy.hpp"
#include "tests/sim/network.hpp"

namespace graspd::sim {

/// With purgatory (`released` given): an accepted announcement whose repository's git data never
/// arrives is held, not stored: it still makes the node dial the relays it names (sync follows held
/// announcements), but neither it nor its state is stored, and what hangs on it is not accepted.
/// A state is stored only when its repository is released and its commit is the released one.
struct Released {
  std::map<RepositoryRef, std::string> commits;
};

std::set<nostr::EventId> expected_events(const policy::PolicyConfig& config,
                                         const std::vector<const SimRelay*>& relays,
                                         std::size_t bootstrap, const Released* released = nullptr);

/// The repositories whose announcement a node accepts (stored or held).
std::set<RepositoryRef> accepted_repositories(const policy::PolicyConfig& config,
                                              const std::vector<const SimRelay*>& relays,
                                              std::size_t bootstrap);

}  // namespace graspd::sim
