#include "store/policy/archive_rules.hpp"

#include <algorithm>

#include "messages/nostr/nip34.hpp"

namespace graspd::policy {

bool ArchiveRules::takes(const nostr::Pubkey& owner, std::string_view identifier) const {
  return all || std::any_of(whitelist.begin(), whitelist.end(), [&](const RepositoryRule& rule) {
           return rule.covers(owner, identifier);
         });
}

bool ArchiveRules::takes(const nostr::Event& announcement) const {
  auto identifier = announcement.d_tag();
  if (takes(announcement.pubkey, identifier)) return true;
  if (grasp_services.empty()) return false;
  for (const auto& tag : announcement.tags) {
    if (tag.empty() || tag[0] != nostr::nip34::tag::clone) continue;
    for (std::size_t i = 1; i < tag.size(); ++i)
      for (const auto& service : grasp_services)
        if (grasp_clone_url_on(tag[i], service, announcement.pubkey, identifier)) return true;
  }
  return false;
}

}  // namespace graspd::policy
