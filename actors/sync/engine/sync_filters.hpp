// GRASP-02 sync filters: the items one relay is asked to sync and the
// subscription filters of the three layers that ask for them, packed into REQ
// frames the peer accepts.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "messages/nostr/event.hpp"
#include "messages/nostr/filter.hpp"
#include "messages/sync_level.hpp"

namespace graspd::sync {

using RelayUrl = std::string;  ///< always canonical (canonical_relay_url)
using RepoRef = std::string;   ///< "30617:<owner hex>:<identifier>"
using nostr::EventId;

/// Repositories and root events: what one relay is asked to sync.
struct SyncItems {
  /// Full repositories.
  std::set<RepoRef> repos;
  std::set<EventId> roots;
  /// StateOnly repositories (held in purgatory): their state events only.
  std::set<RepoRef> states;
  /// Every event the relay holds (a cluster peer, NGIT_SYNC_PEERS): one filter `{}` that covers
  /// every other item.
  bool everything = false;

  /// Every event (a cluster peer's target).
  static SyncItems all() {
    SyncItems items;
    items.everything = true;
    return items;
  }

  bool empty() const { return repos.empty() && roots.empty() && states.empty() && !everything; }
  std::size_t size() const {
    return repos.size() + roots.size() + states.size() + (everything ? 1 : 0);
  }
  void merge(const SyncItems& other);
  /// Items of *this that are in neither `a` nor `b`.
  SyncItems minus(const SyncItems& a, const SyncItems& b) const;
  friend bool operator==(const SyncItems&, const SyncItems&) = default;
};

/// Filters for the three layers (build_announcement_filter and
/// build_layer2_and_layer3_filters of the design document).
/// Layer 1: every repository announcement (discovery of repositories that
/// list this service).
nostr::Filters announcement_filters(std::optional<std::int64_t> since);
/// Layers 2 and 3: a/A/q for repositories plus their 30618 state by #d, and
/// e/E/q for root events, `refs_per_filter` references per filter; for
/// StateOnly repositories the 30618 filter by #d alone. No filter names
/// authors: the acceptance policy judges whose state counts. Items with
/// `everything` are the one filter `{}` (with `since`).
nostr::Filters item_filters(const SyncItems& items, std::optional<std::int64_t> since,
                            std::size_t refs_per_filter);
/// The windows a NIP-77 history reconciles for one subscription's `filters`, `limit` dropped:
/// filters that differ only in the values of their one tag list (the packed `#e` chunks of
/// item_filters) are joined, up to `max_values` values a list and `max_bytes` of filter JSON, so a
/// subscription costs one NEG session per filter shape instead of one per filter (docs/sync.md,
/// NegentropyHistory). The union matches exactly the events the filters match together.
nostr::Filters reconcile_windows(const nostr::Filters& filters, std::size_t max_values,
                                 std::size_t max_bytes);
/// Packs filters into groups whose REQ frame stays within `max_bytes` and
/// holds at most `max_filters` filters.
std::vector<nostr::Filters> pack_filters(const nostr::Filters& filters, std::size_t max_bytes,
                                         std::size_t max_filters);

}  // namespace graspd::sync
