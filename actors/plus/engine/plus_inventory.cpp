#include "actors/plus/engine/plus_inventory.hpp"

#include <algorithm>

#include "messages/nostr/nip34.hpp"

namespace graspd::sync {

namespace nip34 = nostr::nip34;

namespace {

/// Kinds that never make a thread node: they describe people or repositories, or delete.
bool thread_kind(std::uint32_t kind) {
  return !nip34::is_identity_kind(kind) && kind != nip34::kind::deletion &&
         kind != nip34::kind::repo_announcement && kind != nip34::kind::repo_state;
}

struct References {
  std::vector<EventId> ids;
  std::vector<std::string> addresses;
};

/// e/E ids, a/A addresses, q either (as the acceptance policy reads them).
References references_of(const nostr::Event& ev) {
  References out;
  for (const auto& tag : ev.tags) {
    if (tag.size() < 2 || tag[0].size() != 1) continue;
    const char letter = tag[0][0];
    if (letter == 'e' || letter == 'E' || letter == 'q') {
      EventId id;
      if (nostr::from_hex(tag[1], id)) {
        out.ids.push_back(id);
        continue;
      }
    }
    if ((letter == 'a' || letter == 'A' || letter == 'q') && nip34::parse_address(tag[1]))
      out.addresses.push_back(tag[1]);
  }
  return out;
}

}  // namespace

RelayList parse_relay_list(const nostr::Event& ev) {
  RelayList out;
  out.created_at = ev.created_at;
  out.id = ev.id;
  for (const auto& tag : ev.tags) {
    if (tag.size() < 2 || tag[0] != "r") continue;
    RelayListEntry entry{tag[1], RelayMarker::unmarked};
    if (tag.size() >= 3 && tag[2] == "read") entry.marker = RelayMarker::read;
    if (tag.size() >= 3 && tag[2] == "write") entry.marker = RelayMarker::write;
    out.entries.push_back(std::move(entry));
  }
  return out;
}

bool PlusInventory::is_full(const std::string& repo) const {
  return repos_.count(repo) && !not_full_.count(repo);
}

bool PlusInventory::root_active(const EventId& root) const {
  auto it = roots_.find(root);
  if (it == roots_.end()) return false;
  return std::any_of(it->second.begin(), it->second.end(),
                     [&](const std::string& repo) { return is_full(repo); });
}

bool PlusInventory::set_full(const std::string& repo, bool full) {
  return full ? not_full_.erase(repo) > 0 : not_full_.insert(repo).second;
}

bool PlusInventory::remove_repository(const std::string& repo) {
  const bool marked = not_full_.erase(repo) > 0;
  return repos_.erase(repo) > 0 || marked;
}

bool PlusInventory::add_announcement(const nostr::Event& ev) {
  auto address = nostr::address_of(ev);
  auto& repo = repos_[address];
  if (!repo.members.empty() && ev.created_at < repo.created_at) return false;
  Repo updated;
  updated.created_at = ev.created_at;
  updated.members.insert(ev.pubkey);
  for (const auto& maintainer : nostr::nip34::listed_maintainers(ev))
    updated.members.insert(maintainer);
  const bool changed = updated.members != repo.members;
  repo = std::move(updated);
  return changed;
}

bool PlusInventory::add_root(const nostr::Event& ev) {
  std::vector<std::string> repos;
  for (const auto& tag : ev.tags) {
    if (tag.size() < 2 || tag[0] != "a") continue;
    auto address = nip34::parse_address(tag[1]);
    if (address && address->kind == nip34::kind::repo_announcement) repos.push_back(tag[1]);
  }
  if (repos.empty() || roots_.count(ev.id)) return false;
  roots_.emplace(ev.id, std::move(repos));
  auto& node = nodes_[ev.id];
  node.author = ev.pubkey;
  node.roots.insert(ev.id);
  frontier_.ids.push_back(ev.id);
  return true;
}

bool PlusInventory::add_descendant(const nostr::Event& ev) {
  if (nodes_.count(ev.id)) return false;
  auto refs = references_of(ev);
  std::set<EventId> roots;
  for (const auto& id : refs.ids)
    if (auto it = nodes_.find(id); it != nodes_.end())
      roots.insert(it->second.roots.begin(), it->second.roots.end());
  for (const auto& address : refs.addresses)
    if (auto it = addresses_.find(address); it != addresses_.end())
      roots.insert(it->second.begin(), it->second.end());
  if (roots.empty()) return false;
  if (nodes_.size() >= max_nodes_) {
    ++dropped_;
    return false;
  }
  frontier_.ids.push_back(ev.id);
  if (nostr::is_addressable(ev.kind) || nostr::is_replaceable(ev.kind)) {
    auto address = nostr::address_of(ev);
    addresses_[address].insert(roots.begin(), roots.end());
    frontier_.addresses.push_back(std::move(address));
  }
  nodes_.emplace(ev.id, Node{ev.pubkey, std::move(roots)});
  return true;
}

bool PlusInventory::add(const nostr::Event& ev) {
  if (ev.kind == nip34::kind::repo_announcement) return add_announcement(ev);
  if (ev.kind == nip34::kind::relay_list) {
    auto& list = relay_lists_[ev.pubkey];
    if (list.id != EventId{} && ev.created_at <= list.created_at) return false;
    list = parse_relay_list(ev);
    return true;
  }
  if (ev.kind == nip34::kind::metadata) return profiles_.insert(ev.pubkey).second;
  if (nip34::is_root(ev)) return add_root(ev);
  if (!thread_kind(ev.kind)) return false;
  return add_descendant(ev);
}

PlusInventory::Frontier PlusInventory::take_frontier() {
  Frontier out = std::move(frontier_);
  frontier_ = Frontier{};
  return out;
}

PlusSnapshot PlusInventory::snapshot() const {
  PlusSnapshot out;
  for (const auto& [address, repo] : repos_) {
    if (!is_full(address)) continue;
    for (const auto& member : repo.members) {
      out.repos_by_member[member].insert(address);
      out.eligible.insert(member);
    }
  }
  std::set<EventId> active;
  for (const auto& [root, repos] : roots_) {
    if (!root_active(root)) continue;
    active.insert(root);
    for (const auto& repo : repos)
      if (is_full(repo)) out.roots_by_repo[repo].insert(root);
  }
  for (const auto& [id, node] : nodes_) {
    bool counted = false;
    for (const auto& root : node.roots) {
      if (!active.count(root)) continue;
      out.threads_by_participant[node.author].insert(root);
      counted = true;
    }
    if (!counted) continue;
    out.eligible.insert(node.author);
    if (active.count(id) && node.roots.count(id)) out.roots_by_author[node.author].insert(id);
    if (!roots_.count(id)) ++out.descendants;
  }
  for (const auto& [author, list] : relay_lists_)
    if (out.eligible.count(author)) out.relay_lists.emplace(author, list);
  for (const auto& author : profiles_)
    if (out.eligible.count(author)) out.profiles.insert(author);
  out.descendants_dropped = dropped_;
  return out;
}

}  // namespace graspd::sync
