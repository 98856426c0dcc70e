// The acceptance policy's view of a store (policy::StoreView), answered by brute force over a
// vector: for the pure tests of the policy and the push rule.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "messages/nostr/event.hpp"
#include "messages/nostr/filter.hpp"
#include "store/policy/acceptance_policy.hpp"

namespace graspd::test {

class VectorStore : public policy::StoreView {
 public:
  void scan(const nostr::Filters& filters,
            const std::function<bool(const nostr::Event&)>& visit) const override {
    for (const auto& ev : events)
      if (nostr::matches_any(filters, ev) && !visit(ev)) return;
  }
  std::vector<nostr::Event> events;
};

/// A public key of 32 equal bytes.
inline nostr::Pubkey key(std::uint8_t n) {
  nostr::Pubkey out{};
  out.fill(n);
  return out;
}

}  // namespace graspd::test
