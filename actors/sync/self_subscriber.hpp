// The SELF SUBSCRIBER actor: tells the SyncManager which repositories this
// relay hosts, which relays their announcements list and which root events
// (1617, 1618, 1619, 1621) belong to them. At spawn it loads every stored
// announcement and root from the store (no WebSocket to ourselves, no result
// cap); afterwards it follows the store's change feed and sends one
// RepoDiscovery per batch window. The window starts with the first event
// after a send and does not reset on further events, so a steady stream
// cannot postpone discovery forever.
//
// With GRASP-03 Sync+ (self_subscriber_plus) it also builds the Sync+ inventory
// (sync::PlusInventory): during the startup load from announcements, roots, a bounded recursive
// scan of their descendants by id and address references, and the retained kind 0 and 10002
// events; then incrementally from the change feed. The inventory's snapshot goes to the Sync+
// controller once after the load and then in the same batch window as RepoDiscovery.
#pragma once

#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include <chrono>
#include <map>
#include <memory>

#include "actors/plus/engine/plus_inventory.hpp"
#include "messages/interfaces.hpp"
#include "store/lmdb/event_store.hpp"

namespace graspd {

struct SelfSubscriberState {
  static inline const char* name = "self_subscriber";
  // Not an aggregate: CAF would otherwise construct the state from the
  // actor pointer (C++20 parenthesized aggregate init) into `manager`.
  SelfSubscriberState() = default;

  sync_manager_actor manager;
  std::chrono::milliseconds window{5000};
  /// Findings since the last send, by repository.
  std::map<std::string, RepoDiscovery::Repo> pending;
  bool window_open = false;
  std::uint64_t batches_sent = 0;
  /// GRASP-03: the Sync+ controller and the inventory built for it (both unset without Sync+).
  sync_plus_actor plus;
  std::unique_ptr<sync::PlusInventory> inventory;
  bool inventory_changed = false;
};

/// Levels of references the startup scan follows down from the roots.
inline constexpr int max_descendant_depth = 32;

/// Adds what one committed event says about hosted repositories to `pending`.
void collect_repository_facts(const nostr::Event& ev,
                              std::map<std::string, RepoDiscovery::Repo>& pending);

self_subscriber_actor::behavior_type self_subscriber(
    self_subscriber_actor::stateful_pointer<SelfSubscriberState> self,
    std::shared_ptr<const store::EventStore> store, sync_manager_actor manager,
    std::chrono::milliseconds window);

/// The same, also building the Sync+ inventory for `plus`.
self_subscriber_actor::behavior_type self_subscriber_plus(
    self_subscriber_actor::stateful_pointer<SelfSubscriberState> self,
    std::shared_ptr<const store::EventStore> store, sync_manager_actor manager,
    std::chrono::milliseconds window, sync_plus_actor plus);

}  // namespace graspd
