// The retry cache of the acceptance policy: events refused only because what
// they depend on has not arrived yet, kept until a commit satisfies one of
// their wait keys (see policy::wait_key) or their time runs out.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "messages/nostr/event.hpp"

namespace graspd::policy {

/// Events refused only for a missing dependency, kept (bounded in count,
/// bytes and time) and handed back when a dependency is committed. Owned by
/// the same actor as the policy.
class RetryCache {
 public:
  struct Limits {
    std::size_t max_events = 10000;
    std::size_t max_bytes = 64u << 20;
    std::int64_t ttl_seconds = 600;
    /// Share of max_events and max_bytes one source (a client's address, a sync peer) may hold;
    /// past it the source's own oldest entry makes room, so one flooding source cannot evict what
    /// the others parked.
    double source_share = 0.25;
  };
  struct Stats {
    std::uint64_t parked = 0, released = 0, expired = 0, evicted = 0;
  };

  explicit RetryCache(Limits limits) : limits_(limits) {}

  /// Keeps `ev` until one of `keys` is released or it expires. The oldest
  /// entries make room when a bound is reached. Repeated keys count once; the
  /// bytes bound covers the event estimate plus the keys and index nodes.
  /// `source` names who sent it; an empty source is not held to a share.
  /// What a parked event counts for in max_bytes: an estimate of its size, since the exact JSON
  /// length would cost a serialization per refusal.
  static std::size_t approximate_bytes(const nostr::Event& ev) {
    std::size_t bytes = 256 + ev.content.size();
    for (const auto& tag : ev.tags)
      for (const auto& value : tag) bytes += value.size() + 4;
    return bytes;
  }

  void park(nostr::EventPtr ev, std::size_t bytes, std::vector<std::string> keys, std::int64_t now,
            const std::string& source = {});
  /// Removes and returns the events waiting on any of `keys`.
  std::vector<nostr::EventPtr> release(const std::vector<std::string>& keys);
  /// The same with the source each was parked by (judged again, it keeps its purgatory share).
  struct Released {
    nostr::EventPtr event;
    std::string source;
  };
  std::vector<Released> release_from(const std::vector<std::string>& keys);
  /// Drops entries older than the TTL.
  void expire(std::int64_t now);

  std::size_t size() const { return entries_.size(); }
  std::size_t bytes() const { return bytes_; }
  const Stats& stats() const { return stats_; }

 private:
  using Waiting = std::multimap<std::string, nostr::EventId>;
  struct Entry {
    nostr::EventPtr event;
    std::size_t bytes;
    /// This entry's nodes in waiting_: erasing it costs its own keys, not the other waiters'.
    std::vector<Waiting::iterator> keys;
    std::int64_t parked_at;
    std::uint64_t sequence;
    std::string source;
  };
  struct SourceUsage {
    std::size_t events = 0;
    std::size_t bytes = 0;
    std::map<std::uint64_t, nostr::EventId> by_age;
  };
  void erase(const nostr::EventId& id);
  void evict_oldest();
  void make_room_in_share(const std::string& source, std::size_t bytes);

  Limits limits_;
  Stats stats_;
  std::size_t bytes_ = 0;
  std::uint64_t next_sequence_ = 0;
  std::map<nostr::EventId, Entry> entries_;
  Waiting waiting_;
  std::map<std::uint64_t, nostr::EventId> by_age_;
  std::map<std::string, SourceUsage> sources_;
};

}  // namespace graspd::policy
