// Events the acceptance policy has accepted and sent to the store writer but
// whose commit it has not seen yet. The policy judges every later event
// against the store plus these, so an event pipelined right behind its
// dependency is not refused for a commit that is merely in flight.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "messages/nostr/event.hpp"
#include "messages/nostr/filter.hpp"

namespace graspd::policy {

class PendingEvents {
 public:
  using Visit = std::function<bool(const nostr::Event&)>;

  /// Adds an accepted event and the pending events it was accepted on; adding an id already
  /// present changes nothing.
  void add(nostr::EventPtr event, std::vector<nostr::EventId> depends_on = {});
  /// Removes the event (committed and seen in the change feed, or known to be in the store).
  void remove(const nostr::EventId& id);
  /// Removes an event that will not be stored and every pending event that depends on it,
  /// directly or not: their writes will be refused for the missing dependency, so nothing may be
  /// accepted on them meanwhile. Returns the removed ids, `id` first.
  std::vector<nostr::EventId> remove_with_dependants(const nostr::EventId& id);
  /// The writer committed it; the change feed will report it. Until then it stays visible.
  void mark_committed(const nostr::EventId& id);
  /// Drops entries marked committed at or before the previous sweep: a safety net for a commit
  /// whose change-feed message never arrives. Returns how many were dropped.
  std::size_t sweep_committed();

  bool contains(const nostr::EventId& id) const { return entries_.count(id) > 0; }
  const nostr::Event* find(const nostr::EventId& id) const;
  std::size_t size() const { return entries_.size(); }
  bool empty() const { return entries_.empty(); }

  /// Visits the events matching any filter (each once) until `visit` returns false; returns the
  /// id of the event it stopped on, if it stopped.
  std::optional<nostr::EventId> scan(const nostr::Filters& filters, const Visit& visit) const;
  /// Calls `visit` for each pending event of `author` until it returns false.
  void for_each_by_author(const nostr::Pubkey& author, const Visit& visit) const;

 private:
  using TagKey = std::pair<char, std::string>;
  using TagIndex = std::multimap<TagKey, nostr::EventId>;
  using KindAuthorIndex = std::multimap<std::pair<std::uint32_t, nostr::Pubkey>, nostr::EventId>;
  using AuthorIndex = std::multimap<nostr::Pubkey, nostr::EventId>;
  struct Entry {
    nostr::EventPtr event;
    std::vector<nostr::EventId> depends_on;
    /// This entry's index nodes: removal erases them directly instead of searching.
    std::vector<TagIndex::iterator> tag_nodes;
    KindAuthorIndex::iterator kind_author_node;
    AuthorIndex::iterator author_node;
    bool committed = false;
    bool seen_by_sweep = false;
  };

  /// The tag letters the policy's lookups filter on; other tags are not indexed.
  static bool indexed_letter(char letter);
  std::vector<TagKey> tag_keys(const nostr::Event& ev) const;
  template <class Fn>
  void for_each_candidate(const nostr::Filter& filter, Fn&& fn) const;

  std::map<nostr::EventId, Entry> entries_;
  TagIndex by_tag_;
  KindAuthorIndex by_kind_author_;
  AuthorIndex by_author_;
  /// dependency -> the pending events accepted on it.
  std::multimap<nostr::EventId, nostr::EventId> dependants_;
};

}  // namespace graspd::policy
