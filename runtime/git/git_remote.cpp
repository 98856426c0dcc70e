#include <utility>  // before Asio, see docs/toolchain.md §1

#include "runtime/git/git_remote.hpp"

#include <algorithm>
#include <cctype>

#include "runtime/net/public_address.hpp"

namespace graspd::runtime::git {

namespace net = boost::asio;

std::string trusted_host_key(const ParsedUrl& url) {
  std::string host = url.host;
  std::transform(host.begin(), host.end(), host.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return host + ":" + std::to_string(url.port);
}

bool any_address_allowed(const ParsedUrl& url, bool allow_private_addresses,
                         const std::set<std::string>& trusted_hosts) {
  return allow_private_addresses || trusted_hosts.contains(trusted_host_key(url));
}

std::string_view unresolved_name(RemoteUnresolved reason) {
  switch (reason) {
    case RemoteUnresolved::cannot_resolve:
      return "cannot resolve";
    case RemoteUnresolved::no_public_address:
      return "no public address";
  }
  return "cannot resolve";
}

void resolve_remote(net::ip::tcp::resolver& resolver, const ParsedUrl& url, bool any_address,
                    std::function<void(Result<PinnedRemote, RemoteUnresolved>)> done) {
  std::string host = url.host;
  if (host.size() > 2 && host.front() == '[') host = host.substr(1, host.size() - 2);
  resolver.async_resolve(
      host, std::to_string(url.port),
      [done = std::move(done), host, port = url.port, any_address](
          const boost::system::error_code& error, net::ip::tcp::resolver::results_type results) {
        using Pinned = Result<PinnedRemote, RemoteUnresolved>;
        if (error) return done(Pinned::failure(RemoteUnresolved::cannot_resolve));
        for (const auto& entry : results) {
          auto text = entry.endpoint().address().to_string();
          if (!any_address && !is_public_address(text)) continue;
          auto address = entry.endpoint().address().is_v6() ? "[" + text + "]" : text;
          return done(PinnedRemote{host, port, std::move(address)});
        }
        done(Pinned::failure(RemoteUnresolved::no_public_address));
      });
}

std::vector<std::string> remote_options(const PinnedRemote& remote) {
  return {"-c",
          "protocol.allow=never",
          "-c",
          "protocol.https.allow=always",
          "-c",
          "protocol.http.allow=always",
          "-c",
          "http.followRedirects=false",
          "-c",
          "http.curloptResolve=" + remote.host + ":" + std::to_string(remote.port) + ":" +
              remote.address,
          "-c",
          "credential.helper=",
          "-c",
          "http.lowSpeedLimit=1024",
          "-c",
          "http.lowSpeedTime=60"};
}

}  // namespace graspd::runtime::git
