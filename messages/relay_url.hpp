// URL parsing for relay and clone URLs taken from untrusted events, and the
// canonical relay key (docs/spec/protocol.md §4.6): one relay = one key = one connection.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace graspd {

/// `text` with ASCII letters lowercased (hosts and schemes are case-insensitive).
std::string ascii_lowercase(std::string_view text);

/// The parts of an absolute URL that graspd reasons about. `host` is
/// lowercased (IPv6 literals keep their brackets); `port` is the explicit port
/// or the scheme's default; `path_and_query` starts with '/' or is empty.
struct ParsedUrl {
  std::string scheme;
  std::string host;
  std::uint16_t port = 0;
  bool explicit_port = false;
  bool has_user_info = false;
  std::string path_and_query;
};

/// Parses `scheme://[user@]host[:port][/path][?query]`; nullopt when malformed
/// (no scheme, empty host, bad port, spaces or control characters).
std::optional<ParsedUrl> parse_url(std::string_view url);

/// Default port of http/ws (80) and https/wss (443); 0 for other schemes.
std::uint16_t default_port(std::string_view scheme);

/// A `host[:port]`. `host` keeps the brackets of an IPv6 literal.
struct HostPort {
  std::string host;
  std::optional<std::uint16_t> port;
  friend bool operator==(const HostPort&, const HostPort&) = default;
};

/// The one `host[:port]` parser, used for URL authorities, NGIT_DOMAIN and NGIT_BIND_ADDRESS:
/// `host`, `host:port`, `[v6]` or `[v6]:port`. The host is kept as written (case and brackets) and
/// must be non-empty, without '/', '@', '?', '#', a backslash, blanks or control characters; the
/// port is 0 to 65535 in at most five digits. Callers decide what a port 0 means.
std::optional<HostPort> split_host_port(std::string_view text);

/// A `host[:port]` service identity such as NGIT_DOMAIN: split_host_port with the host lowercased
/// and port 0 refused. Without a port it stands for the scheme's default port, so "x.com" equals
/// https://x.com:443/.
std::optional<HostPort> parse_host_port(std::string_view text);

/// True when `url` points at `service` by parsed host and effective port,
/// never by substring: "x.com.evil.net" and "evil.net/x.com" do not match.
bool url_names_host(const ParsedUrl& url, const HostPort& service);

/// Canonical relay key: lowercase scheme and host, default port elided, a
/// lone trailing "/" removed, other paths and queries kept. nullopt for
/// anything but ws:// and wss:// URLs.
std::optional<std::string> canonical_relay_url(std::string_view url);

/// A relay URL in canonical form (canonical_relay_url). Only parse() makes one, so a value of
/// this type is a relay sync can dial: operator-configured relay URLs are held as this.
class CanonicalRelayUrl {
 public:
  /// nullopt for whatever canonical_relay_url refuses.
  static std::optional<CanonicalRelayUrl> parse(std::string_view url);
  const std::string& str() const { return text_; }
  friend bool operator==(const CanonicalRelayUrl&, const CanonicalRelayUrl&) = default;

 private:
  explicit CanonicalRelayUrl(std::string text) : text_(std::move(text)) {}
  std::string text_;
};

/// Whether a host from an untrusted URL names one server the same way to every resolver graspd
/// hands it to (its own, and libcurl under git): an ASCII DNS name of letters, digits, '-' and
/// '_' in dot-separated labels of 1 to 63 (at most 253 in all, no trailing dot), a dotted-quad
/// IPv4 literal in canonical form, or a bracketed IPv6 literal without zone. Refused: non-ASCII
/// (IDN) names, which getaddrinfo would look up as raw UTF-8 while libcurl converts them to
/// punycode first (the checked address would not be the one connected to), percent escapes, and
/// numeric forms like "127.1", "0x7f.0.0.1" or "2130706433" that resolvers read as IPv4 in
/// different ways. Punycode names ("xn--…") are ASCII and reach both resolvers unchanged.
bool is_plain_host(std::string_view host);

/// Longest relay URL taken from untrusted input (announcements, NIP-65).
inline constexpr std::size_t max_untrusted_url_length = 512;

/// canonical_relay_url for URLs from untrusted events, which must also be
/// bounded in length, carry no user-info (docs/spec/protocol.md §4.8), name a plain host
/// (is_plain_host) and have a plain path (letters, digits, `/-._~`: no query, fragment or
/// escapes). Whether
/// the host resolves to a public address is checked at connect time.
std::optional<std::string> untrusted_relay_key(std::string_view url);

/// Percent-decodes `text` once (URL path segments); nullopt on a malformed escape.
std::optional<std::string> percent_decode(std::string_view text);

}  // namespace graspd
