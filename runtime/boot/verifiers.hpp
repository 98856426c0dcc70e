// The signature verifiers of one owner (the client sessions, or the sync engine's connections):
// one actor per scheduler thread, so one busy owner's events are verified on every core. Each set
// is spawned by its owner's wiring function and ends through stop(), in the shutdown sequence.
#pragma once

#include <vector>

#include "messages/interfaces.hpp"
#include "runtime/boot/services.hpp"

namespace graspd::boot {

struct Verifiers {
  std::vector<verifier_actor> actors;
};

/// One verifier per scheduler thread.
Verifiers spawn_verifiers(const Services& services);

/// Sends every verifier exit; a request still out then fails (its owner answers or counts it).
void stop(const Verifiers& verifiers);

}  // namespace graspd::boot
