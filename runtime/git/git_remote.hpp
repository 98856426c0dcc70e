// One rule for every git command graspd points at a clone URL from an event
// (docs/git-hosting-design.md, "Fetcher" and "Ref advertisement probes"). The URL has passed the
// plain-URL rule (judge_clone_url, runtime/git/engine/git_fetch_schedule.hpp); here its host is
// resolved asynchronously, the first address it may be connected to is chosen (a public one, unless
// private addresses are allowed or the host is a trusted cluster peer) and pinned, and git runs
// with the options that keep it to that address over plain http(s): no other protocol, no
// redirects, no credentials, a low-speed abort. Used by the fetcher (git_fetcher.*) and the ref
// probe (git_ref_probe.*). Include only in runtime/git_* (Asio).
#pragma once
#include <utility>  // before Asio, see docs/toolchain.md §1

#include <boost/asio/ip/tcp.hpp>
#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "messages/relay_url.hpp"
#include "messages/result.hpp"

namespace graspd::runtime::git {

/// The "host:port" key (host lowercased) of a URL's authority, as sets of trusted hosts hold it.
std::string trusted_host_key(const ParsedUrl& url);

/// Whether `url` may be connected to at any address its host resolves to, private ones too:
/// `allow_private_addresses` (tests; NGIT_SYNC_ALLOW_PRIVATE_ADDRESSES), or its trusted_host_key is
/// in `trusted_hosts` (the cluster peers of NGIT_SYNC_PEERS: operator input). Else only public
/// addresses.
bool any_address_allowed(const ParsedUrl& url, bool allow_private_addresses,
                         const std::set<std::string>& trusted_hosts);

/// A clone URL's host and the checked address git connects to for it.
struct PinnedRemote {
  std::string host;  ///< the URL's host, IPv6 brackets removed
  std::uint16_t port = 0;
  std::string address;  ///< the checked address, IPv6 in brackets
};

/// Why no address was pinned.
enum class RemoteUnresolved {
  cannot_resolve,     ///< the host did not resolve (or the resolution was cancelled)
  no_public_address,  ///< it resolved to no address it may be connected to
};

/// A log word for `reason`: "cannot resolve", "no public address".
std::string_view unresolved_name(RemoteUnresolved reason);

/// Resolves `url`'s host with `resolver` and pins its first address (any_address_allowed: any
/// address) or, without it, its first public one (is_public_address). `done`
/// runs on the resolver's executor.
void resolve_remote(boost::asio::ip::tcp::resolver& resolver, const ParsedUrl& url,
                    bool any_address,
                    std::function<void(Result<PinnedRemote, RemoteUnresolved>)> done);

/// The `-c` options of a git command that talks to `remote`: http and https only
/// (`protocol.allow=never` for the rest), no redirects, the checked address pinned
/// (`http.curloptResolve`: no second resolution between check and connect), no credential helper,
/// and an abort below 1 KiB/s for 60 s.
std::vector<std::string> remote_options(const PinnedRemote& remote);

}  // namespace graspd::runtime::git
