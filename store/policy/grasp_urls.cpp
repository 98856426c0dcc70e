#include "store/policy/grasp_urls.hpp"

#include "messages/nostr/nip19.hpp"
#include "messages/nostr/nip34.hpp"

namespace graspd::policy {

namespace {

/// The http(s) URL `clone_url` on `service`'s host[:port], without user info.
std::optional<ParsedUrl> url_on(std::string_view clone_url, const HostPort& service) {
  auto url = parse_url(clone_url);
  if (!url || url->has_user_info || (url->scheme != "http" && url->scheme != "https") ||
      !url_names_host(*url, service))
    return std::nullopt;
  return url;
}

/// `path` (no query or fragment) is exactly `<prefix>/<owner's npub>/<identifier>.git`, the name
/// percent-decoded once.
bool path_names(std::string_view path, std::string_view prefix, const nostr::Pubkey& owner,
                std::string_view identifier) {
  if (path.find_first_of("?#") != std::string_view::npos || path.rfind(prefix, 0) != 0)
    return false;
  path.remove_prefix(prefix.size());
  if (path.empty() || path.front() != '/') return false;
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

/// The identifier of a PR's `a` value when it is a repository announcement's address.
std::optional<std::string> announcement_identifier(std::string_view value) {
  auto address = nostr::nip34::parse_address(value);
  if (!address || address->kind != nostr::nip34::kind::repo_announcement) return std::nullopt;
  return std::move(address->identifier);
}

}  // namespace

bool grasp_clone_url_on(std::string_view clone_url, const HostPort& service,
                        const nostr::Pubkey& owner, std::string_view identifier) {
  auto url = url_on(clone_url, service);
  return url && path_names(url->path_and_query, "", owner, identifier);
}

bool pr_submission_url_on(std::string_view clone_url, const HostPort& service,
                          const nostr::Pubkey& submitter, std::string_view identifier) {
  auto url = url_on(clone_url, service);
  if (!url) return false;
  std::string_view path = url->path_and_query;
  if (path.size() > 1 && path.back() == '/' && path[path.size() - 2] != '/') path.remove_suffix(1);
  return path_names(path, "/prs", submitter, identifier);
}

bool pr_tags_identifier(const nostr::Event& pull_request, std::string_view identifier) {
  for (const auto& tag : pull_request.tags) {
    if (tag.size() < 2 || tag[0] != "a") continue;
    if (announcement_identifier(tag[1]) == identifier) return true;
  }
  return false;
}

std::optional<std::string> pr_submission_identifier(const nostr::Event& pull_request,
                                                    const HostPort& service) {
  for (const auto& tag : pull_request.tags) {
    if (tag.empty() || tag[0] != nostr::nip34::tag::clone) continue;
    for (std::size_t i = 1; i < tag.size(); ++i)
      for (const auto& other : pull_request.tags) {
        if (other.size() < 2 || other[0] != "a") continue;
        auto identifier = announcement_identifier(other[1]);
        if (identifier && pr_submission_url_on(tag[i], service, pull_request.pubkey, *identifier))
          return identifier;
      }
  }
  return std::nullopt;
}

}  // namespace graspd::policy
