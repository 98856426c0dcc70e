// SyncPlan and a peer's filter-value budget: graspd refuses a connection's REQs past
// NGIT_MAX_SUBSCRIPTION_VALUES and advertises it as limitation.max_subscription_values. Live
// coverage is kept within it, less a reserve, so the peer never refuses the history fetches
// (NIP-77 id batches, REQ pages) that the coverage would otherwise have crowded out.
#include <algorithm>
#include <iterator>

#include "actors/sync/engine/sync_plan.hpp"

namespace graspd::sync {

namespace {

/// Copies up to `n` elements of `from` into `to`; returns how many.
template <class Set>
std::size_t take(const Set& from, Set& to, std::size_t n) {
  auto end = std::next(from.begin(), static_cast<std::ptrdiff_t>(std::min(n, from.size())));
  to.insert(from.begin(), end);
  return static_cast<std::size_t>(std::distance(from.begin(), end));
}

/// The first `n` items in admission order: repositories, StateOnly repositories, roots.
SyncItems first_items(const SyncItems& items, std::size_t n) {
  SyncItems out;
  if (items.everything && n > 0) {
    out.everything = true;
    --n;
  }
  n -= take(items.repos, out.repos, n);
  n -= take(items.states, out.states, n);
  take(items.roots, out.roots, n);
  return out;
}

}  // namespace

std::optional<std::size_t> SyncPlan::value_budget(const RelayState& state) const {
  const auto advertised = state.max_subscription_values;
  if (advertised == 0) return std::nullopt;
  // A tenth, at least min_reserved_values, never more than half.
  const auto reserve =
      std::min(advertised / 2, std::max(config_.min_reserved_values, advertised / 10));
  return advertised - reserve;
}

std::size_t SyncPlan::open_values(const RelayState& state) const {
  std::size_t values = 0;
  for (const auto* subscriptions : {&state.subscriptions, &state.deferred})
    for (const auto& [id, subscription] : *subscriptions)
      values += nostr::value_count(subscription.filters);
  return values;
}

SyncItems SyncPlan::within_value_budget(RelayState& state, SyncItems items) {
  const auto budget = value_budget(state);
  if (!budget) return items;
  const auto open = open_values(state);
  auto fits = [&](const SyncItems& some) {
    return open + nostr::value_count(item_filters(some, std::nullopt, refs_per_filter(state))) <=
           *budget;
  };
  if (fits(items)) return items;
  // The longest prefix that fits: filter costs grow with the items, one filter per 100 at a time.
  std::size_t low = 0, high = items.size();
  while (low < high) {
    const auto mid = (low + high + 1) / 2;
    if (fits(first_items(items, mid)))
      low = mid;
    else
      high = mid - 1;
  }
  auto admitted = first_items(items, low);
  state.refused.merge(items.minus(admitted, SyncItems{}));
  totals_.over_value_budget += items.size() - low;
  return admitted;
}

}  // namespace graspd::sync
