// Verifier: checks an event's id and BIP-340 signature and answers with the result. Stateless;
// the relay spawns one per scheduler thread so that the events of ONE busy connection are
// verified on every core (a session actor runs on one core at a time, and verification is most of
// an EVENT's cost). The session puts the answers back in arrival order.
#pragma once

#include <caf/fwd.hpp>

#include <cstddef>
#include <vector>

#include "messages/interfaces.hpp"

namespace graspd {

verifier_actor::behavior_type verifier();

/// What a verifier answers to `request`; owners without verifiers call it inline.
nostr::EventCheck check_request(const VerifyEvent& request);

/// `count` verifiers (at least one).
std::vector<verifier_actor> spawn_verifiers(caf::actor_system& system, std::size_t count);

}  // namespace graspd
