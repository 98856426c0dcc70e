// One entry of the repository curation lists (NGIT_REPOSITORY_WHITELIST,
// NGIT_REPOSITORY_BLACKLIST) and the identifier rule of docs/spec/protocol.md §3.2. The
// configuration parses the lists into these; the policy only matches them.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "messages/nostr/event.hpp"

namespace graspd::policy {

/// `npub` (every repository of that owner), `npub/identifier` (one repository) or `identifier`
/// (that identifier under any owner).
struct RepositoryRule {
  std::optional<nostr::Pubkey> owner;
  std::optional<std::string> identifier;
  bool covers(const nostr::Pubkey& repo_owner, std::string_view repo_identifier) const;
  friend bool operator==(const RepositoryRule&, const RepositoryRule&) = default;
};

/// Identifier rule of §3.2: not empty, not "." or "..", no '/', '\' or NUL.
bool is_valid_identifier(std::string_view identifier);

}  // namespace graspd::policy
