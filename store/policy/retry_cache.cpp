#include "store/policy/retry_cache.hpp"

#include <algorithm>

namespace graspd::policy {

using nostr::EventId;

void RetryCache::park(nostr::EventPtr ev, std::size_t bytes, std::vector<std::string> keys,
                      std::int64_t now, const std::string& source) {
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  // What the entry really holds: its keys twice (the index node and the string) plus the nodes.
  constexpr std::size_t node_overhead = 96;
  for (const auto& key : keys) bytes += key.size() + node_overhead;
  bytes += 3 * node_overhead;
  if (!ev || keys.empty() || bytes > limits_.max_bytes || limits_.max_events == 0) return;
  erase(ev->id);
  make_room_in_share(source, bytes);
  while (entries_.size() >= limits_.max_events || bytes_ + bytes > limits_.max_bytes)
    evict_oldest();
  auto id = ev->id;
  auto sequence = next_sequence_++;
  auto& usage = sources_[source];
  ++usage.events;
  usage.bytes += bytes;
  usage.by_age.emplace(sequence, id);
  Entry entry{std::move(ev), bytes, {}, now, sequence, source};
  entry.keys.reserve(keys.size());
  for (auto& key : keys) entry.keys.push_back(waiting_.emplace(std::move(key), id));
  entries_.emplace(id, std::move(entry));
  by_age_.emplace(sequence, id);
  bytes_ += bytes;
  ++stats_.parked;
}

std::vector<RetryCache::Released> RetryCache::release_from(const std::vector<std::string>& keys) {
  std::vector<Released> out;
  for (const auto& key : keys) {
    auto [first, last] = waiting_.equal_range(key);
    std::vector<EventId> ids;
    for (auto it = first; it != last; ++it) ids.push_back(it->second);
    for (const auto& id : ids) {
      auto entry = entries_.find(id);
      if (entry == entries_.end()) continue;
      out.push_back({entry->second.event, entry->second.source});
      erase(id);
      ++stats_.released;
    }
  }
  return out;
}

std::vector<nostr::EventPtr> RetryCache::release(const std::vector<std::string>& keys) {
  std::vector<nostr::EventPtr> out;
  for (auto& released : release_from(keys)) out.push_back(std::move(released.event));
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

void RetryCache::make_room_in_share(const std::string& source, std::size_t bytes) {
  auto usage = sources_.find(source);
  if (source.empty() || usage == sources_.end()) return;
  const auto share_events = static_cast<std::size_t>(limits_.source_share * limits_.max_events);
  const auto share_bytes = static_cast<std::size_t>(limits_.source_share * limits_.max_bytes);
  while (usage->second.events > 0 &&
         (usage->second.events >= std::max<std::size_t>(share_events, 1) ||
          usage->second.bytes + bytes > share_bytes)) {
    erase(usage->second.by_age.begin()->second);  // may erase the usage entry itself
    ++stats_.evicted;
    usage = sources_.find(source);
    if (usage == sources_.end()) return;
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
  if (auto usage = sources_.find(entry->second.source); usage != sources_.end()) {
    usage->second.by_age.erase(entry->second.sequence);
    usage->second.bytes -= entry->second.bytes;
    if (--usage->second.events == 0) sources_.erase(usage);
  }
  bytes_ -= entry->second.bytes;
  entries_.erase(entry);
}

}  // namespace graspd::policy
