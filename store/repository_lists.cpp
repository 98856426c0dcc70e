// The curation lists of the policy's configuration (NGIT_REPOSITORY_WHITELIST,
// NGIT_REPOSITORY_BLACKLIST, NGIT_EVENT_BLACKLIST) and the identifier rule.
#include <algorithm>
#include <cctype>

#include "messages/nostr/nip19.hpp"
#include "store/acceptance_policy.hpp"

namespace graspd::policy {

using nostr::Pubkey;

bool RepositoryRule::covers(const Pubkey& repo_owner, std::string_view repo_identifier) const {
  if (owner && *owner != repo_owner) return false;
  return !identifier || *identifier == repo_identifier;
}

bool is_valid_identifier(std::string_view identifier) {
  if (identifier.empty() || identifier == "." || identifier == "..") return false;
  return identifier.find_first_of(std::string_view("/\\\0", 3)) == std::string_view::npos;
}

namespace {
template <class OnEntry>
std::string for_each_list_entry(std::string_view text, OnEntry on_entry) {
  while (!text.empty()) {
    auto comma = text.find(',');
    auto entry = text.substr(0, comma);
    while (!entry.empty() && std::isspace(static_cast<unsigned char>(entry.front())))
      entry.remove_prefix(1);
    while (!entry.empty() && std::isspace(static_cast<unsigned char>(entry.back())))
      entry.remove_suffix(1);
    if (!entry.empty())
      if (auto error = on_entry(entry); !error.empty()) return error;
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  return {};
}
}  // namespace

ListParse parse_repository_list(std::string_view text) {
  ListParse out;
  out.error = for_each_list_entry(text, [&](std::string_view entry) -> std::string {
    RepositoryRule rule;
    auto slash = entry.find('/');
    auto head = entry.substr(0, slash);
    if (head.rfind("npub1", 0) == 0) {
      rule.owner = nostr::parse_pubkey(head);
      if (!rule.owner) return "\"" + std::string(entry) + "\": not a valid npub";
      if (slash != std::string_view::npos) rule.identifier = std::string(entry.substr(slash + 1));
    } else {
      rule.identifier = std::string(entry);
    }
    if (rule.identifier && !is_valid_identifier(*rule.identifier))
      return "\"" + std::string(entry) + "\": expected npub, npub/identifier or identifier";
    out.rules.push_back(std::move(rule));
    return {};
  });
  return out;
}

ListParse parse_pubkey_list(std::string_view text) {
  ListParse out;
  out.error = for_each_list_entry(text, [&](std::string_view entry) -> std::string {
    auto pubkey = nostr::parse_pubkey(entry);
    if (!pubkey) return "\"" + std::string(entry) + "\": expected an npub or 64 hex digits";
    out.pubkeys.insert(*pubkey);
    return {};
  });
  return out;
}

}  // namespace graspd::policy
