// Wiring of the GRASP-01 acceptance actor, which client sessions and sync connections ask about
// every valid event. Under NGIT_ACCEPTANCE_POLICY=open none is spawned: every valid event is
// stored.
#pragma once

#include "actors/policy/acceptance.hpp"
#include "messages/interfaces.hpp"
#include "runtime/boot/services.hpp"
#include "runtime/boot/wire_store.hpp"
#include "store/policy/acceptance_policy.hpp"

namespace graspd::boot {

struct WiredPolicy {
  /// Invalid under NGIT_ACCEPTANCE_POLICY=open (sessions and sync then store every valid event).
  acceptance_actor acceptance;
  /// Held counts for /api/sync; null when purgatory is off.
  std::shared_ptr<policy::PurgatoryFigures> purgatory;
};

/// Config → PolicyConfig: the domain and the curation lists, as the configuration parsed them.
policy::PolicyConfig policy_config(const runtime::Config& config);

/// Config → AcceptanceConfig: the policy and, with NGIT_PURGATORY_ENABLED, purgatory's bounds,
/// its expiry pass and a held state's answer wait (the retry cache keeps its defaults). Git hosting
/// and the figures are the caller's.
AcceptanceConfig acceptance_config(const runtime::Config& config);

/// Spawns the acceptance actor on the store, subscribes it to the store's change feed and, through
/// its configuration, to git hosting's GitDataArrived (`git` may be invalid: no git hosting).
WiredPolicy wire_policy(const Services& services, const WiredStore& store, git_host_actor git = {});

void stop(const WiredPolicy& wired);

}  // namespace graspd::boot
