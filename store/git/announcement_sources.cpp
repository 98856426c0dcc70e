#include "store/git/announcement_sources.hpp"

#include <algorithm>
#include <map>
#include <set>

#include "messages/nostr/nip34.hpp"
#include "store/git/git_push.hpp"

namespace graspd::git {

nostr::Filter announcements_named(std::string_view identifier) {
  nostr::Filter f;
  f.kinds = std::vector<std::uint32_t>{nostr::nip34::kind::repo_announcement};
  f.tags['d'] = {std::string(identifier)};
  f.normalize();
  return f;
}

std::vector<nostr::Pubkey> announcement_owners(const policy::StoreView& view,
                                               std::string_view identifier) {
  std::set<nostr::Pubkey> owners;
  view.scan({announcements_named(identifier)}, [&](const nostr::Event& announcement) {
    owners.insert(announcement.pubkey);
    return owners.size() < max_owners_per_identifier;
  });
  return {owners.begin(), owners.end()};
}

std::vector<std::string> repository_clone_urls(const policy::StoreView& view,
                                               const nostr::Pubkey& owner,
                                               std::string_view identifier,
                                               std::size_t per_other_owner) {
  auto members = maintainer_closure(view, owner, identifier);
  std::vector<std::string> own, maintainers, others;
  std::map<nostr::Pubkey, std::size_t> from_owner;
  std::size_t seen = 0;
  view.scan({announcements_named(identifier)}, [&](const nostr::Event& announcement) {
    bool member = members.count(announcement.pubkey) > 0;
    auto& into = announcement.pubkey == owner ? own : member ? maintainers : others;
    auto& taken = from_owner[announcement.pubkey];
    auto share = member ? max_clone_urls_per_identifier : per_other_owner;
    auto left = std::min(
        share - std::min(share, taken),
        max_clone_urls_per_identifier - std::min(max_clone_urls_per_identifier, into.size()));
    for (auto& url : nostr::nip34::tag_values(announcement, nostr::nip34::tag::clone, left)) {
      into.push_back(std::move(url));
      ++taken;
    }
    // The members' announcements may come after any number of strangers': the scan goes on
    // until the members' URLs fill the list, over as many announcements as owners are looked at.
    return ++seen < max_owners_per_identifier &&
           own.size() + maintainers.size() < max_clone_urls_per_identifier;
  });
  for (auto* list : {&maintainers, &others})
    for (auto& url : *list) own.push_back(std::move(url));
  own.resize(std::min(own.size(), max_clone_urls_per_identifier));
  return own;
}

}  // namespace graspd::git
