// The acceptance policy's read access to the LMDB EventStore.
#pragma once

#include <memory>

#include "store/acceptance_policy.hpp"
#include "store/event_store.hpp"

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

}  // namespace graspd::store
