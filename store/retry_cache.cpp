#include "store/retry_cache.hpp"

#include <algorithm>

namespace graspd::policy {

using nostr::EventId;

void RetryCache::park(nostr::EventPtr ev, std::size_t bytes, std::vector<std::string> keys,
                      std::int64_t now) {
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  // What the entry really holds: its keys twice (the index node and the string) plus the nodes.
  constexpr std::size_t node_overhead = 96;
  for (const auto& key : keys) bytes += key.size() + node_overhead;
  bytes += 3 * node_overhead;
  if (!ev || keys.empty() || bytes > limits_.max_bytes || limits_.max_events == 0) return;
  erase(ev->id);
  while (entries_.size() >= limits_.max_events || bytes_ + bytes > limits_.max_bytes)
    evict_oldest();
  auto id = ev->id;
  auto sequence = next_sequence_++;
  Entry entry{std::move(ev), bytes, {}, now, sequence};
  entry.keys.reserve(keys.size());
  for (auto& key : keys) entry.keys.push_back(waiting_.emplace(std::move(key), id));
  entries_.emplace(id, std::move(entry));
  by_age_.emplace(sequence, id);
  bytes_ += bytes;
  ++stats_.parked;
}

std::vector<nostr::EventPtr> RetryCache::release(const std::vector<std::string>& keys) {
  std::vector<nostr::EventPtr> out;
  for (const auto& key : keys) {
    auto [first, last] = waiting_.equal_range(key);
    std::vector<EventId> ids;
    for (auto it = first; it != last; ++it) ids.push_back(it->second);
    for (const auto& id : ids) {
      auto entry = entries_.find(id);
      if (entry == entries_.end()) continue;
      out.push_back(entry->second.event);
      erase(id);
      ++stats_.released;
    }
  }
  return out;
}

void RetryCache::expire(std::int64_t now) {
  while (!by_age_.empty()) {
    const auto& entry = entries_.at(by_age_.begin()->second);
    if (now - entry.parked_at < limits_.ttl_seconds) break;
    erase(entry.event->id);
    ++stats_.expired;
  }
}

void RetryCache::evict_oldest() {
  if (by_age_.empty()) return;
  erase(by_age_.begin()->second);
  ++stats_.evicted;
}

void RetryCache::erase(const EventId& id) {
  auto entry = entries_.find(id);
  if (entry == entries_.end()) return;
  for (auto node : entry->second.keys) waiting_.erase(node);
  by_age_.erase(entry->second.sequence);
  bytes_ -= entry->second.bytes;
  entries_.erase(entry);
}

}  // namespace graspd::policy
