// The unit a per-client share is kept for: one client address. An IPv4 address is itself; an IPv6
// address counts by its /64, since one host or subscriber line is given a whole /64 and could
// otherwise take every per-address share by rotating addresses within it. Used by every per-address
// bound (connections, git processes, NIP-77 budgets, purgatory shares), so they all agree.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace graspd {

/// `xxxx:xxxx:xxxx:xxxx::/64` (lowercase, zero-padded) for an IPv6 address (a zone suffix
/// ignored); nullopt for anything else, IPv6 with an embedded IPv4 included (kept whole).
std::optional<std::string> ipv6_prefix64(std::string_view address);

/// The share key of a peer address: its /64 for IPv6, the address itself otherwise.
std::string client_address_group(std::string_view address);

/// A client's source as the actors name it, `ip:<address>`, with the address grouped the same way;
/// any other source as it is.
std::string client_source_group(std::string_view source);

}  // namespace graspd
