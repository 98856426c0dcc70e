#include "runtime/boot/verifiers.hpp"

#include <caf/actor_system.hpp>
#include <caf/scheduler/abstract_coordinator.hpp>
#include <caf/send.hpp>

#include "actors/relay/verifier.hpp"

namespace graspd::boot {

Verifiers spawn_verifiers(const Services& services) {
  return {graspd::spawn_verifiers(services.system, services.system.scheduler().num_workers())};
}

void stop(const Verifiers& verifiers) {
  for (const auto& verifier : verifiers.actors)
    caf::anon_send_exit(verifier, caf::exit_reason::user_shutdown);
}

}  // namespace graspd::boot
