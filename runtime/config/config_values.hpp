// Parsers of single option values, each into the type the component reading the option uses. The
// option table (config_table.cpp) calls them, so every configured value is parsed once, when the
// configuration is loaded; boot only copies the results.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "messages/relay_url.hpp"
#include "store/policy/repository_rule.hpp"

namespace graspd::runtime {

/// NGIT_BIND_ADDRESS: where the HTTP and WebSocket listener binds.
struct BindAddress {
  std::string text;        ///< as configured, e.g. "[::1]:7334"
  std::string host;        ///< for the resolver: an IPv6 literal without its brackets
  std::uint16_t port = 0;  ///< 0 = any free port
};

/// NGIT_DOMAIN: the public name of this service.
struct Domain {
  std::string text;  ///< as configured (NIP-11, landing page, logs); empty = not set
  HostPort address;  ///< host lowercased: what an announcement's clone and relays URLs must name
};

/// NGIT_ACCEPTANCE_POLICY.
enum class AcceptanceMode {
  grasp01,  ///< the GRASP-01 acceptance policy
  open,     ///< every valid event is stored: a plain Nostr relay, for benchmarks and relay tests
};

/// `text` without leading and trailing blanks.
std::string_view trim(std::string_view text);

/// Splits a comma separated list, trimming blanks and dropping empty items.
std::vector<std::string> split_list(std::string_view text);

/// Decimal digits only (no sign, no blanks).
std::optional<std::uint64_t> parse_uint(std::string_view text);

/// true/false, 1/0, yes/no, on/off in any case.
std::optional<bool> parse_bool(std::string_view text);

/// `host:port` through split_host_port: the port is required (0 = any free port); the host is a
/// name of letters, digits, '-', '.' and '_' (at most 253) or a bracketed IPv4 or IPv6 literal.
std::optional<BindAddress> parse_bind_address(std::string_view text);

/// `host[:port]` through parse_host_port (so port 0 is refused), the host as for
/// parse_bind_address. An empty text is not a domain.
std::optional<Domain> parse_domain(std::string_view text);

/// The domain a listener stands for when NGIT_DOMAIN is empty: the bind address, with `port` (the
/// bound one) when it differs from the configured port.
Domain domain_of(const BindAddress& bind, std::uint16_t port);

/// "host:port", an IPv6 host in brackets.
std::string endpoint_text(std::string_view host, std::uint16_t port);

/// One curation list entry: `npub`, `npub/identifier` or `identifier` (is_valid_identifier).
std::optional<policy::RepositoryRule> parse_repository_rule(std::string_view entry);

/// "grasp01" or "open".
std::optional<AcceptanceMode> parse_acceptance_mode(std::string_view text);

}  // namespace graspd::runtime
