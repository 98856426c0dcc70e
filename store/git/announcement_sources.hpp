// What the stored and held announcements of one identifier say about where its git data is: the
// owners whose repositories of that name may be here, and the clone URLs to fetch missing objects
// from (docs/spec/git-hosting.md §5.10, §8). Pure: reads through the StoreView.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "messages/nostr/event.hpp"
#include "messages/nostr/filter.hpp"
#include "store/policy/acceptance_policy.hpp"

namespace graspd::git {

/// Most owners of one identifier looked at (a flood of announcements naming one identifier must
/// not make each state or push scan them all).
inline constexpr std::size_t max_owners_per_identifier = 1024;
/// Most clone URLs of one identifier's announcements tried for a fetch.
inline constexpr std::size_t max_clone_urls_per_identifier = 64;

/// Every announcement (kind 30617) named `identifier`, whoever its owner.
nostr::Filter announcements_named(std::string_view identifier);

/// Authors of the announcements named `identifier`, distinct, at most max_owners_per_identifier.
std::vector<nostr::Pubkey> announcement_owners(const policy::StoreView& view,
                                               std::string_view identifier);

/// Where to fetch `owner`'s repository `identifier` from, in the order to try: the `clone` values
/// of the owner's announcement, then of its maintainers' (maintainer_closure), then of the other
/// owners' announcements of that identifier, at most `per_other_owner` from each (0 = none), so
/// that strangers' URLs, dead or slow, cannot crowd out the owner's own; at most
/// max_clone_urls_per_identifier in all.
std::vector<std::string> repository_clone_urls(const policy::StoreView& view,
                                               const nostr::Pubkey& owner,
                                               std::string_view identifier,
                                               std::size_t per_other_owner);

}  // namespace graspd::git
