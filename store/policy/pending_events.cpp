#include "store/policy/pending_events.hpp"

#include <algorithm>
#include <set>

namespace graspd::policy {

namespace {

template <class Map, class Key>
void erase_pair(Map& map, const Key& key, const nostr::EventId& id) {
  auto [first, last] = map.equal_range(key);
  for (auto it = first; it != last; ++it)
    if (it->second == id) {
      map.erase(it);
      return;
    }
}

}  // namespace

bool PendingEvents::indexed_letter(char letter) {
  switch (letter) {
    case 'a':
    case 'A':
    case 'd':
    case 'e':
    case 'E':
    case 'q':
      return true;
    default:
      return false;
  }
}

std::vector<PendingEvents::TagKey> PendingEvents::tag_keys(const nostr::Event& ev) const {
  std::vector<TagKey> keys;
  keys.reserve(ev.tags.size());
  for (const auto& tag : ev.tags)
    if (tag.size() >= 2 && tag[0].size() == 1 && indexed_letter(tag[0][0]))
      keys.emplace_back(tag[0][0], tag[1]);
  // A repeated tag is one index entry: removal stays linear in the event's distinct references.
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  return keys;
}

void PendingEvents::add(nostr::EventPtr event, std::vector<nostr::EventId> depends_on) {
  if (!event || entries_.count(event->id)) return;
  const auto& ev = *event;
  Entry entry;
  auto keys = tag_keys(ev);
  entry.tag_nodes.reserve(keys.size());
  for (auto& key : keys) entry.tag_nodes.push_back(by_tag_.emplace(std::move(key), ev.id));
  entry.kind_author_node = by_kind_author_.emplace(std::make_pair(ev.kind, ev.pubkey), ev.id);
  entry.author_node = by_author_.emplace(ev.pubkey, ev.id);
  for (const auto& dependency : depends_on)
    if (dependency != ev.id) dependants_.emplace(dependency, ev.id);
  entry.depends_on = std::move(depends_on);
  auto id = ev.id;
  entry.event = std::move(event);
  entries_.emplace(id, std::move(entry));
}

void PendingEvents::remove(const nostr::EventId& id) {
  auto entry = entries_.find(id);
  if (entry == entries_.end()) return;
  for (auto node : entry->second.tag_nodes) by_tag_.erase(node);
  by_kind_author_.erase(entry->second.kind_author_node);
  by_author_.erase(entry->second.author_node);
  for (const auto& dependency : entry->second.depends_on) erase_pair(dependants_, dependency, id);
  entries_.erase(entry);
}

std::vector<nostr::EventId> PendingEvents::remove_with_dependants(const nostr::EventId& id) {
  std::vector<nostr::EventId> doomed;
  if (!entries_.count(id)) return doomed;
  doomed.push_back(id);
  // Dependants were decided after what they depend on, so the graph has no cycle.
  for (std::size_t i = 0; i < doomed.size(); ++i) {
    auto [first, last] = dependants_.equal_range(doomed[i]);
    for (auto it = first; it != last; ++it)
      if (std::find(doomed.begin(), doomed.end(), it->second) == doomed.end())
        doomed.push_back(it->second);
  }
  for (const auto& gone : doomed) remove(gone);
  return doomed;
}

void PendingEvents::mark_committed(const nostr::EventId& id) {
  if (auto entry = entries_.find(id); entry != entries_.end()) entry->second.committed = true;
}

std::size_t PendingEvents::sweep_committed() {
  std::vector<nostr::EventId> stale;
  for (auto& [id, entry] : entries_) {
    if (!entry.committed) continue;
    if (entry.seen_by_sweep) stale.push_back(id);
    entry.seen_by_sweep = true;
  }
  for (const auto& id : stale) remove(id);
  return stale.size();
}

const nostr::Event* PendingEvents::find(const nostr::EventId& id) const {
  auto entry = entries_.find(id);
  return entry == entries_.end() ? nullptr : entry->second.event.get();
}

/// Calls fn(id) for every pending event the filter may match, narrowed by its most selective
/// indexed condition; the caller still checks the whole filter.
template <class Fn>
void PendingEvents::for_each_candidate(const nostr::Filter& filter, Fn&& fn) const {
  if (filter.ids) {
    for (const auto& id : *filter.ids)
      if (entries_.count(id)) fn(id);
    return;
  }
  for (const auto& [letter, values] : filter.tags) {
    if (!indexed_letter(letter)) continue;
    for (const auto& value : values) {
      auto [first, last] = by_tag_.equal_range(TagKey{letter, value});
      for (auto it = first; it != last; ++it) fn(it->second);
    }
    return;
  }
  if (filter.kinds && filter.authors) {
    for (auto kind : *filter.kinds)
      for (const auto& author : *filter.authors) {
        auto [first, last] = by_kind_author_.equal_range(std::make_pair(kind, author));
        for (auto it = first; it != last; ++it) fn(it->second);
      }
    return;
  }
  if (filter.authors) {
    for (const auto& author : *filter.authors) {
      auto [first, last] = by_author_.equal_range(author);
      for (auto it = first; it != last; ++it) fn(it->second);
    }
    return;
  }
  for (const auto& [id, entry] : entries_) fn(id);
}

std::optional<nostr::EventId> PendingEvents::scan(const nostr::Filters& filters,
                                                  const Visit& visit) const {
  if (entries_.empty()) return std::nullopt;
  std::set<nostr::EventId> visited;
  for (auto filter : filters) {
    // Membership tests binary-search the lists; callers do not always sort them.
    filter.normalize();
    std::optional<nostr::EventId> stopped;
    for_each_candidate(filter, [&](const nostr::EventId& id) {
      if (stopped) return;
      const auto& ev = *entries_.at(id).event;
      if (!filter.matches(ev) || !visited.insert(id).second) return;
      if (!visit(ev)) stopped = id;
    });
    if (stopped) return stopped;
  }
  return std::nullopt;
}

void PendingEvents::for_each_by_author(const nostr::Pubkey& author, const Visit& visit) const {
  auto [first, last] = by_author_.equal_range(author);
  for (auto it = first; it != last; ++it)
    if (!visit(*entries_.at(it->second).event)) return;
}

}  // namespace graspd::policy
