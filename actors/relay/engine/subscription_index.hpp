// Fan-out index: finds the live subscriptions whose filters can match a new
// event without scanning every subscription. Not an actor: a plain value
// owned by the fan-out actor (and tested and benchmarked on its own).
//
// Each filter is registered under ONE of its conditions, the most selective
// one present (ids > authors > the #x tag with fewest values > kinds); an
// event matching the filter must carry a value of that condition, so looking
// up the event's id, pubkey, tag values and kind finds every candidate.
// Filters with none of these conditions go to a catch-all list. Candidates are
// then checked with Filter::matches, and each subscription is reported at
// most once per event.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "messages/nostr/event.hpp"
#include "messages/nostr/filter.hpp"

namespace graspd {

class SubscriptionIndex {
 public:
  using SubscriptionKey = std::uint64_t;

  /// Registers (or replaces) the filters of `key`.
  void add(SubscriptionKey key, nostr::Filters filters);
  void remove(SubscriptionKey key);
  bool contains(SubscriptionKey key) const { return subscriptions_.count(key) != 0; }
  std::size_t size() const { return subscriptions_.size(); }

  /// Calls `visit(key)` once for each subscription matching `ev`.
  template <class Visit>
  void for_each_match(const nostr::Event& ev, Visit&& visit) {
    ++stamp_;
    // An event repeating one tag value reaches the same slots once per repetition; each filter is
    // checked once per event (its stamp), matched or not, so the work stays linear in the tags.
    auto check = [&](const std::vector<Slot>& slots) {
      for (const auto& slot : slots) {
        auto& sub = subscriptions_.find(slot.key)->second;
        if (sub.stamp == stamp_) continue;
        auto& checked = sub.filter_stamps[slot.filter];
        if (checked == stamp_) continue;
        checked = stamp_;
        ++filter_checks_;
        if (!sub.filters[slot.filter].matches(ev)) continue;
        sub.stamp = stamp_;
        visit(slot.key);
      }
    };
    lookup_candidates(ev, check);
  }

  /// How many filter registrations the event's keys reach (for tests/benchmarks).
  std::size_t candidate_count(const nostr::Event& ev) const;
  /// Filters checked with Filter::matches since construction (for tests/benchmarks).
  std::uint64_t filter_checks() const { return filter_checks_; }

 private:
  struct Slot {
    SubscriptionKey key;
    std::uint32_t filter;
  };
  struct Bytes32Hash {
    std::size_t operator()(const nostr::Bytes32& b) const;
  };
  enum class Dimension : std::uint8_t { id, author, tag, kind, all };
  struct Registration {
    Dimension dimension;
    std::string tag_key;  // letter + value, for tag registrations
    nostr::Bytes32 bytes{};
    std::uint32_t kind = 0;
  };
  struct Subscription {
    nostr::Filters filters;
    std::vector<Registration> registrations;
    std::uint64_t stamp = 0;
    /// Per filter: the last event stamp it was checked for.
    std::vector<std::uint64_t> filter_stamps;
  };

  template <class Check>
  void lookup_candidates(const nostr::Event& ev, Check& check) const {
    if (auto it = by_id_.find(ev.id); it != by_id_.end()) check(it->second);
    if (auto it = by_author_.find(ev.pubkey); it != by_author_.end()) check(it->second);
    if (auto it = by_kind_.find(ev.kind); it != by_kind_.end()) check(it->second);
    if (!by_tag_.empty()) {
      std::string tag_key;
      for (const auto& tag : ev.tags) {
        if (tag.size() < 2 || tag[0].size() != 1) continue;
        tag_key.assign(tag[0]);
        tag_key.append(tag[1]);
        if (auto it = by_tag_.find(tag_key); it != by_tag_.end()) check(it->second);
      }
    }
    check(catch_all_);
  }

  void register_filter(SubscriptionKey key, std::uint32_t index, const nostr::Filter& filter,
                       std::vector<Registration>& out);
  std::vector<Slot>& slots_of(const Registration& reg);

  std::unordered_map<SubscriptionKey, Subscription> subscriptions_;
  std::unordered_map<nostr::Bytes32, std::vector<Slot>, Bytes32Hash> by_id_;
  std::unordered_map<nostr::Bytes32, std::vector<Slot>, Bytes32Hash> by_author_;
  std::unordered_map<std::uint32_t, std::vector<Slot>> by_kind_;
  std::unordered_map<std::string, std::vector<Slot>> by_tag_;
  std::vector<Slot> catch_all_;
  std::uint64_t stamp_ = 0;
  std::uint64_t filter_checks_ = 0;
};

}  // namespace graspd
