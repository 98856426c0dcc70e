#include <utility>  // before Asio, see docs/toolchain.md §1

#include "runtime/net/forwarded_address.hpp"

#include <algorithm>
#include <boost/asio/ip/address.hpp>
#include <cctype>
#include <charconv>

#include "messages/relay_url.hpp"

namespace graspd::runtime {

namespace {

using boost::asio::ip::address;
using boost::asio::ip::address_v6;
using Bytes16 = std::array<std::uint8_t, 16>;

std::string_view trim_blanks(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return text;
}

/// Asio's parser, without exceptions; nullopt for anything that is not a plain literal.
std::optional<address> parse_literal(std::string_view text) {
  if (text.empty() || text.front() == '[') return std::nullopt;
  boost::system::error_code error;
  auto parsed = boost::asio::ip::make_address(std::string(text), error);
  if (error) return std::nullopt;
  return parsed;
}

/// IPv4-mapped IPv6 becomes the IPv4 address it carries.
address unmapped(const address& parsed) {
  if (parsed.is_v6() && parsed.to_v6().is_v4_mapped())
    return boost::asio::ip::make_address_v4(boost::asio::ip::v4_mapped, parsed.to_v6());
  return parsed;
}

/// The 128-bit form: IPv4 as ::ffff:a.b.c.d.
Bytes16 mapped_bytes(const address& parsed) {
  if (parsed.is_v4()) {
    auto v6 = boost::asio::ip::make_address_v6(boost::asio::ip::v4_mapped, parsed.to_v4());
    return v6.to_bytes();
  }
  return parsed.to_v6().to_bytes();
}

Bytes16 masked(Bytes16 bytes, unsigned prefix_length) {
  for (unsigned bit = prefix_length; bit < 128; ++bit)
    bytes[bit / 8] &= static_cast<std::uint8_t>(~(0x80u >> (bit % 8)));
  return bytes;
}

bool network_contains(const IpNetwork& network, const Bytes16& bytes) {
  return masked(bytes, network.prefix_length) == network.bytes;
}

bool contains_any(const std::vector<IpNetwork>& networks, const address& parsed) {
  auto bytes = mapped_bytes(parsed);
  return std::any_of(networks.begin(), networks.end(),
                     [&](const IpNetwork& network) { return network_contains(network, bytes); });
}

bool all_digits(std::string_view text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
    return std::isdigit(static_cast<unsigned char>(c)) != 0;
  });
}

/// One hop as a proxy writes it: `a.b.c.d`, `a.b.c.d:port`, a bare IPv6 literal, or
/// `[v6]` / `[v6]:port`. nullopt for `unknown`, obfuscated names (`_hidden`) and garbage.
std::optional<address> parse_hop(std::string_view text) {
  text = trim_blanks(text);
  if (text.size() >= 2 && text.front() == '"' && text.back() == '"')
    text = text.substr(1, text.size() - 2);
  if (!text.empty() && text.front() == '[') {
    auto close = text.find(']');
    if (close == std::string_view::npos) return std::nullopt;
    auto rest = text.substr(close + 1);
    if (!rest.empty() && !(rest.front() == ':' && all_digits(rest.substr(1)))) return std::nullopt;
    auto inner = parse_literal(text.substr(1, close - 1));
    if (!inner || !inner->is_v6()) return std::nullopt;
    return inner;
  }
  auto colon = text.find(':');
  if (colon != std::string_view::npos && text.find(':', colon + 1) == std::string_view::npos) {
    // One colon: IPv4 with a port.
    if (!all_digits(text.substr(colon + 1))) return std::nullopt;
    auto v4 = parse_literal(text.substr(0, colon));
    if (!v4 || !v4->is_v4()) return std::nullopt;
    return v4;
  }
  return parse_literal(text);
}

/// RFC 7239: the `for=` value of one element (`for=192.0.2.1;proto=https`), empty when none.
std::string_view forwarded_for(std::string_view element) {
  while (!element.empty()) {
    auto semicolon = element.find(';');
    auto pair = trim_blanks(element.substr(0, semicolon));
    auto equals = pair.find('=');
    if (equals != std::string_view::npos &&
        ascii_lowercase(trim_blanks(pair.substr(0, equals))) == "for")
      return trim_blanks(pair.substr(equals + 1));
    if (semicolon == std::string_view::npos) break;
    element.remove_prefix(semicolon + 1);
  }
  return {};
}

