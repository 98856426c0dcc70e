// GRASP-03 Sync+ inventory: which accepted threads exist, who takes part in them and which
// authors are eligible for identity discovery. Pure (no CAF): the self-subscriber feeds it every
// accepted event of its startup load and of the store's change feed, and hands its snapshot to the
// Sync+ controller.
//
// Rules (docs/spec/grasp-03-proactive-sync-plus.md):
//  - a root (1617/1618/1619/1621 tagging a repository) is a candidate; it is active only while one
//    of the repositories it tags is Full (an accepted announcement is Full; a candidate of a
//    repository not known yet stays inert and becomes active without a rescan when it is);
//  - a descendant is any other accepted event (not identity, announcement, state or deletion)
//    that references a known thread node by id (e/E/q) or address (a/A/q); it inherits the roots
//    of what it references, so an indirect reply naming only its parent still belongs to the
//    thread. At most `max_nodes` descendants are kept;
//  - eligible authors: owners and maintainers of Full announcements, authors of active roots and
//    of descendants of active roots. Nobody else;
//  - the latest kind 10002 and whether a kind 0 is retained, per author (only eligible authors'
//    are in the snapshot).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "messages/nostr/event.hpp"

namespace graspd::sync {

using nostr::EventId;
using nostr::Pubkey;

/// NIP-65 marker of an `r` tag: no marker means read and write.
enum class RelayMarker { unmarked, read, write };

struct RelayListEntry {
  std::string url;  ///< as published (untrusted: not checked here)
  RelayMarker marker = RelayMarker::unmarked;
  friend bool operator==(const RelayListEntry&, const RelayListEntry&) = default;
};

/// An author's retained kind 10002, its `r` tags in published order.
struct RelayList {
  std::int64_t created_at = 0;
  EventId id{};
  std::vector<RelayListEntry> entries;
  friend bool operator==(const RelayList&, const RelayList&) = default;
};

/// The `r` tags of a kind 10002 event.
RelayList parse_relay_list(const nostr::Event& ev);

/// What the Sync+ controller works from; immutable once built.
struct PlusSnapshot {
  std::set<Pubkey> eligible;
  /// Active roots by their author.
  std::map<Pubkey, std::set<EventId>> roots_by_author;
  /// Active roots of every thread an author has an event in (their own roots included).
  std::map<Pubkey, std::set<EventId>> threads_by_participant;
  /// Full repositories ("30617:<owner>:<d>") by owner and declared maintainer.
  std::map<Pubkey, std::set<std::string>> repos_by_member;
  /// Active roots by the Full repositories they tag.
  std::map<std::string, std::set<EventId>> roots_by_repo;
  /// Retained relay lists of eligible authors.
  std::map<Pubkey, RelayList> relay_lists;
  /// Eligible authors with a retained kind 0.
  std::set<Pubkey> profiles;
  /// Descendants left out because the scan bound was reached.
  std::size_t descendants_dropped = 0;
  std::size_t descendants = 0;

  friend bool operator==(const PlusSnapshot&, const PlusSnapshot&) = default;
};

class PlusInventory {
 public:
  explicit PlusInventory(std::size_t max_nodes = 200'000) : max_nodes_(max_nodes) {}

  /// Feeds one accepted event; true when it changed the inventory.
  bool add(const nostr::Event& ev);
  /// Sets a repository's level (an accepted announcement makes it Full; a purgatory or StateOnly
  /// repository is not). Its roots become active or inert without a rescan.
  bool set_full(const std::string& repo, bool full);
  /// Forgets a repository whose announcement was never stored (a held one that expired), with its
  /// level; root candidates tagging it stay, inert.
  bool remove_repository(const std::string& repo);

  /// Ids and addresses of thread nodes added since the last call: what the startup scan asks the
  /// store for next (events referencing them).
  struct Frontier {
    std::vector<EventId> ids;
    std::vector<std::string> addresses;
    bool empty() const { return ids.empty() && addresses.empty(); }
  };
  Frontier take_frontier();

  PlusSnapshot snapshot() const;
  std::size_t nodes() const { return nodes_.size(); }

 private:
  struct Node {
    Pubkey author{};
    std::set<EventId> roots;
  };
  struct Repo {
    std::int64_t created_at = 0;
    std::set<Pubkey> members;  ///< owner and declared maintainers
  };
  bool add_announcement(const nostr::Event& ev);
  bool add_root(const nostr::Event& ev);
  bool add_descendant(const nostr::Event& ev);
  bool root_active(const EventId& root) const;

  std::size_t max_nodes_;
  /// Accepted announcements (the latest per address).
  std::map<std::string, Repo> repos_;
  /// Repositories set not Full (set_full(repo, false)); an accepted announcement is Full otherwise.
  std::set<std::string> not_full_;
  bool is_full(const std::string& repo) const;
  /// Every root candidate and the repositories it tags.
  std::map<EventId, std::vector<std::string>> roots_;
  std::map<EventId, Node> nodes_;
  /// Addressable thread nodes by address, with their roots.
  std::map<std::string, std::set<EventId>> addresses_;
  std::map<Pubkey, RelayList> relay_lists_;
  std::set<Pubkey> profiles_;
  std::size_t dropped_ = 0;
  Frontier frontier_;
};

}  // namespace graspd::sync
