#include "actors/git/engine/archive_usage.hpp"

namespace graspd::git {

void ArchiveUsage::set(const RepositoryRef& repository, std::uint64_t bytes) {
  auto [it, added] = bytes_.try_emplace(repository, 0);
  total_ -= it->second;
  it->second = bytes;
  total_ += bytes;
}

void ArchiveUsage::remove(const RepositoryRef& repository) {
  auto it = bytes_.find(repository);
  if (it == bytes_.end()) return;
  total_ -= it->second;
  bytes_.erase(it);
}

std::string ArchiveUsage::refusal_of_new(const RepositoryRef& repository) const {
  if (contains(repository)) return {};
  if (caps_.max_repositories && bytes_.size() >= caps_.max_repositories)
    return "blocked: archive full: this server archives at most " +
           std::to_string(caps_.max_repositories) + " repositories";
  if (caps_.max_bytes && total_ >= caps_.max_bytes)
    return "blocked: archive full: the archived repositories use the " +
           std::to_string(caps_.max_bytes) + " bytes this server gives them";
  return {};
}

bool ArchiveUsage::may_grow(const RepositoryRef& repository) const {
  auto it = bytes_.find(repository);
  if (it == bytes_.end()) return true;
  if (caps_.max_repository_bytes && it->second >= caps_.max_repository_bytes) return false;
  return !caps_.max_bytes || total_ < caps_.max_bytes;
}

std::set<ArchiveUsage::RepositoryRef> ArchiveUsage::full() const {
  std::set<RepositoryRef> out;
  for (const auto& [repository, bytes] : bytes_)
    if (!may_grow(repository)) out.insert(repository);
  return out;
}

}  // namespace graspd::git
