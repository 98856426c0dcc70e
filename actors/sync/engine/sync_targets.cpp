// The RepoSyncIndex seen from the relays: which items each relay is asked for (by the level of
// each repository) and the order in which relays are admitted when slots are scarce.
#include <algorithm>
#include <iterator>
#include <string_view>

#include "actors/sync/engine/sync_plan.hpp"

namespace graspd::sync {

namespace {

/// The author part of "30617:<author>:<identifier>".
std::string_view author_of(const RepoRef& repo) {
  auto first = repo.find(':');
  auto second = repo.find(':', first == RepoRef::npos ? 0 : first + 1);
  if (first == RepoRef::npos || second == RepoRef::npos) return repo;
  return std::string_view(repo).substr(first + 1, second - first - 1);
}

/// Positions one author's relays round-robin over the author's repositories
/// (each repository's first relay, then each one's second, ...).
void rank_author(const std::vector<const std::set<RelayUrl>*>& lists,
                 std::map<RelayUrl, AdmissionRank>& ranks) {
  std::set<RelayUrl> seen;
  std::size_t position = 0;
  for (std::size_t round = 0;; ++round) {
    bool any = false;
    for (const auto* list : lists) {
      if (round >= list->size()) continue;
      any = true;
      const auto& relay = *std::next(list->begin(), static_cast<std::ptrdiff_t>(round));
      if (!seen.insert(relay).second) continue;
      auto [it, inserted] = ranks.try_emplace(relay, AdmissionRank{position, 0});
      it->second.position = std::min(it->second.position, position);
      ++it->second.listed_by;
      ++position;
    }
    if (!any) return;
  }
}

}  // namespace

std::map<RelayUrl, AdmissionRank> rank_relays(const RepoSyncIndex& index) {
  std::map<std::string_view, std::vector<const std::set<RelayUrl>*>> by_author;
  for (const auto& [repo, needs] : index) by_author[author_of(repo)].push_back(&needs.relays);
  std::map<RelayUrl, AdmissionRank> ranks;
  for (const auto& [author, lists] : by_author) rank_author(lists, ranks);
  return ranks;
}

std::map<RelayUrl, SyncItems> derive_relay_targets(const RepoSyncIndex& index) {
  std::map<RelayUrl, SyncItems> out;
  for (const auto& [repo, needs] : index)
    for (const auto& relay : needs.relays) {
      auto& items = out[relay];
      if (needs.level == SyncLevel::state_only) {
        // Held: nothing references it here yet, and its threads wait for promotion.
        items.states.insert(repo);
        continue;
      }
      items.repos.insert(repo);
      items.roots.insert(needs.roots.begin(), needs.roots.end());
    }
  return out;
}

}  // namespace graspd::sync
