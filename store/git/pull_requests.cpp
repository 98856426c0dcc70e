#include "store/git/pull_requests.hpp"

#include <algorithm>
#include <set>

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

std::vector<RepositoryRef> pr_repositories(const nostr::Event& ev, std::size_t max) {
  std::vector<RepositoryRef> out;
  std::set<RepositoryRef> seen;  // an event of many tags is not compared pairwise
  for (const auto& tag : ev.tags) {
    if (out.size() >= max) break;
    if (tag.size() < 2 || tag[0] != "a") continue;
    auto address = nip34::parse_address(tag[1]);
    if (!address || address->kind != nip34::kind::repo_announcement) continue;
    RepositoryRef ref{address->author, std::move(address->identifier)};
    if (seen.insert(ref).second) out.push_back(std::move(ref));
  }
  return out;
}

std::string pr_held_message(std::string_view commit) {
  return "purgatory: PR event stored, waiting for git push with commit " + std::string(commit);
}

Placeholder PrPlaceholders::placeholder(const Key& key, const Entry& entry) const {
  return Placeholder{key.first, key.second, entry.commit, entry.expires_at};
}

void PrPlaceholders::add(Key key, Entry entry) {
  by_expiry_.emplace(entry.expires_at, key);
  entries_.emplace(std::move(key), std::move(entry));
}

PrPlaceholders::Put PrPlaceholders::put(const nostr::EventId& id, const RepositoryRef& repository,
                                        std::string commit, std::int64_t now) {
  if (auto it = entries_.find(Key{id, repository}); it != entries_.end()) {
    // Pushing the ref again does not make its PR event likelier: the expiry stays. A deletion
    // under way fails on the moved ref and is due again with this commit (done()).
    it->second.commit = std::move(commit);
    return Put::moved;
  }
  if (entries_.size() >= max_) return Put::full;
  add(Key{id, repository}, Entry{std::move(commit), now + hold_seconds_, false});
  return Put::added;
}

void PrPlaceholders::doom(const nostr::EventId& id, const RepositoryRef& repository,
                          std::string commit) {
  Key key{id, repository};
  auto it = entries_.find(key);
  if (it == entries_.end()) return add(std::move(key), Entry{std::move(commit), 0, false});
  it->second.commit = std::move(commit);
  if (it->second.deleting) return;  // due again when that deletion ends, with this commit
  by_expiry_.erase({it->second.expires_at, key});
  it->second.expires_at = 0;
  by_expiry_.emplace(0, std::move(key));
}

std::vector<Placeholder> PrPlaceholders::take(const nostr::EventId& id) {
  std::vector<Placeholder> out;
  auto it = entries_.lower_bound(Key{id, RepositoryRef{}});
  while (it != entries_.end() && it->first.first == id) {
    if (it->second.deleting) {  // its ref is going already: that deletion ends it
      ++it;
      continue;
    }
    out.push_back(placeholder(it->first, it->second));
    by_expiry_.erase({it->second.expires_at, it->first});
    it = entries_.erase(it);
  }
  return out;
}

std::vector<Placeholder> PrPlaceholders::of(const nostr::EventId& id) const {
  std::vector<Placeholder> out;
  for (auto it = entries_.lower_bound(Key{id, RepositoryRef{}});
       it != entries_.end() && it->first.first == id; ++it)
    out.push_back(placeholder(it->first, it->second));
  return out;
}

std::vector<Placeholder> PrPlaceholders::due(std::int64_t now, std::size_t limit) {
  std::vector<Placeholder> out;
  while (out.size() < limit && !by_expiry_.empty() && by_expiry_.begin()->first <= now) {
    auto key = by_expiry_.begin()->second;
    by_expiry_.erase(by_expiry_.begin());
    auto& entry = entries_.at(key);
    entry.deleting = true;
    ++in_flight_;
    out.push_back(placeholder(key, entry));
  }
  return out;
}

bool PrPlaceholders::done(const Placeholder& p, bool gone, const std::string& current) {
  auto it = entries_.find(Key{p.id, p.repository});
  if (it == entries_.end() || !it->second.deleting) return false;
  auto& entry = it->second;
  entry.deleting = false;
  --in_flight_;
  // Gone with the commit asked: ended. Gone while a push moved the ref (its commit changed here),
  // or still there: due again, naming what the ref names now when git said so.
  if (gone && entry.commit == p.commit) {
    entries_.erase(it);
    return true;
  }
  if (!gone && !current.empty() && entry.commit == p.commit) entry.commit = current;
  by_expiry_.emplace(entry.expires_at, it->first);
  return false;
}

void PrPlaceholders::restore(Placeholder placeholder) {
  Key key{placeholder.id, placeholder.repository};
  if (entries_.count(key)) return;
  add(std::move(key), Entry{std::move(placeholder.commit), placeholder.expires_at, false});
}

}  // namespace graspd::policy
