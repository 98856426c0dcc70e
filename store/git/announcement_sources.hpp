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

/// The `clone` values of the announcements named `identifier`, in scan order, at most
/// max_clone_urls_per_identifier.
std::vector<std::string> announcement_clone_urls(const policy::StoreView& view,
                                                 std::string_view identifier);

}  // namespace graspd::git
