#include "runtime/net/site_url.hpp"

#include <gtest/gtest.h>

#include "messages/nostr/nip19.hpp"

namespace graspd::runtime {
namespace {

nostr::Pubkey site_owner() {
  nostr::Pubkey key;
  key.fill(7);
  return key;
}

TEST(SiteUrl, LoopbackDomainsAreThisMachine) {
  for (auto local : {"127.0.0.1:7334", "127.0.0.1", "127.8.9.10:80", "localhost", "LOCALHOST:7334",
                     "relay.localhost:7334", "[::1]:7334", "[::1]"})
    EXPECT_TRUE(is_loopback_domain(local)) << local;
  for (auto other : {"relay.example.com", "relay.example.com:443", "localhost.example.com",
                     "notlocalhost", "127.example.com", "128.0.0.1:7334", "10.0.0.1", "[::2]:7334",
                     "[2001:db8::1]", "", "bad host:1"})
    EXPECT_FALSE(is_loopback_domain(other)) << other;
}

TEST(SiteUrl, PlainSchemesOnlyForThisMachine) {
  EXPECT_EQ(site_url("127.0.0.1:7334", SiteProtocol::http), "http://127.0.0.1:7334");
  EXPECT_EQ(site_url("127.0.0.1:7334", SiteProtocol::websocket), "ws://127.0.0.1:7334");
  EXPECT_EQ(site_url("[::1]:7334", SiteProtocol::http), "http://[::1]:7334");
  EXPECT_EQ(site_url("localhost:7334", SiteProtocol::websocket), "ws://localhost:7334");
  EXPECT_EQ(site_url("relay.example.com", SiteProtocol::http), "https://relay.example.com");
  EXPECT_EQ(site_url("relay.example.com", SiteProtocol::websocket), "wss://relay.example.com");
  EXPECT_EQ(site_url("relay.example.com:8443", SiteProtocol::http),
            "https://relay.example.com:8443");
}

TEST(SiteUrl, CloneUrlAndReplicationPathPercentEncodeTheIdentifier) {
  auto npub = nostr::encode_npub(site_owner());
  EXPECT_EQ(repository_path(site_owner(), "x y"), "/" + npub + "/x%20y.git");
  EXPECT_EQ(repository_clone_url("127.0.0.1:7334", site_owner(), "graspd"),
            "http://127.0.0.1:7334/" + npub + "/graspd.git");
  EXPECT_EQ(repository_clone_url("relay.example.com", site_owner(), "<b>\"x"),
            "https://relay.example.com/" + npub + "/%3Cb%3E%22x.git");
  EXPECT_EQ(replication_api_path(site_owner(), "a/b?c"),
            "/api/repositories/" + npub + "/a%2Fb%3Fc/replication");
}

}  // namespace
}  // namespace graspd::runtime
