#include "store/git/announcement_sources.hpp"

#include <set>

#include "messages/nostr/nip34.hpp"

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

std::vector<std::string> announcement_clone_urls(const policy::StoreView& view,
                                                 std::string_view identifier) {
  std::vector<std::string> urls;
  view.scan({announcements_named(identifier)}, [&](const nostr::Event& announcement) {
    auto left = max_clone_urls_per_identifier - urls.size();
    for (auto& url : nostr::nip34::tag_values(announcement, nostr::nip34::tag::clone, left))
      urls.push_back(std::move(url));
    return urls.size() < max_clone_urls_per_identifier;
  });
  return urls;
}

}  // namespace graspd::git
