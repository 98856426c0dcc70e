// Trusted reverse proxies: CIDR parsing and the per-request client resolution (§5.3 of the
// identity-and-access requirements), and the two options that configure them.
#include "runtime/net/forwarded_address.hpp"

#include <gtest/gtest.h>

#include "runtime/config/config.hpp"
#include "tests/support/config_loading.hpp"

namespace graspd::runtime {
namespace {

TrustedProxies trusting(std::string_view cidrs,
                        ForwardingHeader header = ForwardingHeader::x_forwarded_for) {
  auto networks = parse_ip_networks(cidrs);
  EXPECT_TRUE(networks) << cidrs;
  return {networks.value_or(std::vector<IpNetwork>{}), header};
}

ResolvedClient resolve(const TrustedProxies& proxies, std::string_view peer,
                       std::vector<std::string_view> values) {
  return resolve_client_address(proxies, peer, values);
}

TEST(IpNetwork, ParsesCidrsAndBareAddresses) {
  auto loopback = parse_ip_network("127.0.0.1");
  ASSERT_TRUE(loopback);
  EXPECT_EQ(loopback->prefix_length, 128u);
  EXPECT_EQ(parse_ip_network("10.0.0.0/8")->prefix_length, 104u);
  EXPECT_EQ(parse_ip_network("2001:db8::/32")->prefix_length, 32u);
  EXPECT_EQ(parse_ip_network("::1")->prefix_length, 128u);
  EXPECT_EQ(parse_ip_network("0.0.0.0/0")->prefix_length, 96u);
  // Host bits past the prefix are dropped.
  EXPECT_EQ(*parse_ip_network("10.1.2.3/8"), *parse_ip_network("10.0.0.0/8"));
}

TEST(IpNetwork, RefusesWhatIsNotANetwork) {
  for (auto bad : {"", "localhost", "10.0.0.0/33", "2001:db8::/129", "10.0.0.0/", "10.0.0.0/-1",
                   "10.0.0.0/8/8", "[::1]", "10.0.0", "10.0.0.0/ 8", "10.0.0.0/+8", "fe80::1%lo"}) {
    EXPECT_FALSE(parse_ip_network(bad)) << bad;
  }
}

TEST(IpNetwork, ListsSplitOnCommasAndBlanks) {
  auto networks = parse_ip_networks(" 10.0.0.0/8, 192.168.0.0/16  ::1\t172.16.0.0/12,,");
  ASSERT_TRUE(networks);
  EXPECT_EQ(networks->size(), 4u);
  EXPECT_TRUE(parse_ip_networks("")->empty());
  std::string bad;
  EXPECT_FALSE(parse_ip_networks("10.0.0.0/8, nope", &bad));
  EXPECT_EQ(bad, "nope");
}

TEST(TrustedProxies, MatchesPrefixesAndMappedAddresses) {
  auto proxies = trusting("10.0.0.0/8, 2001:db8::/32, 192.0.2.7");
  EXPECT_TRUE(proxies.trusts("10.255.1.2"));
  EXPECT_FALSE(proxies.trusts("11.0.0.1"));
  EXPECT_TRUE(proxies.trusts("2001:db8:1::5"));
  EXPECT_FALSE(proxies.trusts("2001:db9::5"));
  EXPECT_TRUE(proxies.trusts("192.0.2.7"));
  EXPECT_FALSE(proxies.trusts("192.0.2.8"));
  // A dual-stack socket shows IPv4 peers mapped.
  EXPECT_TRUE(proxies.trusts("::ffff:10.1.1.1"));
  EXPECT_FALSE(proxies.trusts("not an address"));
  EXPECT_FALSE(TrustedProxies{}.trusts("10.0.0.1"));
}

TEST(ResolveClient, WithoutAHeaderThePeerIsTheClient) {
  auto resolved = resolve(trusting("127.0.0.1"), "127.0.0.1", {});
  EXPECT_EQ(resolved.address, "127.0.0.1");
  EXPECT_EQ(resolved.outcome, ForwardedOutcome::absent);
  EXPECT_EQ(resolve({}, "::ffff:198.51.100.1", {}).address, "198.51.100.1");
}

TEST(ResolveClient, AnUntrustedPeersHeaderIsIgnored) {
  auto resolved = resolve(trusting("127.0.0.1/32"), "127.0.0.2", {"198.51.100.7"});
  EXPECT_EQ(resolved.address, "127.0.0.2");
  EXPECT_EQ(resolved.outcome, ForwardedOutcome::untrusted_peer);
  // No trusted network at all: every header is an untrusted peer's.
  EXPECT_EQ(resolve({}, "127.0.0.1", {"198.51.100.7"}).outcome, ForwardedOutcome::untrusted_peer);
}

TEST(ResolveClient, TheRightmostUntrustedHopIsTheClient) {
  auto proxies = trusting("127.0.0.1/32, 10.0.0.0/8");
  auto resolved = resolve(proxies, "127.0.0.1", {"198.51.100.7"});
  EXPECT_EQ(resolved.address, "198.51.100.7");
  EXPECT_EQ(resolved.outcome, ForwardedOutcome::used);
  // A client's own (spoofed) entries are left of the one the proxy appended.
  EXPECT_EQ(resolve(proxies, "127.0.0.1", {"203.0.113.9, 198.51.100.7"}).address, "198.51.100.7");
  // Trusted hops between are skipped.
  EXPECT_EQ(
      resolve(proxies, "127.0.0.1", {"203.0.113.9, 198.51.100.7, 10.0.0.2, 10.1.1.1"}).address,
      "198.51.100.7");
}

TEST(ResolveClient, EveryInstanceOfTheHeaderIsJoinedInOrder) {
  auto proxies = trusting("127.0.0.1, 10.0.0.0/8");
  EXPECT_EQ(resolve(proxies, "127.0.0.1", {"203.0.113.9", "198.51.100.7, 10.0.0.3"}).address,
            "198.51.100.7");
  EXPECT_EQ(resolve(proxies, "127.0.0.1", {"198.51.100.7", "10.0.0.3"}).address, "198.51.100.7");
}

TEST(ResolveClient, AllHopsTrustedGivesTheLeftmost) {
  auto proxies = trusting("10.0.0.0/8, 127.0.0.1");
  auto resolved = resolve(proxies, "127.0.0.1", {"10.0.0.1, 10.0.0.2"});
  EXPECT_EQ(resolved.address, "10.0.0.1");
  EXPECT_EQ(resolved.outcome, ForwardedOutcome::used);
}

TEST(ResolveClient, AnUnparsableHopEndsTheWalkAtTheLastTrustedHop) {
  auto proxies = trusting("127.0.0.1, 10.0.0.0/8");
  for (auto bad : {"unknown", "_hidden", "garbage!", "", "300.1.1.1", "1.2.3.4:port"}) {
    std::string value = std::string("198.51.100.7, ") + bad + ", 10.0.0.2";
    auto resolved = resolve(proxies, "127.0.0.1", {value});
    EXPECT_EQ(resolved.address, "10.0.0.2") << value;
    EXPECT_EQ(resolved.outcome, ForwardedOutcome::malformed) << value;
  }
  // The rightmost unparsable: the peer stands.
  auto resolved = resolve(proxies, "127.0.0.1", {"198.51.100.7, unknown"});
  EXPECT_EQ(resolved.address, "127.0.0.1");
  EXPECT_EQ(resolved.outcome, ForwardedOutcome::malformed);
  EXPECT_EQ(resolve(proxies, "127.0.0.1", {""}).outcome, ForwardedOutcome::malformed);
}

TEST(ResolveClient, PortsBracketsAndMappedAddressesAreNormalised) {
  auto proxies = trusting("127.0.0.1");
  EXPECT_EQ(resolve(proxies, "127.0.0.1", {"198.51.100.7:4711"}).address, "198.51.100.7");
  EXPECT_EQ(resolve(proxies, "127.0.0.1", {"[2001:db8::1]:443"}).address, "2001:db8::1");
  EXPECT_EQ(resolve(proxies, "127.0.0.1", {"[2001:db8::1]"}).address, "2001:db8::1");
  EXPECT_EQ(resolve(proxies, "127.0.0.1", {"2001:DB8::1"}).address, "2001:db8::1");
  EXPECT_EQ(resolve(proxies, "127.0.0.1", {"::ffff:198.51.100.7"}).address, "198.51.100.7");
  EXPECT_EQ(resolve(proxies, "::ffff:127.0.0.1", {"198.51.100.7"}).address, "198.51.100.7");
  // A port on a bare IPv6 or a bad bracket is not an address.
  EXPECT_EQ(resolve(proxies, "127.0.0.1", {"[2001:db8::1]x"}).outcome, ForwardedOutcome::malformed);
  EXPECT_EQ(resolve(proxies, "127.0.0.1", {"[198.51.100.7]"}).outcome, ForwardedOutcome::malformed);
  EXPECT_EQ(resolve(proxies, "127.0.0.1", {"[2001:db8::1"}).outcome, ForwardedOutcome::malformed);
}

TEST(ResolveClient, ForwardedHeaderSyntax) {
  auto proxies = trusting("127.0.0.1, 10.0.0.0/8", ForwardingHeader::forwarded);
  EXPECT_EQ(resolve(proxies, "127.0.0.1", {"for=198.51.100.7"}).address, "198.51.100.7");
  EXPECT_EQ(resolve(proxies, "127.0.0.1", {R"(for="[2001:db8::1]:443";proto=https)"}).address,
            "2001:db8::1");
  EXPECT_EQ(
      resolve(proxies, "127.0.0.1",
              {"for=203.0.113.9;proto=http, For=\"198.51.100.7:80\";by=10.0.0.1", "for=10.0.0.5"})
          .address,
      "198.51.100.7");
  // An element without `for` or with an obfuscated node ends the walk.
  auto resolved = resolve(proxies, "127.0.0.1", {"for=198.51.100.7, proto=https;by=10.0.0.1"});
  EXPECT_EQ(resolved.address, "127.0.0.1");
  EXPECT_EQ(resolved.outcome, ForwardedOutcome::malformed);
  EXPECT_EQ(resolve(proxies, "127.0.0.1", {"for=198.51.100.7, for=_hidden, for=10.0.0.2"}).address,
            "10.0.0.2");
}

TEST(ResolveClient, RealIpHeaderIsOneHop) {
  auto proxies = trusting("127.0.0.1", ForwardingHeader::x_real_ip);
  EXPECT_EQ(resolve(proxies, "127.0.0.1", {"198.51.100.7"}).address, "198.51.100.7");
}

TEST(ForwardingHeader, ParsesTheOptionValues) {
  EXPECT_EQ(parse_forwarding_header("X-Forwarded-For"), ForwardingHeader::x_forwarded_for);
  EXPECT_EQ(parse_forwarding_header("forwarded"), ForwardingHeader::forwarded);
  EXPECT_EQ(parse_forwarding_header("x-real-ip"), ForwardingHeader::x_real_ip);
  EXPECT_FALSE(parse_forwarding_header("x-client-ip"));
  EXPECT_EQ(to_string(ForwardingHeader::x_real_ip), "x-real-ip");
}

TEST(TrustedProxyOptions, DefaultEmptyAndForms) {
  auto defaults = test::load_ok({});
  EXPECT_TRUE(defaults.trusted_proxies.networks.empty());
  EXPECT_EQ(defaults.trusted_proxies.header, ForwardingHeader::x_forwarded_for);
  auto set = test::load_ok({}, {{"NGIT_TRUSTED_PROXY_CIDRS", "127.0.0.1/32 ::1, 10.0.0.0/8"},
                                {"NGIT_TRUSTED_PROXY_HEADER", "forwarded"}});
  EXPECT_EQ(set.trusted_proxies.networks.size(), 3u);
  EXPECT_EQ(set.trusted_proxies.header, ForwardingHeader::forwarded);
  EXPECT_TRUE(
      test::load_ok({}, {{"NGIT_TRUSTED_PROXY_CIDRS", ""}}).trusted_proxies.networks.empty());
}

TEST(TrustedProxyOptions, InvalidValuesNameTheOption) {
  auto cidrs =
      load_config({}, test::lookup({{"NGIT_TRUSTED_PROXY_CIDRS", "10.0.0.0/8,10.0.0.0/40"}}));
  ASSERT_FALSE(cidrs);
  EXPECT_NE(cidrs.error().message.find("NGIT_TRUSTED_PROXY_CIDRS"), std::string::npos);
  EXPECT_NE(cidrs.error().message.find("10.0.0.0/40"), std::string::npos);
  auto header = load_config({}, test::lookup({{"NGIT_TRUSTED_PROXY_HEADER", "x-client-ip"}}));
  ASSERT_FALSE(header);
  EXPECT_NE(header.error().message.find("NGIT_TRUSTED_PROXY_HEADER"), std::string::npos);
}

}  // namespace
}  // namespace graspd::runtime
