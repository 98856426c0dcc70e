// NIP-01 subscription filter and its in-memory matching semantics.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "messages/nostr/event.hpp"

namespace graspd::nostr {

/// A NIP-01 filter. Absent fields match everything; every list is kept sorted
/// and deduplicated (call normalize()) so membership is a binary search.
/// Conditions are AND-ed; `since`/`until` are inclusive; `limit` applies only
/// to the stored-events phase of a REQ.
struct Filter {
  std::optional<std::vector<EventId>> ids;
  std::optional<std::vector<Pubkey>> authors;
  std::optional<std::vector<std::uint32_t>> kinds;
  /// `#x` conditions, keyed by the single tag letter (a-z, A-Z).
  std::map<char, std::vector<std::string>> tags;
  std::optional<std::int64_t> since;
  std::optional<std::int64_t> until;
  std::optional<std::uint64_t> limit;

  void normalize();
  /// True when `ev` satisfies every condition (ignores `limit`).
  bool matches(const Event& ev) const;
  /// True when some condition can never hold (an empty list, since > until).
  bool is_unsatisfiable() const;

  friend bool operator==(const Filter&, const Filter&) = default;
};

using Filters = std::vector<Filter>;

/// True when any filter matches (filters of one REQ are OR-ed).
bool matches_any(const Filters& filters, const Event& ev);

/// What a REQ's filters cost a relay's fan-out index: one entry per filter, id, author, kind and
/// tag value (graspd's NGIT_MAX_SUBSCRIPTION_VALUES counts these, NIP-11
/// limitation.max_subscription_values advertises the cap).
std::size_t value_count(const Filters& filters);

}  // namespace graspd::nostr
