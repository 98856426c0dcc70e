#include "actors/relay/verifier.hpp"

#include <caf/actor_system.hpp>
#include <caf/typed_event_based_actor.hpp>

#include <algorithm>

#include "messages/nostr/verify.hpp"

namespace graspd {

nostr::EventCheck check_request(const VerifyEvent& request) {
  if (!request.id_checked) return nostr::check_event(*request.event);
  return nostr::verify_signature(*request.event) ? nostr::EventCheck::ok
                                                 : nostr::EventCheck::bad_sig;
}

verifier_actor::behavior_type verifier() {
  return {
      [](const VerifyEvent& msg) { return check_request(msg); },
  };
}

std::vector<verifier_actor> spawn_verifiers(caf::actor_system& system, std::size_t count) {
  std::vector<verifier_actor> verifiers;
  for (std::size_t i = 0; i < std::max<std::size_t>(count, 1); ++i)
    verifiers.push_back(system.spawn(verifier));
  return verifiers;
}

}  // namespace graspd
