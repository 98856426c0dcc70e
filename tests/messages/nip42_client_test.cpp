#include "messages/nostr/nip42_client.hpp"

#include <gtest/gtest.h>

namespace graspd::nostr {
namespace {

TEST(Nip42Client, ParseAuthChallenge) {
  EXPECT_EQ(parse_auth_challenge(R"(["AUTH","abc"])"), "abc");
  EXPECT_EQ(parse_auth_challenge(R"([ "AUTH" , "x" ])"), "x");
  EXPECT_EQ(parse_auth_challenge(R"(["EVENT","s",{"content":"[\"AUTH\",\"x\"]"}])"), std::nullopt);
  EXPECT_EQ(parse_auth_challenge(R"(["AUTH","a\"b"])"), "a\"b");
  EXPECT_EQ(parse_auth_challenge(R"(["AUTH",""])"), std::nullopt);
  EXPECT_EQ(parse_auth_challenge(R"(["AUTH",{"id":"x"}])"), std::nullopt);
  EXPECT_EQ(parse_auth_challenge(R"(["AUTH","a","b"])"), std::nullopt);
  EXPECT_EQ(parse_auth_challenge(R"(["AUTH","a")"), std::nullopt);
  EXPECT_EQ(parse_auth_challenge(R"(["NOTICE","a"])"), std::nullopt);
  EXPECT_EQ(
      parse_auth_challenge("[\"AUTH\",\"" + std::string(max_auth_challenge_bytes, 'x') + "\"]")
          ->size(),
      max_auth_challenge_bytes);
  EXPECT_EQ(
      parse_auth_challenge("[\"AUTH\",\"" + std::string(max_auth_challenge_bytes + 1, 'x') + "\"]"),
      std::nullopt);
}

TEST(Nip42Client, AuthResponseAndFrame) {
  auto ev = auth_response("wss://peer.example", "c1", 1700000000);
  EXPECT_EQ(ev.kind, 22242u);
  EXPECT_EQ(ev.created_at, 1700000000);
  EXPECT_EQ(ev.content, "");
  EXPECT_EQ(ev.tags, (Tags{{"relay", "wss://peer.example"}, {"challenge", "c1"}}));
  EXPECT_EQ(client_auth(R"({"id":"x"})"), R"(["AUTH",{"id":"x"}])");
}

}  // namespace
}  // namespace graspd::nostr
