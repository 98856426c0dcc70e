#include "messages/relay_url.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>

#include "messages/nostr/event.hpp"

namespace graspd {

std::string ascii_lowercase(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

namespace {

bool is_scheme_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '+' || c == '-' || c == '.';
}

bool has_forbidden_char(std::string_view text) {
  return std::any_of(text.begin(), text.end(),
                     [](unsigned char c) { return c <= 0x20 || c == 0x7f; });
}

/// 0 to 65535 in one to five digits.
std::optional<std::uint16_t> parse_port(std::string_view digits) {
  if (digits.empty() || digits.size() > 5) return std::nullopt;
  unsigned value = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (ec != std::errc{} || end != digits.data() + digits.size() || value > 65535)
    return std::nullopt;
  return static_cast<std::uint16_t>(value);
}

}  // namespace

std::uint16_t default_port(std::string_view scheme) {
  if (scheme == "http" || scheme == "ws") return 80;
  if (scheme == "https" || scheme == "wss") return 443;
  return 0;
}

std::optional<HostPort> split_host_port(std::string_view text) {
  if (has_forbidden_char(text)) return std::nullopt;
  HostPort out;
  std::string_view rest;
  if (!text.empty() && text.front() == '[') {
    auto close = text.find(']');
    if (close == std::string_view::npos || close < 2) return std::nullopt;
    out.host = std::string(text.substr(0, close + 1));
    rest = text.substr(close + 1);
  } else {
    auto colon = text.find(':');
    out.host = std::string(text.substr(0, colon));
    rest = colon == std::string_view::npos ? std::string_view{} : text.substr(colon);
  }
  if (out.host.empty()) return std::nullopt;
  if (!rest.empty()) {
    if (rest.front() != ':') return std::nullopt;
    auto port = parse_port(rest.substr(1));
    if (!port) return std::nullopt;
    out.port = *port;
  }
  for (char c : out.host)
    if (c == '/' || c == '@' || c == '?' || c == '#' || c == '\\') return std::nullopt;
  return out;
}

std::optional<ParsedUrl> parse_url(std::string_view url) {
  if (url.empty() || has_forbidden_char(url)) return std::nullopt;
  auto sep = url.find("://");
  if (sep == std::string_view::npos || sep == 0) return std::nullopt;
  auto scheme = url.substr(0, sep);
  if (!std::all_of(scheme.begin(), scheme.end(), is_scheme_char)) return std::nullopt;
  ParsedUrl out;
  out.scheme = ascii_lowercase(scheme);
  auto rest = url.substr(sep + 3);
  auto authority_end = rest.find_first_of("/?#");
  auto authority = rest.substr(0, authority_end);
  if (authority_end != std::string_view::npos) {
    auto tail = rest.substr(authority_end);
    tail = tail.substr(0, tail.find('#'));
    out.path_and_query = std::string(tail);
    if (!out.path_and_query.empty() && out.path_and_query.front() == '?')
      out.path_and_query.insert(out.path_and_query.begin(), '/');
  }
  if (auto at = authority.rfind('@'); at != std::string_view::npos) {
    out.has_user_info = true;
    authority = authority.substr(at + 1);
  }
  auto host_port = split_host_port(authority);
  if (!host_port || host_port->port == 0) return std::nullopt;
  out.host = ascii_lowercase(host_port->host);
  out.explicit_port = host_port->port.has_value();
  out.port = host_port->port.value_or(default_port(out.scheme));
  return out;
}

std::optional<HostPort> parse_host_port(std::string_view text) {
  auto out = split_host_port(text);
  if (!out || out->port == 0) return std::nullopt;
  out->host = ascii_lowercase(out->host);
  return out;
}

bool url_names_host(const ParsedUrl& url, const HostPort& service) {
  if (url.host != service.host) return false;
  if (service.port) return url.port == *service.port;
  return url.port == default_port(url.scheme);
}

std::optional<std::string> canonical_relay_url(std::string_view url) {
  auto parsed = parse_url(url);
  if (!parsed || (parsed->scheme != "ws" && parsed->scheme != "wss")) return std::nullopt;
  std::string out = parsed->scheme;
  out += "://";
  out += parsed->host;
  // Appended piecewise: `":" + std::to_string(...)` trips g++ 12's -Wrestrict at -O3.
  if (parsed->port != default_port(parsed->scheme)) {
    out += ':';
    out += std::to_string(parsed->port);
  }
  if (parsed->path_and_query != "/") out += parsed->path_and_query;
  return out;
}

namespace {

/// Relay paths are short names ("/", "/nostr", "/v1/relay"); a query or any
/// other character would let an announcement aim graspd's GET requests at
/// arbitrary endpoints of a web application.
bool is_plain_relay_path(std::string_view path) {
  return std::all_of(path.begin(), path.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '/' || c == '-' || c == '.' ||
           c == '_' || c == '~';
  });
}

bool is_label_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_';
}

