#include "store/policy/repository_rule.hpp"

namespace graspd::policy {

bool RepositoryRule::covers(const nostr::Pubkey& repo_owner,
                            std::string_view repo_identifier) const {
  if (owner && *owner != repo_owner) return false;
  return !identifier || *identifier == repo_identifier;
}

bool is_valid_identifier(std::string_view identifier) {
  if (identifier.empty() || identifier == "." || identifier == "..") return false;
  return identifier.find_first_of(std::string_view("/\\\0", 3)) == std::string_view::npos;
}

}  // namespace graspd::policy
