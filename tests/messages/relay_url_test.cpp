#include "messages/relay_url.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace graspd {
namespace {

TEST(RelayUrl, CanonicalFormIsOneKeyPerRelay) {
  const char* variants[] = {"wss://Relay.Example.com", "wss://relay.example.com/",
                            "WSS://relay.example.com:443", "wss://relay.example.com:443/"};
  for (const char* url : variants)
    EXPECT_EQ(canonical_relay_url(url).value_or("?"), "wss://relay.example.com") << url;
  EXPECT_EQ(canonical_relay_url("ws://h:80/").value_or("?"), "ws://h");
  EXPECT_EQ(canonical_relay_url("ws://h:8080").value_or("?"), "ws://h:8080");
  EXPECT_EQ(canonical_relay_url("wss://h/nostr/").value_or("?"), "wss://h/nostr/");
  EXPECT_EQ(canonical_relay_url("wss://h/?a=1").value_or("?"), "wss://h/?a=1");
  EXPECT_EQ(canonical_relay_url("wss://[::1]:7000").value_or("?"), "wss://[::1]:7000");
}

TEST(RelayUrl, RejectsWhatIsNotARelay) {
  for (const char* url : {"https://h", "wss://", "wss://h:0", "wss://h:99999", "wss://h :1",
                          "relay.example.com", "wss://h:12a", "wss://[::1", "://h"})
    EXPECT_FALSE(canonical_relay_url(url).has_value()) << url;
}

TEST(RelayUrl, ParsesUserInfoAndDefaultPorts) {
  auto url = parse_url("https://me:pw@Host.net/x.git?y#frag");
  ASSERT_TRUE(url);
  EXPECT_TRUE(url->has_user_info);
  EXPECT_EQ(url->host, "host.net");
  EXPECT_EQ(url->port, 443);
  EXPECT_FALSE(url->explicit_port);
  EXPECT_EQ(url->path_and_query, "/x.git?y");
}

TEST(RelayUrl, HostMatchingNeverUsesSubstrings) {
  auto service = *parse_host_port("x.com");
  EXPECT_TRUE(url_names_host(*parse_url("https://x.com/r.git"), service));
  EXPECT_TRUE(url_names_host(*parse_url("wss://X.COM:443"), service));
  EXPECT_FALSE(url_names_host(*parse_url("https://x.com.evil.net/r"), service));
  EXPECT_FALSE(url_names_host(*parse_url("https://evil.net/x.com"), service));
  EXPECT_FALSE(url_names_host(*parse_url("https://x.com:8443/"), service));
  auto with_port = *parse_host_port("127.0.0.1:7334");
  EXPECT_TRUE(url_names_host(*parse_url("ws://127.0.0.1:7334"), with_port));
  EXPECT_FALSE(url_names_host(*parse_url("ws://127.0.0.1"), with_port));
  EXPECT_FALSE(parse_host_port("x.com/path").has_value());
  EXPECT_FALSE(parse_host_port("x.com:").has_value());
}

TEST(RelayUrl, UntrustedUrlsAreBoundedAndWithoutUserInfo) {
  EXPECT_EQ(untrusted_relay_key("wss://Relay.example.com/").value_or("?"),
            "wss://relay.example.com");
  EXPECT_FALSE(untrusted_relay_key("wss://user:pw@relay.example.com").has_value());
  EXPECT_FALSE(untrusted_relay_key("https://relay.example.com").has_value());
  EXPECT_FALSE(untrusted_relay_key("wss://h/" + std::string(600, 'a')).has_value());
}

TEST(RelayUrl, UntrustedUrlsHaveAPlainPath) {
  EXPECT_EQ(untrusted_relay_key("wss://relay.example.com/nostr/v1").value_or("?"),
            "wss://relay.example.com/nostr/v1");
  EXPECT_EQ(untrusted_relay_key("wss://relay.example.com/a-b_c.d~e").value_or("?"),
            "wss://relay.example.com/a-b_c.d~e");
  EXPECT_FALSE(untrusted_relay_key("wss://victim.example/admin?delete=1").has_value());
  EXPECT_FALSE(untrusted_relay_key("wss://victim.example/?x").has_value());
  EXPECT_FALSE(untrusted_relay_key("wss://victim.example/a%2Fb").has_value());
  EXPECT_FALSE(untrusted_relay_key("wss://victim.example/a;b").has_value());
  // Operator-configured URLs keep their query (canonical_relay_url).
  EXPECT_TRUE(canonical_relay_url("wss://relay.example.com/?token=1").has_value());
}

TEST(RelayUrl, CanonicalRelayUrlHoldsOnlyTheCanonicalForm) {
  auto url = CanonicalRelayUrl::parse("WSS://Relay.Example.com:443/");
  ASSERT_TRUE(url);
  EXPECT_EQ(url->str(), "wss://relay.example.com");
  EXPECT_EQ(url, CanonicalRelayUrl::parse("wss://relay.example.com"));
  EXPECT_NE(url, CanonicalRelayUrl::parse("ws://relay.example.com"));
  for (const char* bad : {"", "https://h", "ws://:9", "wss://h:0", "relay.example.com"})
    EXPECT_FALSE(CanonicalRelayUrl::parse(bad)) << bad;
}

TEST(RelayUrl, SplitHostPortKeepsTheHostAsWritten) {
  auto named = split_host_port("LocalHost:7000");
  ASSERT_TRUE(named);
  EXPECT_EQ(named->host, "LocalHost");
  EXPECT_EQ(named->port, 7000);
  auto v6 = split_host_port("[::1]:0");
  ASSERT_TRUE(v6);
  EXPECT_EQ(v6->host, "[::1]");
  EXPECT_EQ(v6->port, 0) << "port 0 is the caller's to refuse";
  EXPECT_EQ(split_host_port("x.com"), (HostPort{"x.com", std::nullopt}));
  for (const char* bad : {"", ":80", "[]:80", "[::1", "[::1]x", "x.com:", "x.com:123456",
                          "x.com:65536", "x.com:-1", "a b:80", "x/y:80", "u@x:80"})
    EXPECT_FALSE(split_host_port(bad)) << bad;
}

TEST(RelayUrl, ServiceIdentityIsLowercaseWithoutPortZero) {
  EXPECT_EQ(parse_host_port("Relay.Example.COM:8443"), (HostPort{"relay.example.com", 8443}));
  EXPECT_EQ(parse_host_port("[::FFFF:1.2.3.4]"), (HostPort{"[::ffff:1.2.3.4]", std::nullopt}));
  EXPECT_FALSE(parse_host_port("x.com:0"));
}

struct HostCase {
  std::string host;
  bool plain;
};

TEST(RelayUrl, PlainHostTable) {
  for (const auto& c : std::vector<HostCase>{
           {"relay.example.com", true},
           {"git.example", true},
           {"localhost", true},  // plain: its address is judged after resolution
           {"xn--mnchen-3ya.de", true},
           {"a_b.example", true},
           {"8.8.8.8", true},
           {"[2001:db8::1]", true},
           {"[::ffff:127.0.0.1]", true},
           {"m\xc3\xbcnchen.de", false},  // IDN: refused, not resolved twice differently
           {"%65xample.com", false},
           {"example.com.", false},
           {"a..b", false},
           {".example", false},
           {std::string(64, 'a') + ".example", false},
           {"127.1", false},
           {"0x7f.0.0.1", false},
           {"0177.0.0.1", false},
           {"2130706433", false},
           {"1.2.3.04", false},
           {"256.1.1.1", false},
           {"1.2.3.4.5", false},
           {"example.0x10", false},
           {"[fe80::1%25eth0]", false},
           {"[]", false},
           {"", false},
       }) {
    EXPECT_EQ(is_plain_host(c.host), c.plain) << c.host;
  }
}

TEST(RelayUrl, UntrustedRelayUrlsNeedAPlainHost) {
  EXPECT_FALSE(untrusted_relay_key("wss://m\xc3\xbcnchen.example/").has_value());
  EXPECT_FALSE(untrusted_relay_key("wss://127.1/").has_value());
  EXPECT_TRUE(untrusted_relay_key("wss://xn--mnchen-3ya.example/").has_value());
}

}  // namespace
}  // namespace graspd