/// A decimal 0 to 255 without leading zeros.
bool is_canonical_octet(std::string_view part) {
  if (part.empty() || part.size() > 3 || (part.size() > 1 && part.front() == '0')) return false;
  if (!std::all_of(part.begin(), part.end(),
                   [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }))
    return false;
  return std::stoi(std::string(part)) <= 255;
}

/// URL parsers (WHATWG, libcurl) read a host whose last label is a number (decimal, octal or
/// 0x-hex) as an IPv4 address; such a host must then be a canonical dotted quad.
bool is_numeric_label(std::string_view label) {
  bool hex = label.size() >= 2 && label[0] == '0' && (label[1] == 'x' || label[1] == 'X');
  if (hex) label.remove_prefix(2);
  return (hex || !label.empty()) && std::all_of(label.begin(), label.end(), [hex](char c) {
           auto u = static_cast<unsigned char>(c);
           return hex ? std::isxdigit(u) != 0 : std::isdigit(u) != 0;
         });
}

bool is_dotted_quad(std::string_view host) {
  for (int part = 0; part < 4; ++part) {
    auto dot = host.find('.');
    if ((part == 3) != (dot == std::string_view::npos)) return false;
    if (!is_canonical_octet(host.substr(0, dot))) return false;
    host.remove_prefix(part == 3 ? host.size() : dot + 1);
  }
  return true;
}

bool is_ipv6_literal(std::string_view host) {
  if (host.size() < 4 || host.front() != '[' || host.back() != ']') return false;
  host = host.substr(1, host.size() - 2);
  return host.find(':') != std::string_view::npos &&
         std::all_of(host.begin(), host.end(), [](char c) {
           return std::isxdigit(static_cast<unsigned char>(c)) || c == ':' || c == '.';
         });
}

}  // namespace

bool is_plain_host(std::string_view host) {
  if (is_ipv6_literal(host)) return true;
  if (host.empty() || host.size() > 253) return false;
  auto last_dot = host.rfind('.');
  auto last = last_dot == std::string_view::npos ? host : host.substr(last_dot + 1);
  if (is_numeric_label(last)) return is_dotted_quad(host);
  while (true) {
    auto dot = host.find('.');
    auto label = host.substr(0, dot);
    if (label.empty() || label.size() > 63 ||
        !std::all_of(label.begin(), label.end(), is_label_char))
      return false;
    if (dot == std::string_view::npos) return true;
    host.remove_prefix(dot + 1);
  }
}

std::optional<CanonicalRelayUrl> CanonicalRelayUrl::parse(std::string_view url) {
  auto canonical = canonical_relay_url(url);
  if (!canonical) return std::nullopt;
  return CanonicalRelayUrl(std::move(*canonical));
}

std::optional<std::string> untrusted_relay_key(std::string_view url) {
  if (url.size() > max_untrusted_url_length) return std::nullopt;
  auto parsed = parse_url(url);
  if (!parsed || parsed->has_user_info || !is_plain_host(parsed->host) ||
      !is_plain_relay_path(parsed->path_and_query))
    return std::nullopt;
  return canonical_relay_url(url);
}

std::optional<std::string> percent_decode(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      out += text[i];
      continue;
    }
    if (i + 2 >= text.size()) return std::nullopt;
    int hi = nostr::hex_digit_value(text[i + 1]);
    int lo = nostr::hex_digit_value(text[i + 2]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out += static_cast<char>(hi * 16 + lo);
    i += 2;
  }
  return out;
}

}  // namespace graspd
