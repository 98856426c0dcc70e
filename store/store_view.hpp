// The acceptance policy's read access to the LMDB EventStore.
#pragma once

#include <memory>

#include "store/acceptance_policy.hpp"
#include "store/event_store.hpp"
#include "store/purgatory.hpp"

namespace graspd::store {

class EventStoreView : public policy::StoreView {
 public:
  explicit EventStoreView(std::shared_ptr<const EventStore> store) : store_(std::move(store)) {}

  void scan(const nostr::Filters& filters,
            const std::function<bool(const nostr::Event&)>& visit) const override;
  bool exists(const nostr::Filters& filters) const override;

 private:
  std::shared_ptr<const EventStore> store_;
};

/// The store plus the events held in purgatory, read from their LMDB records (git hosting's push
/// authorisation and state applier, on threads other than the acceptance actor's: §5.11, held
/// events count). Held records are few (bounded by PurgatoryLimits::max_held), so scanning them
/// all per lookup is cheap.
class StoreAndHeldView : public policy::StoreView {
 public:
  explicit StoreAndHeldView(std::shared_ptr<const EventStore> store)
      : store_(std::move(store)), stored_(store_) {}

  void scan(const nostr::Filters& filters,
            const std::function<bool(const nostr::Event&)>& visit) const override;

 private:
  std::shared_ptr<const EventStore> store_;
  EventStoreView stored_;
};

// Purgatory records (EventStore::put_held): a kind byte ('a' announcement, 's' state, 'x' an
// expired id remembered), the expiry (or the time an expired id is forgotten) as be64, then the
// event's JSON (none for 'x').
std::string encode_held(const policy::HeldEvent& entry);
std::string encode_expired(std::int64_t forget_at);
/// Reads every record into `purgatory` (start-up); returns how many were unreadable (skipped).
std::size_t load_purgatory(const EventStore& store, policy::Purgatory& purgatory);

}  // namespace graspd::store
