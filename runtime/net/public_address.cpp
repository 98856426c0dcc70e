#include <utility>  // before Asio (docs/toolchain.md §1)

#include "runtime/net/public_address.hpp"

#include <boost/asio/ip/address.hpp>
#include <optional>
#include <string>

namespace graspd::runtime {

namespace {

namespace ip = boost::asio::ip;

bool is_public_v4(const ip::address_v4& a) {
  auto b = a.to_bytes();
  if (b[0] == 0 || b[0] == 10 || b[0] == 127) return false;
  if (b[0] == 100 && (b[1] & 0xc0) == 64) return false;  // 100.64.0.0/10 CGNAT
  if (b[0] == 169 && b[1] == 254) return false;
  if (b[0] == 172 && (b[1] & 0xf0) == 16) return false;
  if (b[0] == 192 && b[1] == 168) return false;
  if (b[0] == 192 && b[1] == 0 && b[2] == 0) return false;  // IETF protocol assignments
  if (b[0] == 198 && (b[1] & 0xfe) == 18) return false;     // 198.18.0.0/15 benchmarking
  if (b[0] >= 224) return false;                            // multicast, reserved, broadcast
  return true;
}

using V6Bytes = ip::address_v6::bytes_type;

/// The IPv4 address of bytes `at`..`at`+3 of `b`.
ip::address_v4 v4_at(const V6Bytes& b, std::size_t at) {
  return ip::address_v4(ip::address_v4::bytes_type{b[at], b[at + 1], b[at + 2], b[at + 3]});
}

bool zero(const V6Bytes& b, std::size_t from, std::size_t to) {
  for (auto i = from; i < to; ++i)
    if (b[i] != 0) return false;
  return true;
}

/// The IPv4 address a packet to `b` reaches through a translator or tunnel, if any.
std::optional<ip::address_v4> embedded_v4(const V6Bytes& b) {
  // ::ffff:a.b.c.d (mapped) and ::ffff:0:a.b.c.d (translated, RFC 2765).
  if (zero(b, 0, 10) && b[10] == 0xff && b[11] == 0xff) return v4_at(b, 12);
  if (zero(b, 0, 8) && b[8] == 0xff && b[9] == 0xff && b[10] == 0 && b[11] == 0)
    return v4_at(b, 12);
  // ::a.b.c.d (IPv4-compatible, deprecated; :: and ::1 are judged as IPv6 before this).
  if (zero(b, 0, 12)) return v4_at(b, 12);
  // 64:ff9b::a.b.c.d (NAT64 well-known prefix, RFC 6052).
  if (b[0] == 0 && b[1] == 0x64 && b[2] == 0xff && b[3] == 0x9b && zero(b, 4, 12))
    return v4_at(b, 12);
  // 2002:aabb:ccdd::/48 (6to4, RFC 3056).
  if (b[0] == 0x20 && b[1] == 0x02) return v4_at(b, 2);
  return std::nullopt;
}

bool is_public_v6(const ip::address_v6& a) {
  if (a.is_loopback() || a.is_unspecified() || a.is_link_local() || a.is_multicast() ||
      a.is_site_local())
    return false;
  auto b = a.to_bytes();
  if ((b[0] & 0xfe) == 0xfc) return false;  // fc00::/7 unique local
  if (auto v4 = embedded_v4(b)) return is_public_v4(*v4);
  // 64:ff9b:1::/48, local-use NAT64 (RFC 8215): a private translator, any embedding.
  if (b[0] == 0 && b[1] == 0x64 && b[2] == 0xff && b[3] == 0x9b && b[4] == 0 && b[5] == 1)
    return false;
  if (b[0] == 0x20 && b[1] == 0x01 && b[2] == 0 && b[3] == 0) return false;  // Teredo 2001::/32
  return true;
}

}  // namespace

bool is_public_address(std::string_view ip) {
  boost::system::error_code ec;
  auto address = ip::make_address(std::string(ip), ec);
  if (ec) return false;
  return address.is_v4() ? is_public_v4(address.to_v4()) : is_public_v6(address.to_v6());
}

}  // namespace graspd::runtime
