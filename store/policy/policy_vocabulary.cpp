// The policy's vocabulary: rule and kind-group names (metrics labels, logs) and the retry cache's
// wait keys. Free functions of acceptance_policy.hpp, apart from the rules that use them.
#include <array>

#include "messages/nostr/nip34.hpp"
#include "store/policy/acceptance_policy.hpp"

namespace graspd::policy {

using nostr::EventId;
using nostr::Pubkey;
namespace nip34 = nostr::nip34;

const char* to_string(Rule rule) {
  static constexpr std::array<const char*, rule_count> names = {"event_blacklisted",
                                                                "announcement_lists_service",
                                                                "announcement_maintainer",
                                                                "announcement_not_listed",
                                                                "announcement_bad_identifier",
                                                                "announcement_archived",
                                                                "announcement_read_only",
                                                                "repository_blacklisted",
                                                                "repository_not_whitelisted",
                                                                "state_maintainer",
                                                                "state_unknown_repository",
                                                                "state_not_maintainer",
                                                                "related_backward_address",
                                                                "related_backward_id",
                                                                "related_forward",
                                                                "related_orphan",
                                                                "related_pr_submission",
                                                                "deletion_own_target",
                                                                "deletion_no_own_target",
                                                                "identity_eligible",
                                                                "identity_not_eligible",
                                                                "vanish_request",
                                                                "author_vanished",
                                                                "ephemeral",
                                                                "credential_kind"};
  return names[static_cast<std::size_t>(rule)];
}

KindGroup kind_group(std::uint32_t kind) {
  if (kind == nip34::kind::repo_announcement) return KindGroup::announcement;
  if (kind == nip34::kind::repo_state) return KindGroup::state;
  if (nip34::is_root_kind(kind)) return KindGroup::root;
  if (kind == nip34::kind::deletion) return KindGroup::deletion;
  if (nip34::is_identity_kind(kind)) return KindGroup::identity;
  if (nostr::is_ephemeral(kind)) return KindGroup::ephemeral;
  return KindGroup::other;
}

const char* to_string(KindGroup group) {
  static constexpr std::array<const char*, kind_group_count> names = {
      "announcement", "state", "root", "deletion", "identity", "ephemeral", "other"};
  return names[static_cast<std::size_t>(group)];
}

namespace wait_key {
std::string event(const EventId& id) {
  return "e:" + nostr::to_hex(id);
}
std::string address(std::string_view address) {
  return "a:" + std::string(address);
}
std::string identifier(std::string_view d) {
  return "d:" + std::string(d);
}
std::string author(const Pubkey& pubkey) {
  return "p:" + nostr::to_hex(pubkey);
}
// A parked event that a later event may reference (forward rule of §3.5).
std::string referenced(std::string_view id_or_address) {
  return "r:" + std::string(id_or_address);
}
}  // namespace wait_key

}  // namespace graspd::policy
