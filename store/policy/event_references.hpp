// What the policy reads from an event's tags to place it (GRASP-01 §3.5): its backward references
// (e/E ids, a/A addresses, q either) and, for an announcement, its members. Shared by the policy's
// judgement (acceptance_policy.cpp) and what it learns from commits (acceptance_feed.cpp).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "messages/nostr/event.hpp"
#include "messages/nostr/nip34.hpp"

namespace graspd::policy {

// How far up a reply chain an event may be from its root and still make its
// author a thread participant; bounds the lookups per committed event.
inline constexpr int max_thread_depth = 8;
// Ids (or id values of one tag) asked for in one filter.
inline constexpr std::size_t max_ids_per_filter = 100;

/// A parsed address and the text it came from (the text is what wait keys use).
struct Address {
  nostr::nip34::Address parsed;
  std::string text;
};

std::optional<Address> parse_address(std::string_view text);

struct References {
  std::vector<nostr::EventId> ids;
  std::vector<Address> addresses;
};

/// Backward references of §3.5: e/E ids, a/A addresses, q either.
References references_of(const nostr::Event& ev);

/// The author of an announcement and the keys it lists as maintainers.
std::vector<nostr::Pubkey> members_of(const nostr::Event& announcement);

}  // namespace graspd::policy