/// The hops of every header instance, in order, as the header names them (not yet parsed).
/// A quoted string may hold a comma only in theory (an address never does): split plainly.
std::vector<std::string_view> hops_of(ForwardingHeader header,
                                      const std::vector<std::string_view>& values) {
  std::vector<std::string_view> hops;
  for (auto value : values) {
    while (true) {
      auto comma = value.find(',');
      auto element = trim_blanks(value.substr(0, comma));
      hops.push_back(header == ForwardingHeader::forwarded ? forwarded_for(element) : element);
      if (comma == std::string_view::npos) break;
      value.remove_prefix(comma + 1);
    }
  }
  return hops;
}

}  // namespace

std::optional<IpNetwork> parse_ip_network(std::string_view text) {
  auto slash = text.find('/');
  auto parsed = parse_literal(text.substr(0, slash));
  if (!parsed || (parsed->is_v6() && parsed->to_v6().scope_id() != 0)) return std::nullopt;
  unsigned width = parsed->is_v4() ? 32 : 128;
  unsigned prefix = width;
  if (slash != std::string_view::npos) {
    auto digits = text.substr(slash + 1);
    auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), prefix);
    if (!all_digits(digits) || error != std::errc{} || end != digits.data() + digits.size() ||
        prefix > width)
      return std::nullopt;
  }
  IpNetwork network;
  network.prefix_length = prefix + (128 - width);
  network.bytes = masked(mapped_bytes(*parsed), network.prefix_length);
  network.text = std::string(text);
  return network;
}

std::optional<std::vector<IpNetwork>> parse_ip_networks(std::string_view text,
                                                        std::string* bad_item) {
  std::vector<IpNetwork> networks;
  auto separator = [](char c) { return c == ',' || c == ' ' || c == '\t' || c == '\n'; };
  std::size_t at = 0;
  while (at < text.size()) {
    if (separator(text[at])) {
      ++at;
      continue;
    }
    auto end = at;
    while (end < text.size() && !separator(text[end])) ++end;
    auto item = text.substr(at, end - at);
    auto network = parse_ip_network(item);
    if (!network) {
      if (bad_item) *bad_item = std::string(item);
      return std::nullopt;
    }
    networks.push_back(std::move(*network));
    at = end;
  }
  return networks;
}

std::optional<ForwardingHeader> parse_forwarding_header(std::string_view text) {
  auto lower = ascii_lowercase(text);
  for (auto header : {ForwardingHeader::x_forwarded_for, ForwardingHeader::forwarded,
                      ForwardingHeader::x_real_ip}) {
    if (lower == to_string(header)) return header;
  }
  return std::nullopt;
}

std::string_view to_string(ForwardingHeader header) {
  switch (header) {
    case ForwardingHeader::forwarded:
      return "forwarded";
    case ForwardingHeader::x_real_ip:
      return "x-real-ip";
    case ForwardingHeader::x_forwarded_for:
      break;
  }
  return "x-forwarded-for";
}

const char* to_string(ForwardedOutcome outcome) {
  switch (outcome) {
    case ForwardedOutcome::used:
      return "used";
    case ForwardedOutcome::untrusted_peer:
      return "untrusted_peer";
    case ForwardedOutcome::malformed:
      return "malformed";
    case ForwardedOutcome::absent:
      break;
  }
  return "absent";
}

bool TrustedProxies::trusts(std::string_view text) const {
  if (networks.empty()) return false;
  auto parsed = parse_literal(text);
  return parsed && contains_any(networks, *parsed);
}

std::optional<std::string> normalise_address(std::string_view text) {
  auto parsed = parse_literal(text);
  if (!parsed) return std::nullopt;
  return unmapped(*parsed).to_string();
}

ResolvedClient resolve_client_address(const TrustedProxies& proxies, std::string_view peer,
                                      const std::vector<std::string_view>& header_values) {
  ResolvedClient resolved{normalise_address(peer).value_or(std::string(peer)),
                          ForwardedOutcome::absent};
  if (header_values.empty()) return resolved;
  if (!proxies.trusts(peer)) {
    resolved.outcome = ForwardedOutcome::untrusted_peer;
    return resolved;
  }
  auto hops = hops_of(proxies.header, header_values);
  resolved.outcome = ForwardedOutcome::used;
  for (auto hop = hops.rbegin(); hop != hops.rend(); ++hop) {
    auto parsed = parse_hop(*hop);
    if (!parsed) {
      resolved.outcome = ForwardedOutcome::malformed;
      return resolved;  // the last trusted hop stands
    }
    resolved.address = unmapped(*parsed).to_string();
    if (!contains_any(proxies.networks, *parsed)) return resolved;
  }
  return resolved;  // every hop trusted: the leftmost
}

}  // namespace graspd::runtime
