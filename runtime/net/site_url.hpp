// The URLs a person copies from graspd's own pages: where Nostr clients connect, what `git clone`
// takes, where a repository's replication view is. One scheme rule for every page: this machine is
// reached without TLS, a public name through a TLS-terminating proxy (docs/operations.md).
#pragma once

#include <string>
#include <string_view>

#include "messages/nostr/event.hpp"

namespace graspd::runtime {

enum class SiteProtocol { http, websocket };

/// True when `domain` (NGIT_DOMAIN: `host[:port]`) names this machine: `localhost` or a name under
/// `.localhost`, an IPv4 address in 127.0.0.0/8 or the IPv6 loopback `[::1]`, with any port.
bool is_loopback_domain(std::string_view domain);

/// `scheme://domain` as a person types it: `http://` or `ws://` for a loopback domain
/// (is_loopback_domain: graspd answers there itself, without TLS), `https://` or `wss://`
/// otherwise. The one place that decides the scheme of the URLs graspd's pages show.
std::string site_url(std::string_view domain, SiteProtocol protocol);

/// `/<npub>/<identifier, percent-encoded>.git`: a hosted repository's path (its page and the git
/// URL).
std::string repository_path(const nostr::Pubkey& owner, std::string_view identifier);

/// The URL `git clone` takes for a repository hosted at `domain`: site_url(domain, http) followed
/// by repository_path.
std::string repository_clone_url(std::string_view domain, const nostr::Pubkey& owner,
                                 std::string_view identifier);

/// `/api/repositories/<npub>/<identifier, percent-encoded>/replication`: the JSON of a
/// repository's replication view.
std::string replication_api_path(const nostr::Pubkey& owner, std::string_view identifier);

}  // namespace graspd::runtime
