// GRASP-05 archive rules (NGIT_ARCHIVE_*, docs/policy.md "Archives"): which announcements that do
// not list this service are still accepted, as archives of repositories hosted elsewhere, and
// whether announcements that do list it are refused (read-only). The configuration parses the
// options into ArchiveRules; the policy only asks takes().
#pragma once

#include <string_view>
#include <vector>

#include "messages/nostr/event.hpp"
#include "messages/relay_url.hpp"
#include "store/policy/grasp_urls.hpp"
#include "store/policy/repository_rule.hpp"

namespace graspd::policy {

struct ArchiveRules {
  /// NGIT_ARCHIVE_ALL: every announcement is archived.
  bool all = false;
  /// NGIT_ARCHIVE_WHITELIST: these repositories are archived.
  std::vector<RepositoryRule> whitelist;
  /// NGIT_ARCHIVE_GRASP_SERVICES: repositories hosted on these GRASP services are archived.
  std::vector<HostPort> grasp_services;
  /// NGIT_ARCHIVE_READ_ONLY (in effect): announcements listing this service are archived or
  /// refused, never hosted.
  bool read_only = false;

  bool any_source() const { return all || !whitelist.empty() || !grasp_services.empty(); }
  /// Whether an archive rule takes `announcement` (kind 30617): ARCHIVE_ALL, the whitelist by its
  /// author and `d`, or a clone URL on a listed GRASP service (grasp_clone_url_on).
  bool takes(const nostr::Event& announcement) const;
  /// The same for a repository whose announcement is not at hand: ARCHIVE_ALL or the whitelist.
  bool takes(const nostr::Pubkey& owner, std::string_view identifier) const;
};

}  // namespace graspd::policy
