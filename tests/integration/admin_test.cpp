// The NIP-86 management API end to end against the real binary (docs/operations.md, "Management
// API"): NIP-98 tokens from nostr-tools (tests/interop/nip98_client.mjs) and signed here, every
// authentication failure a 401, bans applied at once on the client path and the sync path, banned
// events deleted, the lists kept across a restart.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "messages/nostr/nip19.hpp"
#include "tests/integration/interop_support.hpp"
#include "tests/integration/sync_test_support.hpp"
#include "tests/support/nip98_token.hpp"
#include "tests/support/wait_until.hpp"

namespace graspd::test {
namespace {

using namespace std::chrono_literals;

constexpr std::uint8_t operator_key = 0x61;
constexpr std::uint8_t stranger_key = 0x62;

nostr::Pubkey pubkey_of(std::uint8_t key) {
  return *nostr::pubkey_from_secret(secret_key(key));
}

std::vector<std::pair<std::string, std::string>> admin_env(
    std::vector<std::pair<std::string, std::string>> env = {}) {
  env.emplace_back("NGIT_OWNER_NPUB", nostr::encode_npub(pubkey_of(operator_key)));
  env.emplace_back("NGIT_SYNC_ENABLED", "false");
  return env;
}

std::string body_of(const std::string& method, const std::vector<std::string>& params = {}) {
  std::string body = R"({"method":")" + method + R"(","params":[)";
  for (std::size_t i = 0; i < params.size(); ++i) body += (i ? ",\"" : "\"") + params[i] + "\"";
  return body + "]}";
}

/// POST / with the management content type, `authorization` (none when empty) and `body`.
HttpResult post_rpc(std::uint16_t port, const std::string& authorization, const std::string& body) {
  std::string raw =
      "POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
      "Content-Type: application/nostr+json+rpc\r\nContent-Length: " +
      std::to_string(body.size()) + "\r\n";
  if (!authorization.empty()) raw += "Authorization: " + authorization + "\r\n";
  return http_raw(port, raw + "\r\n" + body);
}

/// The service URL a token names (https:// of NGIT_DOMAIN, here the bind address).
std::string service_url(const GraspdProcess& graspd) {
  return "https://127.0.0.1:" + std::to_string(graspd.port()) + "/";
}

HttpAuthToken token_for(const GraspdProcess& graspd, const std::string& body,
                        std::uint8_t key = operator_key) {
  HttpAuthToken token;
  token.url = service_url(graspd);
  token.payload_of = body;
  token.created_at = now_seconds();
  token.key = key;
  return token;
}

/// A call signed here by the operator.
HttpResult call(const GraspdProcess& graspd, const std::string& method,
                const std::vector<std::string>& params = {}) {
  auto body = body_of(method, params);
  return post_rpc(graspd.port(), http_auth_header(token_for(graspd, body)), body);
}

/// A call whose token nostr-tools made (nip98.getToken); "<status> <body>".
std::string call_with_nostr_tools(const GraspdProcess& graspd, const std::string& method,
                                  const std::string& params_json = "[]") {
  int status = -1;
  auto output = run_command(
      "cd '" + interop_dir().string() + "' && timeout 30 node nip98_client.mjs http://127.0.0.1:" +
          std::to_string(graspd.port()) + "/ '" + service_url(graspd) + "' " +
          nostr::to_hex(secret_key(operator_key)) + " " + method + " '" + params_json + "'",
      status);
  EXPECT_EQ(status, 0) << output;
  return output;
}

const std::string unauthorized = R"({"error":"unauthorized"})";

TEST(AdminE2E, EveryAuthenticationFailureIs401AndANostrToolsTokenIsTaken) {
  GraspdProcess graspd{GraspdOptions{admin_env(), {}}};
  ASSERT_TRUE(graspd.start()) << graspd.stderr_text();
  // Not the method nostr-tools calls below: a token signed here in the same second for the same
  // body would be the same event, refused as a replay.
  auto body = body_of("listbannedevents");
  auto expect_401 = [&](const std::string& authorization, const char* what) {
    auto answer = post_rpc(graspd.port(), authorization, body);
    EXPECT_EQ(answer.status, 401) << what;
    EXPECT_EQ(answer.body, unauthorized) << what;
  };
  expect_401("", "no header");
  auto wrong_payload = token_for(graspd, body);
  wrong_payload.payload_of = body_of("banpubkey");
  expect_401(http_auth_header(wrong_payload), "wrong payload");
  auto wrong_u = token_for(graspd, body);
  wrong_u.url = "https://relay.example.com/";
  expect_401(http_auth_header(wrong_u), "wrong u");
  auto old = token_for(graspd, body);
  old.created_at -= 120;
  expect_401(http_auth_header(old), "2 minutes old");
  expect_401(http_auth_header(token_for(graspd, body, stranger_key)), "not an admin");
  auto header = http_auth_header(token_for(graspd, body));
  auto first = post_rpc(graspd.port(), header, body);
  EXPECT_EQ(first.status, 200) << first.body;
  EXPECT_EQ(first.header("content-type"), "application/nostr+json+rpc");
  expect_401(header, "reused");

  auto listed = call_with_nostr_tools(graspd, "supportedmethods");
  EXPECT_EQ(listed.rfind("200 ", 0), 0u) << listed;
  EXPECT_NE(listed.find("\"banevent\""), std::string::npos) << listed;
  // NGIT_REPOSITORY_WHITELIST has no npub entry: no allow list to manage.
  EXPECT_EQ(listed.find("allowpubkey"), std::string::npos) << listed;
  auto unknown = call(graspd, "blockip", {"198.51.100.7"});
  EXPECT_EQ(unknown.status, 200);
  EXPECT_EQ(unknown.body, R"({"result":null,"error":"unsupported method"})");
  // POST / without the management content type stays 405.
  EXPECT_EQ(http_request(graspd.port(), "POST", "/").status, 405);

  auto metrics = http_get(graspd.port(), "/metrics").body;
  EXPECT_EQ(metric_value(metrics,
                         "graspd_admin_calls_total{method=\"listbannedevents\","
                         "outcome=\"unauthorized\"}"),
            6)
      << metrics;
  EXPECT_NE(http_get(graspd.port(), "/", {{"Accept", "application/nostr+json"}}).body.find(",86"),
            std::string::npos);
  EXPECT_EQ(graspd.stop(), 0) << graspd.stderr_text();
}

TEST(AdminE2E, BansApplyAtOnceBannedEventsGoAndTheListsSurviveARestart) {
  GraspdProcess graspd{GraspdOptions{admin_env(), {}}};
  ASSERT_TRUE(graspd.start()) << graspd.stderr_text();
  auto relay = graspd.relay_url();
  auto repo = announcement_listing({relay}, "demo", now_seconds() - 100);
  auto issue = issue_for(nostr::address_of(repo), 0, now_seconds() - 50);
  publish_all(graspd.port(), {repo, issue});

  // banpubkey through nostr-tools, then that key's EVENT.
  auto spammer = pubkey_of(0x63);
  auto banned =
      call_with_nostr_tools(graspd, "banpubkey", "[\"" + nostr::to_hex(spammer) + "\",\"spam\"]");
  EXPECT_EQ(banned, "200 {\"result\":true,\"error\":null}\n");
  auto client = TestClient::connect(graspd.port());
  ASSERT_TRUE(client);
  auto ok = client->publish(
      make_event(1621, "spam", {{"a", nostr::address_of(repo)}}, now_seconds(), 0x63));
  ASSERT_TRUE(ok);
  EXPECT_FALSE(ok->accepted);
  EXPECT_EQ(ok->message.rfind("blocked:", 0), 0u) << ok->message;

  // banevent: the stored issue goes, and is refused when published again.
  EXPECT_EQ(call(graspd, "banevent", {nostr::to_hex(issue.id), "off topic"}).status, 200);
  auto left = client->query("gone", R"({"ids":[")" + nostr::to_hex(issue.id) + R"("]})");
  ASSERT_TRUE(left);
  EXPECT_TRUE(left->empty());
  ok = client->publish(issue);
  ASSERT_TRUE(ok);
  EXPECT_FALSE(ok->accepted);
  EXPECT_EQ(ok->message.rfind("blocked:", 0), 0u) << ok->message;
  client.reset();

  ASSERT_TRUE(graspd.restart()) << graspd.stderr_text();
  auto pubkeys = call(graspd, "listbannedpubkeys");
  EXPECT_EQ(pubkeys.body, R"({"result":[{"pubkey":")" + nostr::to_hex(spammer) +
                              R"(","reason":"spam"}],"error":null})");
  auto events = call(graspd, "listbannedevents");
  EXPECT_NE(events.body.find(nostr::to_hex(issue.id)), std::string::npos) << events.body;
  client = TestClient::connect(graspd.port());
  ASSERT_TRUE(client);
  ok = client->publish(issue);
  ASSERT_TRUE(ok);
  EXPECT_FALSE(ok->accepted) << "the ban holds after a restart";
  EXPECT_EQ(graspd.stop(), 0) << graspd.stderr_text();
}

