// The private-address rule for untrusted URLs, as a table: IPv4 ranges, IPv6 ranges and the IPv6
// forms that carry an IPv4 address (mapped, translated, compatible, NAT64, 6to4) judged by it;
// local-use NAT64 and Teredo refused outright.
#include "runtime/net/public_address.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace graspd::runtime {
namespace {

struct AddressCase {
  std::string ip;
  bool is_public;
};

TEST(PublicAddress, Table) {
  for (const auto& c : std::vector<AddressCase>{
           // IPv4
           {"8.8.8.8", true},
           {"1.1.1.1", true},
           {"127.0.0.1", false},
           {"10.1.2.3", false},
           {"172.16.0.1", false},
           {"172.32.0.1", true},
           {"192.168.1.1", false},
           {"169.254.169.254", false},
           {"100.64.0.1", false},
           {"198.18.0.1", false},
           {"0.0.0.0", false},
           {"224.0.0.1", false},
           {"255.255.255.255", false},
           // IPv6
           {"2606:4700:4700::1111", true},
           {"::1", false},
           {"::", false},
           {"fe80::1", false},
           {"fc00::1", false},
           {"fd12:3456::1", false},
           {"ff02::1", false},
           // IPv4-mapped and IPv4-translated
           {"::ffff:127.0.0.1", false},
           {"::ffff:10.0.0.1", false},
           {"::ffff:8.8.8.8", true},
           {"::ffff:0:192.168.0.1", false},
           {"::ffff:0:8.8.8.8", true},
           // IPv4-compatible
           {"::127.0.0.1", false},
           {"::10.0.0.1", false},
           {"::8.8.8.8", true},
           // NAT64, well-known prefix, and the local-use prefix
           {"64:ff9b::127.0.0.1", false},
           {"64:ff9b::a00:1", false},
           {"64:ff9b::c0a8:101", false},
           {"64:ff9b::8.8.8.8", true},
           {"64:ff9b:1::8.8.8.8", false},
           // 6to4
           {"2002:7f00:1::1", false},
           {"2002:a00:1::", false},
           {"2002:c0a8:101::1", false},
           {"2002:808:808::1", true},
           // Teredo: refused whatever it embeds
           {"2001:0:4136:e378:8000:63bf:3fff:fdd2", false},
           {"2001::1", false},
           // 2001:db8:: and other 2001: prefixes are not Teredo
           {"2001:4860:4860::8888", true},
           // not addresses
           {"", false},
           {"example.com", false},
           {"[::1]", false},
       }) {
    EXPECT_EQ(is_public_address(c.ip), c.is_public) << c.ip;
  }
}

}  // namespace
}  // namespace graspd::runtime
