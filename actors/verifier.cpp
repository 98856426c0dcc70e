#include "actors/verifier.hpp"

#include <caf/actor_system.hpp>
#include <caf/typed_event_based_actor.hpp>

#include <algorithm>

#include "messages/nostr/verify.hpp"

namespace graspd {

verifier_actor::behavior_type verifier() {
  return {
      [](const VerifyEvent& msg) {
        if (!msg.id_checked) return nostr::check_event(*msg.event);
        return nostr::verify_signature(*msg.event) ? nostr::EventCheck::ok
                                                   : nostr::EventCheck::bad_sig;
      },
  };
}

std::vector<verifier_actor> spawn_verifiers(caf::actor_system& system, std::size_t count) {
  std::vector<verifier_actor> verifiers;
  for (std::size_t i = 0; i < std::max<std::size_t>(count, 1); ++i)
    verifiers.push_back(system.spawn(verifier));
  return verifiers;
}

}  // namespace graspd
