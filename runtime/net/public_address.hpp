// Which addresses an untrusted URL (a relay or clone URL from an event) may make graspd connect
// to, and which hosts such a URL may name. Used by the outbound relay client and by git's remote
// commands (runtime/git/git_remote.*: fetches, ref probes) after they resolved a host, and by the
// Sync+ mailbox hygiene for literal addresses.
#pragma once

#include <string_view>

namespace graspd::runtime {

/// True for addresses a public relay or git host may have: not loopback, private (RFC 1918,
/// unique local), link-local, CGNAT, benchmarking, multicast, reserved or unspecified. IPv6
/// addresses that carry an IPv4 address and reach it through a translator or tunnel are judged by
/// that IPv4 address: IPv4-mapped (::ffff:a.b.c.d), IPv4-translated (::ffff:0:a.b.c.d),
/// IPv4-compatible (::a.b.c.d), NAT64 (64:ff9b::/96) and 6to4 (2002::/16). The local-use NAT64
/// prefix 64:ff9b:1::/48 (RFC 8215) and Teredo 2001::/32 are refused outright: the first is a
/// private deployment's, the second hides its client's IPv4 address (XOR-obfuscated) behind a
/// relay no public server needs (docs/operations.md, "Limits and abuse"). Accepts IPv4 and IPv6
/// text (no brackets, no zone); false for non-addresses.
bool is_public_address(std::string_view ip);

}  // namespace graspd::runtime
