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

/// Config → AcceptanceConfig (the retry cache and expiry keep their defaults).
AcceptanceConfig acceptance_config(const runtime::Config& config);

/// Spawns the acceptance actor on the store and subscribes it to the store's change feed.
/// What git hosting asks of the acceptance actor (AcceptanceConfig::create_repository and
/// ::state_stored).
struct PolicyHooks {
  std::function<void(const nostr::Event&)> create_repository;
  std::function<void(nostr::EventPtr)> state_stored;
  /// Purgatory (NGIT_PURGATORY_ENABLED): whether a repository of an identifier exists here, and
  /// what becomes of an expired announcement's repository.
  std::function<bool(std::string_view)> repository_exists;
  std::function<void(const nostr::Event&)> announcement_expired;
  /// Held pull requests and refs/nostr placeholders (purgatory on).
  PullRequestHooks pull_requests;
};

WiredPolicy wire_policy(const Services& services, const WiredStore& store, PolicyHooks hooks = {});

void stop(const WiredPolicy& wired);

}  // namespace graspd::boot
