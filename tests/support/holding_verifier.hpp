// A verifier actor for tests: holds every signature check until it receives a VerifyEvent without
// an event, then answers all of them newest first, so the asking actor gets its answers late and
// out of order. `held` tells how many checks are out.
#pragma once

#include <caf/typed_event_based_actor.hpp>
#include <caf/typed_response_promise.hpp>

#include <utility>
#include <vector>

#include "messages/interfaces.hpp"
#include "messages/nostr/verify.hpp"

namespace graspd::test {

struct HoldingVerifierState {
  std::vector<std::pair<caf::typed_response_promise<nostr::EventCheck>, nostr::EventPtr>> held;
  static inline const char* name = "holding_verifier";
};

inline verifier_actor::behavior_type holding_verifier(
    verifier_actor::stateful_pointer<HoldingVerifierState> self) {
  return {
      [self](const VerifyEvent& msg) -> caf::result<nostr::EventCheck> {
        if (!msg.event) {
          auto held = std::exchange(self->state.held, {});
          for (auto it = held.rbegin(); it != held.rend(); ++it)
            it->first.deliver(nostr::check_event(*it->second));
          return nostr::EventCheck::ok;
        }
        auto promise = self->make_response_promise<nostr::EventCheck>();
        self->state.held.emplace_back(promise, msg.event);
        return promise;
      },
  };
}

}  // namespace graspd::test
