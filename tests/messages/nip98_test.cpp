// NIP-98 verifier (messages/nostr/nip98) and NIP-86 request parsing (messages/nostr/nip86): every
// check refuses on its own, and a correct token passes.
#include <gtest/gtest.h>

#include "messages/nostr/nip86.hpp"
#include "messages/nostr/nip98.hpp"
#include "tests/support/nip98_token.hpp"

namespace graspd::nostr {
namespace {

using nip98::HttpAuthFailure;

constexpr std::int64_t now = 1700000000;
const std::string body = R"({"method":"supportedmethods","params":[]})";

nip98::HttpAuthRules rules() {
  nip98::HttpAuthRules out;
  out.urls = {"https://relay.example.com/", "wss://relay.example.com/"};
  return out;
}

test::HttpAuthToken good_token() {
  test::HttpAuthToken token;
  token.url = "https://relay.example.com/";
  token.payload_of = body;
  token.created_at = now;
  return token;
}

HttpAuthFailure check(const std::string& header, std::string_view method = "POST",
                      const nip98::HttpAuthRules& with = rules()) {
  return nip98::verify_http_auth({header, method, body, now}, with).failure;
}

HttpAuthFailure check(const test::HttpAuthToken& token) {
  return check(test::http_auth_header(token));
}

TEST(Nip98, ACorrectTokenPassesAndCarriesItsEvent) {
  auto ev = test::http_auth_event(good_token());
  auto result = nip98::verify_http_auth({test::http_auth_header(ev), "POST", body, now}, rules());
  ASSERT_TRUE(result.ok()) << nip98::to_string(result.failure);
  EXPECT_EQ(result.event->id, ev.id);
  EXPECT_EQ(result.event->pubkey, ev.pubkey);
}

TEST(Nip98, TheSchemeIsCaseInsensitiveAndTheOtherUrlAndNoTrailingSlashPass) {
  auto token = good_token();
  token.url = "wss://relay.example.com";
  auto header = test::http_auth_header(token);
  EXPECT_EQ(check("nostr " + header.substr(6)), HttpAuthFailure::none);
  token.url = "HTTPS://Relay.Example.com:443";
  EXPECT_EQ(check(token), HttpAuthFailure::none);
}

TEST(Nip98, AMissingHeaderOrAnotherSchemeIsMissing) {
  EXPECT_EQ(check(""), HttpAuthFailure::missing);
  EXPECT_EQ(check("Bearer abc"), HttpAuthFailure::missing);
  EXPECT_EQ(check("Nostr "), HttpAuthFailure::missing);
  EXPECT_EQ(check("Nostrabc"), HttpAuthFailure::missing);
}

TEST(Nip98, BadBase64AndOversizedTokensAreRefused) {
  EXPECT_EQ(check("Nostr !!!!"), HttpAuthFailure::bad_encoding);
  EXPECT_EQ(check("Nostr " + std::string(9000, 'A')), HttpAuthFailure::bad_encoding);
  EXPECT_EQ(check("Nostr " + test::base64_encode("not json")), HttpAuthFailure::bad_event);
}

TEST(Nip98, AnotherKindIsRefused) {
  auto token = good_token();
  token.kind = 22242;
  EXPECT_EQ(check(token), HttpAuthFailure::wrong_kind);
}

TEST(Nip98, ATamperedIdOrSignatureIsRefused) {
  auto ev = test::http_auth_event(good_token());
  auto forged = ev;
  forged.created_at += 1;  // the id no longer matches
  EXPECT_EQ(check(test::http_auth_header(forged)), HttpAuthFailure::bad_signature);
  forged = ev;
  forged.sig[5] ^= 1;
  EXPECT_EQ(check(test::http_auth_header(forged)), HttpAuthFailure::bad_signature);
}

TEST(Nip98, CreatedAtMustBeWithinSixtySecondsEitherWay) {
  auto token = good_token();
  token.created_at = now - 60;
  EXPECT_EQ(check(token), HttpAuthFailure::none);
  token.created_at = now - 61;
  EXPECT_EQ(check(token), HttpAuthFailure::stale);
  token.created_at = now + 61;
  EXPECT_EQ(check(token), HttpAuthFailure::stale);
  token.created_at = now - 120;
  EXPECT_EQ(check(token), HttpAuthFailure::stale);
}

TEST(Nip98, TheMethodTagMustBeTheRequestsUnlessSwitchedOff) {
  auto token = good_token();
  token.method = "GET";
  EXPECT_EQ(check(token), HttpAuthFailure::wrong_method);
  auto relaxed = rules();
  relaxed.check_method = false;
  EXPECT_EQ(check(test::http_auth_header(token), "POST", relaxed), HttpAuthFailure::none);
}

TEST(Nip98, TheUrlMustBeAnAcceptedOne) {
  auto token = good_token();
  for (const char* url :
       {"https://relay.example.com.evil.net/", "https://evil.net/relay.example.com",
        "https://relay.example.com/other", "https://relay.example.com:444/",
        "http://relay.example.com/", "https://user@relay.example.com/", ""}) {
    token.url = url;
    EXPECT_EQ(check(token), HttpAuthFailure::wrong_url) << url;
  }
}

TEST(Nip98, ThePayloadMustBeTheBodysHashUnlessSwitchedOff) {
  auto token = good_token();
  token.payload_of = std::string("{}");
  EXPECT_EQ(check(token), HttpAuthFailure::wrong_payload);
  token.payload_of.reset();
  EXPECT_EQ(check(token), HttpAuthFailure::missing_payload);
  auto relaxed = rules();
  relaxed.require_payload = false;
  EXPECT_EQ(check(test::http_auth_header(token), "POST", relaxed), HttpAuthFailure::none);
}

TEST(Nip98, Base64DecodesWithAndWithoutPadding) {
  EXPECT_EQ(nip98::base64_decode("aGVsbG8="), "hello");
  EXPECT_EQ(nip98::base64_decode("aGVsbG8"), "hello");
  EXPECT_EQ(nip98::base64_decode("aGk="), "hi");
  EXPECT_FALSE(nip98::base64_decode("a"));
  EXPECT_FALSE(nip98::base64_decode("aGk-"));
}

TEST(Nip98Replay, ATokenIsGoodOnceWithinTheWindow) {
  nip98::ReplayGuard guard(120, 8);
  EventId id{};
  id[0] = 1;
  EXPECT_TRUE(guard.first_use(id, now));
  EXPECT_FALSE(guard.first_use(id, now + 1));
  EXPECT_FALSE(guard.first_use(id, now + 120));
  // Past the window the id is forgotten (the token itself is stale by then).
  EXPECT_TRUE(guard.first_use(id, now + 121));
}

TEST(Nip98Replay, WhenFullNewTokensAreRefusedUntilTheOldestAgeOut) {
  nip98::ReplayGuard guard(120, 2);
  EventId a{}, b{}, c{};
  a[0] = 1, b[0] = 2, c[0] = 3;
  EXPECT_TRUE(guard.first_use(a, now));
  EXPECT_TRUE(guard.first_use(b, now + 10));
  EXPECT_FALSE(guard.first_use(c, now + 20));
  EXPECT_TRUE(guard.first_use(c, now + 121));
  EXPECT_EQ(guard.size(), 2u);
}

TEST(Nip86, ARequestIsExactlyAMethodAndStringParams) {
  auto request = nip86::parse_request(R"({"method":"banpubkey","params":["ab","spam"]})");
  ASSERT_TRUE(request);
  EXPECT_EQ(request->method, "banpubkey");
  EXPECT_EQ(request->params, (std::vector<std::string>{"ab", "spam"}));
  for (const char* bad :
       {"", "[]", "{}", R"({"method":"x"})", R"({"params":[]})", R"({"method":1,"params":[]})",
        R"({"method":"x","params":"a"})", R"({"method":"x","params":[1]})",
        R"({"method":"x","params":[],"extra":1})", R"({"method":"x","method":"y"})",
        R"({"method":"x","params":[]} trailing)"})
    EXPECT_FALSE(nip86::parse_request(bad)) << bad;
}

TEST(Nip86, MethodsAreAFixedSet) {
  EXPECT_EQ(nip86::method_named("banevent"), nip86::Method::banevent);
  EXPECT_EQ(nip86::method_named("blockip"), nip86::Method::unsupported);
  EXPECT_EQ(nip86::method_named("unsupported"), nip86::Method::unsupported);
  auto names = nip86::supported_method_names();
  EXPECT_EQ(names.size(), nip86::method_count - 1);
  EXPECT_EQ(names.front(), "supportedmethods");
}

TEST(Nip86, AnswersAreResultAndError) {
  EXPECT_EQ(nip86::result_answer("true"), R"({"result":true,"error":null})");
  EXPECT_EQ(nip86::error_answer("unsupported method"),
            R"({"result":null,"error":"unsupported method"})");
}

}  // namespace
}  // namespace graspd::nostr