TEST(AdminE2E, ABannedKeysEventsAreRefusedOnTheSyncPath) {
  GraspdProcess peer{GraspdOptions{{{"NGIT_SYNC_ENABLED", "false"}}, {}}};
  ASSERT_TRUE(peer.start()) << peer.stderr_text();
  auto env = fast_sync_env();
  env.emplace_back("NGIT_OWNER_NPUB", nostr::encode_npub(pubkey_of(operator_key)));
  GraspdProcess node{GraspdOptions{env, {}}};
  ASSERT_TRUE(node.start()) << node.stderr_text();

  auto t = now_seconds() - 1000;
  auto repo = announcement_listing({node.relay_url(), peer.relay_url()}, "demo", t);
  auto kept = issue_for(nostr::address_of(repo), 0, t + 10);    // key 20
  auto banned = issue_for(nostr::address_of(repo), 1, t + 11);  // key 21
  auto ban = call(node, "banpubkey", {nostr::to_hex(banned.pubkey)});
  ASSERT_EQ(ban.status, 200) << ban.body;
  publish_all(peer.port(), {repo, kept, banned});
  publish_all(node.port(), {repo});

  // The announcement lists the peer: the node fetches the repository's issues from it.
  ASSERT_TRUE(wait_until(
      [&] {
        return stored_count(node.port(), {kept}) == 1 &&
               metric_value(http_get(node.port(), "/metrics").body,
                            "graspd_policy_rule_total{rule=\"event_blacklisted\"}") >= 1;
      },
      30s))
      << node.stderr_text();
  EXPECT_EQ(stored_count(node.port(), {banned}), 0u);
  EXPECT_EQ(node.stop(), 0) << node.stderr_text();
  EXPECT_EQ(peer.stop(), 0) << peer.stderr_text();
}

}  // namespace
}  // namespace graspd::test
