#include <utility>  // before Asio (docs/toolchain.md §1)

#include "runtime/net/site_url.hpp"

#include <boost/asio/ip/address.hpp>

#include "messages/nostr/nip19.hpp"
#include "messages/relay_url.hpp"
#include "runtime/net/http_routes.hpp"

namespace graspd::runtime {

bool is_loopback_domain(std::string_view domain) {
  auto parts = parse_host_port(domain);
  if (!parts) return false;
  std::string_view host = parts->host;
  constexpr std::string_view local_names = ".localhost";  // RFC 6761: always this machine
  if (host == local_names.substr(1) ||
      (host.size() > local_names.size() &&
       host.substr(host.size() - local_names.size()) == local_names))
    return true;
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  boost::system::error_code error;
  auto address = boost::asio::ip::make_address(host, error);
  return !error && address.is_loopback();
}

std::string site_url(std::string_view domain, SiteProtocol protocol) {
  bool local = is_loopback_domain(domain);
  std::string_view scheme;
  if (protocol == SiteProtocol::http)
    scheme = local ? "http://" : "https://";
  else
    scheme = local ? "ws://" : "wss://";
  return std::string(scheme) + std::string(domain);
}

std::string repository_path(const nostr::Pubkey& owner, std::string_view identifier) {
  return "/" + nostr::encode_npub(owner) + "/" + percent_encode(identifier) + ".git";
}

std::string repository_clone_url(std::string_view domain, const nostr::Pubkey& owner,
                                 std::string_view identifier) {
  return site_url(domain, SiteProtocol::http) + repository_path(owner, identifier);
}

std::string replication_api_path(const nostr::Pubkey& owner, std::string_view identifier) {
  return "/api/repositories/" + nostr::encode_npub(owner) + "/" + percent_encode(identifier) +
         "/replication";
}

}  // namespace graspd::runtime
