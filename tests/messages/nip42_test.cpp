#include <gtest/gtest.h>

#include <set>

#include "messages/nostr/nip42.hpp"
#include "nostr_test_util.hpp"

namespace graspd::nostr {
namespace {

constexpr std::int64_t kNow = 1700000000;

Event auth_event(std::string relay, std::string challenge = "c0ffee",
                 std::int64_t created_at = kNow, std::uint32_t kind = kind_client_auth) {
  return testing::signed_note(
      "", {{"relay", std::move(relay)}, {"challenge", std::move(challenge)}}, kind, created_at);
}

AuthExpectation expect_for(std::string_view domain, std::string_view challenge = "c0ffee") {
  return AuthExpectation{challenge, *parse_host_port(domain), kNow};
}

TEST(Nip42, AcceptsTheServiceUrlInItsUsualSpellings) {
  const auto expected = expect_for("relay.example.com");
  for (const char* url : {"wss://relay.example.com", "wss://relay.example.com/",
                          "WSS://Relay.Example.COM/", "wss://relay.example.com:443",
                          "ws://relay.example.com:80/", "wss://relay.example.com/some/path"}) {
    EXPECT_EQ(check_auth_event(auth_event(url), expected), AuthCheck::ok) << url;
  }
}

TEST(Nip42, AnExplicitServicePortMustBeNamed) {
  const auto expected = expect_for("127.0.0.1:7334");
  EXPECT_EQ(check_auth_event(auth_event("ws://127.0.0.1:7334"), expected), AuthCheck::ok);
  EXPECT_EQ(check_auth_event(auth_event("ws://127.0.0.1"), expected), AuthCheck::bad_relay);
  EXPECT_EQ(check_auth_event(auth_event("ws://127.0.0.1:7335/"), expected), AuthCheck::bad_relay);
}

TEST(Nip42, RefusesOtherHostsAndSchemes) {
  const auto expected = expect_for("relay.example.com");
  for (const char* url :
       {"wss://relay.example.com.evil.net", "wss://evil.net/relay.example.com",
        "https://relay.example.com", "wss://relay.example.com:444", "relay.example.com", ""}) {
    EXPECT_EQ(check_auth_event(auth_event(url), expected), AuthCheck::bad_relay) << url;
  }
  Event no_relay = testing::signed_note("", {{"challenge", "c0ffee"}}, kind_client_auth, kNow);
  EXPECT_EQ(check_auth_event(no_relay, expected), AuthCheck::bad_relay);
}

TEST(Nip42, TheChallengeMustBeTheOneSent) {
  const auto url = "wss://relay.example.com";
  EXPECT_EQ(check_auth_event(auth_event(url, "other"), expect_for("relay.example.com")),
            AuthCheck::bad_challenge);
  const auto none_sent = expect_for("relay.example.com", "");
  EXPECT_EQ(check_auth_event(auth_event(url, ""), none_sent), AuthCheck::bad_challenge);
  EXPECT_EQ(describe(AuthCheck::bad_challenge, auth_event(url, ""), none_sent),
            "invalid: no AUTH challenge was sent on this connection");
  const auto wrong_kind = auth_event(url, "c0ffee", kNow, 1);
  EXPECT_EQ(check_auth_event(wrong_kind, expect_for("relay.example.com")),
            AuthCheck::bad_challenge);
  EXPECT_EQ(describe(AuthCheck::bad_challenge, wrong_kind, expect_for("relay.example.com")),
            "invalid: AUTH needs a kind 22242 event");
}

TEST(Nip42, CreatedAtWithinTenMinutesEitherWay) {
  const auto expected = expect_for("relay.example.com");
  const auto url = "wss://relay.example.com";
  EXPECT_EQ(check_auth_event(auth_event(url, "c0ffee", kNow - 600), expected), AuthCheck::ok);
  EXPECT_EQ(check_auth_event(auth_event(url, "c0ffee", kNow + 600), expected), AuthCheck::ok);
  EXPECT_EQ(check_auth_event(auth_event(url, "c0ffee", kNow - 601), expected), AuthCheck::stale);
  EXPECT_EQ(check_auth_event(auth_event(url, "c0ffee", kNow + 601), expected), AuthCheck::stale);
  EXPECT_EQ(check_auth_event(auth_event(url, "c0ffee", kNow - 1200), expected), AuthCheck::stale);
}

TEST(Nip42, ChallengesAre128RandomBitsInHex) {
  std::set<std::string> seen;
  for (int i = 0; i < 64; ++i) {
    auto challenge = make_challenge();
    EXPECT_EQ(challenge.size(), 32u);
    EXPECT_EQ(challenge.find_first_not_of("0123456789abcdef"), std::string::npos);
    seen.insert(challenge);
  }
  EXPECT_EQ(seen.size(), 64u);
}

TEST(Nip70, ADashTagMakesAnEventProtected) {
  EXPECT_TRUE(is_protected(testing::signed_note("", {{"-"}})));
  EXPECT_TRUE(is_protected(testing::signed_note("", {{"t", "x"}, {"-", "extra"}})));
  EXPECT_FALSE(is_protected(testing::signed_note("", {{"t", "-"}, {"--"}})));
  EXPECT_FALSE(is_protected(testing::signed_note("", {})));
}

TEST(Nip42, CredentialKinds) {
  EXPECT_TRUE(is_credential_kind(22242));
  EXPECT_TRUE(is_credential_kind(27235));
  EXPECT_FALSE(is_credential_kind(20000));
  EXPECT_FALSE(is_credential_kind(1));
  EXPECT_EQ(credential_refusal(27235), "invalid: 27235 is a credential, not an event");
}

}  // namespace
}  // namespace graspd::nostr
