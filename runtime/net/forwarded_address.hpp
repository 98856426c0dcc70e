// Trusted reverse proxies (NGIT_TRUSTED_PROXY_CIDRS, NGIT_TRUSTED_PROXY_HEADER): which client a
// request comes from when it reached graspd through a proxy. Pure: the HTTP listener asks
// resolve_client_address() per request and feeds the answer to every per-address limit and log.
// docs/operations.md "Behind a reverse proxy" has the rules and the operator's side.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace graspd::runtime {

/// An IPv4 or IPv6 network. IPv4 is kept as its IPv4-mapped IPv6 form (::ffff:a.b.c.d, prefix +
/// 96), so a peer seen on a dual-stack socket matches the IPv4 networks the operator wrote.
struct IpNetwork {
  std::array<std::uint8_t, 16> bytes{};
  unsigned prefix_length = 0;  ///< of the 128-bit form
  std::string text;            ///< as the operator wrote it, for messages

  bool operator==(const IpNetwork& other) const {
    return bytes == other.bytes && prefix_length == other.prefix_length;
  }
};

/// "192.0.2.0/24", "2001:db8::/32", or a bare address (one host: /32 or /128). Host bits past the
/// prefix are ignored. nullopt for anything else (a name, a bad prefix, brackets).
std::optional<IpNetwork> parse_ip_network(std::string_view text);

/// Items separated by commas and/or blanks, each a network (parse_ip_network); nullopt names the
/// first bad item in `bad_item`.
std::optional<std::vector<IpNetwork>> parse_ip_networks(std::string_view text,
                                                        std::string* bad_item = nullptr);

/// Which request header carries the client chain (NGIT_TRUSTED_PROXY_HEADER).
enum class ForwardingHeader { x_forwarded_for, forwarded, x_real_ip };

std::optional<ForwardingHeader> parse_forwarding_header(std::string_view text);
/// The option value ("x-forwarded-for", "forwarded", "x-real-ip"), also the header's name.
std::string_view to_string(ForwardingHeader header);

/// What resolving one request did, counted in graspd_forwarded_total{outcome}.
enum class ForwardedOutcome {
  absent,          ///< no forwarding header: the TCP peer is the client (not counted)
  used,            ///< a trusted proxy named the client
  untrusted_peer,  ///< a forwarding header from a peer outside the trusted networks: ignored
  malformed,       ///< an unparsable element ended the walk: the last trusted hop is the client
};
const char* to_string(ForwardedOutcome outcome);

struct TrustedProxies {
  std::vector<IpNetwork> networks;  ///< empty = no proxy trusted: the peer is always the client
  ForwardingHeader header = ForwardingHeader::x_forwarded_for;

  /// Whether `address` (textual IPv4 or IPv6) lies in one of the networks.
  bool trusts(std::string_view address) const;
};

/// The textual address normalised: IPv4-mapped IPv6 becomes IPv4; nullopt when not an address.
std::optional<std::string> normalise_address(std::string_view address);

struct ResolvedClient {
  std::string address;  ///< normalised
  ForwardedOutcome outcome = ForwardedOutcome::absent;
};

/// The client of a request that arrived from `peer` (the TCP peer's address) carrying
/// `header_values` (every instance of the configured header, in order; empty = none). Only a
/// trusted peer's header is read: its elements are walked from the right, trusted ones skipped,
/// the first other address is the client; all trusted = the leftmost; an unparsable element
/// (`unknown`, an obfuscated `_name`, garbage) ends the walk and the last trusted hop stands.
ResolvedClient resolve_client_address(const TrustedProxies& proxies, std::string_view peer,
                                      const std::vector<std::string_view>& header_values);

}  // namespace graspd::runtime
