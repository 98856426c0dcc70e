// GRASP-05 archive storage caps (docs/policy.md "Archives", "Storage caps"); pure. Git hosting
// measures each archive repository's bytes on disk when it is created and after git data arrives
// in it, and asks this class whether a new archive has room (NGIT_ARCHIVE_MAX_REPOSITORIES,
// NGIT_ARCHIVE_MAX_BYTES) and whether more may be fetched into one
// (NGIT_ARCHIVE_MAX_REPOSITORY_BYTES, NGIT_ARCHIVE_MAX_BYTES). A cap of 0 is no cap.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <string>

#include "messages/nostr/nip34.hpp"

namespace graspd::git {

struct ArchiveCaps {
  std::size_t max_repositories = 0;
  std::uint64_t max_bytes = 0;
  std::uint64_t max_repository_bytes = 0;
};

class ArchiveUsage {
 public:
  using RepositoryRef = nostr::nip34::RepositoryRef;

  explicit ArchiveUsage(ArchiveCaps caps) : caps_(caps) {}

  /// `repository` is an archive using `bytes` on disk (a new one, or measured again).
  void set(const RepositoryRef& repository, std::uint64_t bytes);
  /// `repository` is no archive here any more (removed, or hosted now).
  void remove(const RepositoryRef& repository);

  /// Whether `repository` may become a new archive here; one already here always may. Otherwise
  /// the refusal's reason (for a `blocked:` answer), empty when it may.
  std::string refusal_of_new(const RepositoryRef& repository) const;
  /// Whether objects may still be fetched into archive `repository` (no archive: yes).
  bool may_grow(const RepositoryRef& repository) const;
  /// The archives that may not grow (may_grow false).
  std::set<RepositoryRef> full() const;

  bool contains(const RepositoryRef& repository) const { return bytes_.count(repository) > 0; }
  std::size_t repositories() const { return bytes_.size(); }
  std::uint64_t total_bytes() const { return total_; }

 private:
  ArchiveCaps caps_;
  std::map<RepositoryRef, std::uint64_t> bytes_;
  std::uint64_t total_ = 0;
};

}  // namespace graspd::git
