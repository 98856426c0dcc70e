#include "actors/relay/engine/subscription_index.hpp"

#include <algorithm>
#include <cstring>

namespace graspd {

std::size_t SubscriptionIndex::Bytes32Hash::operator()(const nostr::Bytes32& b) const {
  // Ids and pubkeys are uniformly distributed: any 8 bytes are a good hash.
  std::size_t h;
  std::memcpy(&h, b.data(), sizeof h);
  return h;
}

void SubscriptionIndex::add(SubscriptionKey key, nostr::Filters filters) {
  remove(key);
  auto& sub = subscriptions_[key];
  sub.filters = std::move(filters);
  sub.filter_stamps.assign(sub.filters.size(), 0);
  for (std::uint32_t i = 0; i < sub.filters.size(); ++i) {
    if (sub.filters[i].is_unsatisfiable()) continue;
    register_filter(key, i, sub.filters[i], sub.registrations);
  }
}

void SubscriptionIndex::register_filter(SubscriptionKey key, std::uint32_t index,
                                        const nostr::Filter& filter,
                                        std::vector<Registration>& out) {
  auto add_reg = [&](Registration reg) {
    slots_of(reg).push_back(Slot{key, index});
    out.push_back(std::move(reg));
  };
  if (filter.ids) {
    for (const auto& id : *filter.ids) add_reg({Dimension::id, {}, id, 0});
    return;
  }
  if (filter.authors) {
    for (const auto& author : *filter.authors) add_reg({Dimension::author, {}, author, 0});
    return;
  }
  if (!filter.tags.empty()) {
    auto best = std::min_element(
        filter.tags.begin(), filter.tags.end(),
        [](const auto& a, const auto& b) { return a.second.size() < b.second.size(); });
    for (const auto& value : best->second)
      add_reg({Dimension::tag, std::string(1, best->first) + value, {}, 0});
    return;
  }
  if (filter.kinds) {
    for (auto kind : *filter.kinds) add_reg({Dimension::kind, {}, {}, kind});
    return;
  }
  add_reg({Dimension::all, {}, {}, 0});
}

std::vector<SubscriptionIndex::Slot>& SubscriptionIndex::slots_of(const Registration& reg) {
  switch (reg.dimension) {
    case Dimension::id:
      return by_id_[reg.bytes];
    case Dimension::author:
      return by_author_[reg.bytes];
    case Dimension::tag:
      return by_tag_[reg.tag_key];
    case Dimension::kind:
      return by_kind_[reg.kind];
    case Dimension::all:
      break;
  }
  return catch_all_;
}

void SubscriptionIndex::remove(SubscriptionKey key) {
  auto it = subscriptions_.find(key);
  if (it == subscriptions_.end()) return;
  for (const auto& reg : it->second.registrations) {
    auto& slots = slots_of(reg);
    std::erase_if(slots, [key](const Slot& s) { return s.key == key; });
    if (!slots.empty()) continue;
    // Drop empty buckets so the maps do not grow with churn.
    switch (reg.dimension) {
      case Dimension::id:
        by_id_.erase(reg.bytes);
        break;
      case Dimension::author:
        by_author_.erase(reg.bytes);
        break;
      case Dimension::tag:
        by_tag_.erase(reg.tag_key);
        break;
      case Dimension::kind:
        by_kind_.erase(reg.kind);
        break;
      case Dimension::all:
        break;
    }
  }
  subscriptions_.erase(it);
}

std::size_t SubscriptionIndex::candidate_count(const nostr::Event& ev) const {
  std::size_t n = 0;
  auto count = [&](const std::vector<Slot>& slots) { n += slots.size(); };
  lookup_candidates(ev, count);
  return n;
}

}  // namespace graspd
