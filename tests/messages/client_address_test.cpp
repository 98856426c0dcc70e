// The per-client share key (messages/client_address.*): IPv4 as it is, IPv6 by its /64 in one
// spelling however the address is written, a zone ignored, IPv6 with an embedded IPv4 kept whole.
#include "messages/client_address.hpp"

#include <gtest/gtest.h>

namespace graspd {
namespace {

TEST(ClientAddress, AnIpv6ClientCountsByItsSlash64InOneSpelling) {
  EXPECT_EQ(client_address_group("2001:db8:0:1::5"), "2001:0db8:0000:0001::/64");
  EXPECT_EQ(client_address_group("2001:DB8:0:1:aa:bb:cc:7"), "2001:0db8:0000:0001::/64");
  EXPECT_EQ(client_address_group("2001:db8:0:1::5%eth0"), "2001:0db8:0000:0001::/64");
  EXPECT_NE(client_address_group("2001:db8:0:1::5"), client_address_group("2001:db8:0:2::5"));
  EXPECT_EQ(client_address_group("::1"), "0000:0000:0000:0000::/64");
}

TEST(ClientAddress, Ipv4AndEmbeddedIpv4AreKeptWhole) {
  EXPECT_EQ(client_address_group("127.0.0.2"), "127.0.0.2");
  EXPECT_EQ(client_address_group("::ffff:10.0.0.1"), "::ffff:10.0.0.1");
  EXPECT_FALSE(ipv6_prefix64("10.0.0.1"));
  EXPECT_FALSE(ipv6_prefix64("1:2:3:4:5:6:7:8:9")) << "not an address";
}

TEST(ClientAddress, OnlyIpSourcesAreGrouped) {
  EXPECT_EQ(client_source_group("ip:2001:db8:0:1::5"), "ip:2001:0db8:0000:0001::/64");
  EXPECT_EQ(client_source_group("ip:127.0.0.2"), "ip:127.0.0.2");
  EXPECT_EQ(client_source_group("relay:wss://a.example"), "relay:wss://a.example");
}

}  // namespace
}  // namespace graspd
