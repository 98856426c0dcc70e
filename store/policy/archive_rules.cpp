#include "store/policy/archive_rules.hpp"

#include <algorithm>

#include "messages/nostr/nip19.hpp"
#include "messages/nostr/nip34.hpp"

namespace graspd::policy {

namespace {

/// `path` of a clone URL without a query or fragment, split at '/': exactly "", npub, name.
bool path_names(std::string_view path, const nostr::Pubkey& owner, std::string_view identifier) {
  if (path.find_first_of("?#") != std::string_view::npos || path.empty() || path.front() != '/')
    return false;
  path.remove_prefix(1);
  auto slash = path.find('/');
  if (slash == std::string_view::npos) return false;
  auto npub = path.substr(0, slash);
  auto name = path.substr(slash + 1);
  constexpr std::string_view suffix = ".git";
  if (name.size() <= suffix.size() || name.substr(name.size() - suffix.size()) != suffix)
    return false;
  name.remove_suffix(suffix.size());
  auto decoded = percent_decode(name);
  return npub == nostr::encode_npub(owner) && decoded && *decoded == identifier;
}

}  // namespace

bool grasp_clone_url_on(std::string_view clone_url, const HostPort& service,
                        const nostr::Pubkey& owner, std::string_view identifier) {
  auto url = parse_url(clone_url);
  if (!url || url->has_user_info || (url->scheme != "http" && url->scheme != "https")) return false;
  return url_names_host(*url, service) && path_names(url->path_and_query, owner, identifier);
}

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
