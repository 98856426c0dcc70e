// Which clone URLs name a place on a GRASP service (docs/policy.md "Archives", "Pull request
// submissions"): the one URL a service hosts a repository at (GRASP-01/05) and the URL of a
// GRASP-06 pull-request submission area. Hosts are compared parsed (host[:port], case-insensitive,
// default ports elided), never as substrings; paths exactly.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "messages/nostr/event.hpp"
#include "messages/relay_url.hpp"

namespace graspd::policy {

/// True when `clone_url` is the one place `service` hosts repository `identifier` of `owner`:
/// an http(s) URL whose host[:port] is the service's (so "git.example.com.evil.net" and
/// "evil.net/git.example.com" are not it) and whose path is exactly `/<owner's npub>/<identifier,
/// percent-encoded or not>.git`.
bool grasp_clone_url_on(std::string_view clone_url, const HostPort& service,
                        const nostr::Pubkey& owner, std::string_view identifier);

/// True when `clone_url` is `service`'s GRASP-06 submission area of `submitter` for `identifier`:
/// http(s), the service's host[:port], path exactly `/prs/<submitter's npub>/<identifier>.git`
/// (one trailing `/` allowed), no user info, query or fragment.
bool pr_submission_url_on(std::string_view clone_url, const HostPort& service,
                          const nostr::Pubkey& submitter, std::string_view identifier);

/// Whether a PR event `a`-tags a repository announcement (`30617:<64 hex>:<d>`) with `identifier`.
bool pr_tags_identifier(const nostr::Event& pull_request, std::string_view identifier);

/// The identifier of the submission area on `service` a PR event (kind 1618/1619) names: the first
/// `clone` value that is pr_submission_url_on for its signer and an identifier it `a`-tags.
std::optional<std::string> pr_submission_identifier(const nostr::Event& pull_request,
                                                    const HostPort& service);

}  // namespace graspd::policy
