// The acceptance policy's read access to the LMDB EventStore.
#pragma once

#include <memory>

#include "store/git/purgatory.hpp"
#include "store/lmdb/event_store.hpp"
#include "store/policy/acceptance_policy.hpp"

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

// Purgatory records (EventStore::put_held): a kind byte ('a' announcement, 's' state, 'p' pull
// request, 'x' an expired id remembered, 'r' the refs/nostr placeholders of a PR id), the expiry
// (or the time an expired id is forgotten; for 'r' the earliest expiry) as be64, then the event's
// JSON ('a', 's', 'p'; followed by a newline and the source it came from, the share it counts for,
// when known), nothing ('x'), or one `<commit> <owner hex> <expiry> <identifier>\n` line per
// placeholder ('r').
std::string encode_held(const policy::HeldEvent& entry);
std::string encode_expired(std::int64_t forget_at);
/// The record of every placeholder of one PR id (all share it; none: erase the record instead).
std::string encode_placeholders(const std::vector<policy::Placeholder>& list);
/// Reads every record into `purgatory` and, when given, the placeholders into `placeholders`
/// (start-up); returns how many were unreadable (skipped).
std::size_t load_purgatory(const EventStore& store, policy::Purgatory& purgatory,
                           policy::PrPlaceholders* placeholders = nullptr);

}  // namespace graspd::store
