#include "store/git/pull_requests.hpp"

#include <algorithm>

#include "messages/nostr/nip34.hpp"

namespace graspd::policy {

namespace nip34 = nostr::nip34;

bool is_pull_request_kind(std::uint32_t kind) {
  return kind == nip34::kind::pull_request || kind == nip34::kind::pull_request_update;
}

std::optional<std::string> pr_commit(const nostr::Event& ev) {
  auto commit = ev.first_tag_value("c");
  bool hex = commit.size() == 40 && std::all_of(commit.begin(), commit.end(), [](char c) {
               return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
             });
  if (!hex) return std::nullopt;
  return std::string(commit);
}

std::vector<RepositoryRef> pr_repositories(const nostr::Event& ev) {
  std::vector<RepositoryRef> out;
  for (const auto& tag : ev.tags) {
    if (tag.size() < 2 || tag[0] != "a") continue;
    auto address = nip34::parse_address(tag[1]);
    if (!address || address->kind != nip34::kind::repo_announcement) continue;
    RepositoryRef ref{address->author, std::move(address->identifier)};
    if (std::find(out.begin(), out.end(), ref) == out.end()) out.push_back(std::move(ref));
  }
  return out;
}

std::string pr_held_message(std::string_view commit) {
  return "purgatory: PR event stored, waiting for git push with commit " + std::string(commit);
}

PrPlaceholders::Put PrPlaceholders::put(const nostr::EventId& id, const RepositoryRef& repository,
                                        std::string commit, std::int64_t now) {
  auto& list = by_id_[id];
  for (auto& placeholder : list) {
    if (placeholder.repository != repository) continue;
    // Pushing the ref again does not make its PR event likelier: the expiry stays.
    placeholder.commit = std::move(commit);
    return Put::moved;
  }
  if (size_ >= max_) {
    if (list.empty()) by_id_.erase(id);
    return Put::full;
  }
  list.push_back(Placeholder{id, repository, std::move(commit), now + hold_seconds_});
  ++size_;
  return Put::added;
}

std::vector<Placeholder> PrPlaceholders::take(const nostr::EventId& id) {
  auto it = by_id_.find(id);
  if (it == by_id_.end()) return {};
  auto out = std::move(it->second);
  by_id_.erase(it);
  size_ -= out.size();
  return out;
}

const std::vector<Placeholder>& PrPlaceholders::of(const nostr::EventId& id) const {
  static const std::vector<Placeholder> none;
  auto it = by_id_.find(id);
  return it == by_id_.end() ? none : it->second;
}

std::vector<Placeholder> PrPlaceholders::expire(std::int64_t now) {
  std::vector<Placeholder> out;
  for (auto it = by_id_.begin(); it != by_id_.end();) {
    auto& list = it->second;
    auto ended = std::stable_partition(list.begin(), list.end(),
                                       [now](const Placeholder& p) { return p.expires_at > now; });
    out.insert(out.end(), std::make_move_iterator(ended), std::make_move_iterator(list.end()));
    list.erase(ended, list.end());
    it = list.empty() ? by_id_.erase(it) : std::next(it);
  }
  size_ -= out.size();
  return out;
}

void PrPlaceholders::restore(Placeholder placeholder) {
  auto& list = by_id_[placeholder.id];
  for (const auto& p : list)
    if (p.repository == placeholder.repository) return;
  list.push_back(std::move(placeholder));
  ++size_;
}

}  // namespace graspd::policy
