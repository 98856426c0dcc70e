// The relay's own key end to end (docs/identity.md): generated into a 0600 file with a warning
// naming its npub, kept across a restart, NIP-11 `self`/`pubkey`, NIP-05 at
// /.well-known/nostr.json, a configured key, and the configuration errors that stop the start.
#include <gtest/gtest.h>
#include <rapidjson/document.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "messages/nostr/nip19.hpp"
#include "messages/nostr/verify.hpp"
#include "tests/integration/relay_test_helpers.hpp"
#include "tests/support/graspd_process.hpp"
#include "tests/support/http_client.hpp"
#include "tests/support/wait_until.hpp"

namespace graspd::test {
namespace {

using Env = std::vector<std::pair<std::string, std::string>>;

constexpr const char* identity_nsec =
    "nsec1vl029mgpspedva04g90vltkh6fvh240zqtv9k0t9af8935ke9laqsnlfe5";
constexpr const char* identity_operator_npub =
    "npub10elfcs4fr0l0r8af98jlmgdh9c8tcxjvz9qkw038js35mp4dma8qzvjptg";
constexpr const char* identity_operator_hex =
    "7e7e9c42a91bfef19fa929e5fda1b72e0ebc1a4c1141673e2794234d86addf4e";

std::string file_text(const std::string& path) {
  std::ifstream file(path);
  std::ostringstream text;
  text << file.rdbuf();
  return text.str();
}

/// The public key of the secret in `text` (nsec or hex), hex; empty when it holds none.
std::string pubkey_hex_of(const std::string& text) {
  auto secret = nostr::parse_secret_key(text);
  if (!secret) return {};
  auto pubkey = nostr::pubkey_from_secret(*secret);
  return pubkey ? nostr::to_hex(*pubkey) : std::string{};
}

rapidjson::Document nip11_of(std::uint16_t port) {
  auto reply = http_get(port, "/", {{"Accept", "application/nostr+json"}});
  EXPECT_EQ(reply.status, 200) << reply.error;
  rapidjson::Document document;
  document.Parse(reply.body.c_str(), reply.body.size());
  EXPECT_TRUE(!document.HasParseError() && document.IsObject()) << reply.body;
  return document;
}

/// The relay key's kind 0 and 10002 stored on the relay at `port`, by kind (kind 0 first).
std::vector<nostr::Event> profile_on(std::uint16_t port, const std::string& relay_hex) {
  auto client = TestClient::connect(port);
  if (!client) return {};
  auto events = client->query("p", R"({"authors":[")" + relay_hex + R"("],"kinds":[0,10002]})");
  if (!events) return {};
  std::sort(events->begin(), events->end(),
            [](const nostr::Event& a, const nostr::Event& b) { return a.kind < b.kind; });
  return *events;
}

std::size_t occurrences(const std::string& text, const std::string& needle) {
  std::size_t count = 0;
  for (auto at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1))
    ++count;
  return count;
}

/// One daemon given no key at all: it generates one.
class RelayIdentity : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    graspd_ = new GraspdProcess(
        {.env = {{"NGIT_DOMAIN", "relay.example"}, {"NGIT_SYNC_ENABLED", "false"}}, .args = {}});
    ASSERT_TRUE(graspd_->start()) << graspd_->stderr_text();
  }
  static void TearDownTestSuite() {
    delete graspd_;
    graspd_ = nullptr;
  }
  static std::string key_file() { return graspd_->work_dir() + "/relay-owner.nsec"; }
  static std::string relay_hex() { return pubkey_hex_of(file_text(key_file())); }
  static inline GraspdProcess* graspd_ = nullptr;
};

TEST_F(RelayIdentity, AGeneratedKeyIsWrittenTo0600AndTheWarningNamesItsNpub) {
  struct stat info {};
  ASSERT_EQ(::stat(key_file().c_str(), &info), 0) << "no key file at " << key_file();
  EXPECT_EQ(info.st_mode & 0777, 0600u);
  auto text = file_text(key_file());
  EXPECT_EQ(text.rfind("nsec1", 0), 0u);
  ASSERT_EQ(relay_hex().size(), 64u) << "the file holds no valid key";
  nostr::Pubkey pubkey{};
  ASSERT_TRUE(nostr::from_hex(relay_hex(), pubkey));
  auto log = graspd_->stderr_text();
  auto generated = log.find("generated a new one");
  ASSERT_NE(generated, std::string::npos) << log;
  auto start = log.rfind('\n', generated);
  start = start == std::string::npos ? 0 : start + 1;
  auto line = log.substr(start, log.find('\n', generated) - start);
  EXPECT_NE(line.find("WARN"), std::string::npos) << line;
  EXPECT_NE(line.find(nostr::encode_npub(pubkey)), std::string::npos) << line;
  EXPECT_NE(line.find(key_file()), std::string::npos) << line;
  EXPECT_EQ(log.find(text.substr(0, 20)), std::string::npos) << "the secret is never logged";
}

TEST_F(RelayIdentity, Nip11SelfAndPubkeyAreTheRelayKeyWithoutAnOperator) {
  auto document = nip11_of(graspd_->port());
  ASSERT_TRUE(document.HasMember("self"));
  EXPECT_EQ(std::string(document["self"].GetString()), relay_hex());
  EXPECT_EQ(std::string(document["pubkey"].GetString()), relay_hex());
}

TEST_F(RelayIdentity, Nip05NamesTheRelayKeyUnderscoreWithCorsAndNoRedirect) {
  const std::string expected = R"({"names":{"_":")" + relay_hex() + R"("},"relays":{")" +
                               relay_hex() + R"(":["wss://relay.example"]}})";
  for (const char* target : {"/.well-known/nostr.json?name=_", "/.well-known/nostr.json"}) {
    auto reply = http_get(graspd_->port(), target);
    EXPECT_EQ(reply.status, 200) << target << " " << reply.error;
    EXPECT_EQ(reply.header("Content-Type"), "application/json") << target;
    EXPECT_EQ(reply.header("Access-Control-Allow-Origin"), "*") << target;
    EXPECT_EQ(reply.header("Location"), "") << target;
    EXPECT_EQ(reply.body, expected) << target;
  }
  auto other = http_get(graspd_->port(), "/.well-known/nostr.json?name=bob");
  EXPECT_EQ(other.status, 200);
  EXPECT_EQ(other.body, R"({"names":{}})");
  EXPECT_EQ(other.header("Access-Control-Allow-Origin"), "*");
  auto head = http_request(graspd_->port(), "HEAD", "/.well-known/nostr.json?name=_");
  EXPECT_EQ(head.status, 200);
  EXPECT_EQ(head.body, "");
  auto options = http_request(graspd_->port(), "OPTIONS", "/.well-known/nostr.json");
  EXPECT_EQ(options.status, 204);
  EXPECT_EQ(options.header("Access-Control-Allow-Origin"), "*");
}

TEST_F(RelayIdentity, ARestartKeepsTheKey) {
  auto before = relay_hex();
  ASSERT_TRUE(graspd_->restart()) << graspd_->stderr_text();
  EXPECT_EQ(relay_hex(), before);
  EXPECT_EQ(std::string(nip11_of(graspd_->port())["self"].GetString()), before);
  auto nip05 = http_get(graspd_->port(), "/.well-known/nostr.json?name=_");
  EXPECT_NE(nip05.body.find(before), std::string::npos) << nip05.body;
  EXPECT_EQ(occurrences(graspd_->stderr_text(), "generated a new one"), 1u)
      << "the second run reads the file: " << graspd_->stderr_text();
}

TEST_F(RelayIdentity, WithoutIndexRelaysTheProfileIsNeitherPublishedNorStored) {
  EXPECT_NE(graspd_->stderr_text().find("neither published nor stored"), std::string::npos)
      << graspd_->stderr_text();
  auto client = TestClient::connect(graspd_->port());
  ASSERT_TRUE(client);
  auto stored = client->query("p", R"({"authors":[")" + relay_hex() + R"("]})");
  ASSERT_TRUE(stored);
  EXPECT_TRUE(stored->empty());
}

TEST(RelayIdentityPublishing, TheProfileReachesTheIndexRelayAndIsNotSentAgainUnchanged) {
  GraspdProcess index(relay_options());
  ASSERT_TRUE(index.start()) << index.stderr_text();
  GraspdProcess graspd({.env = {{"NGIT_DOMAIN", "relay-a.example"},
                                {"NGIT_RELAY_NAME", "A relay"},
                                {"NGIT_RELAY_DESCRIPTION", "for tests"},
                                {"NGIT_RELAY_OWNER_NSEC", identity_nsec},
                                {"NGIT_SYNC_ALLOW_PRIVATE_ADDRESSES", "true"},
                                {"NGIT_SYNC_PLUS_USER_INDEX_RELAYS", index.relay_url()}},
                        .args = {}});
  ASSERT_TRUE(graspd.start()) << graspd.stderr_text();
  const auto relay_hex = pubkey_hex_of(identity_nsec);
  std::vector<nostr::Event> remote;
  ASSERT_TRUE(wait_until([&] {
    return (remote = profile_on(index.port(), relay_hex)).size() == 2;
  })) << graspd.stderr_text();
  EXPECT_EQ(remote[0].content,
            R"({"name":"A relay","about":"for tests","nip05":"_@relay-a.example"})");
  EXPECT_EQ(remote[1].tags, (nostr::Tags{{"r", "wss://relay-a.example"}}));
  auto local = profile_on(graspd.port(), relay_hex);
  ASSERT_EQ(local.size(), 2u);
  EXPECT_EQ(local[0].id, remote[0].id);
  EXPECT_EQ(local[1].id, remote[1].id);
  // Unchanged: the next start finds them there and sends nothing.
  ASSERT_TRUE(graspd.restart()) << graspd.stderr_text();
  ASSERT_TRUE(wait_until([&] {
    return graspd.stderr_text().find("relay profile up to date on") != std::string::npos;
  })) << graspd.stderr_text();
  auto after = profile_on(index.port(), relay_hex);
  ASSERT_EQ(after.size(), 2u);
  EXPECT_EQ(after[0].id, remote[0].id);
}

TEST(RelayIdentityConfig, AConfiguredKeyIsSelfTheOperatorStaysPubkeyNoFileIsWritten) {
  GraspdProcess graspd({.env = {{"NGIT_RELAY_OWNER_NSEC", identity_nsec},
                                {"NGIT_OWNER_NPUB", identity_operator_npub},
                                {"NGIT_SYNC_ENABLED", "false"}},
                        .args = {}});
  ASSERT_TRUE(graspd.start()) << graspd.stderr_text();
  auto document = nip11_of(graspd.port());
  EXPECT_EQ(std::string(document["self"].GetString()), pubkey_hex_of(identity_nsec));
  EXPECT_STREQ(document["pubkey"].GetString(), identity_operator_hex);
  EXPECT_FALSE(std::filesystem::exists(graspd.work_dir() + "/relay-owner.nsec"));
  EXPECT_EQ(graspd.stderr_text().find(identity_nsec), std::string::npos);
  EXPECT_EQ(graspd.stop(), 0);
}

TEST(RelayIdentityConfig, AKeyConfiguredEmptyOrInvalidStopsTheStartNamingTheOption) {
  auto empty = GraspdProcess::run_to_exit({}, Env{{"NGIT_RELAY_OWNER_NSEC", ""}});
  EXPECT_EQ(empty.exit_code, 2) << empty.stderr_text;
  EXPECT_EQ(empty.stderr_text,
            "graspd: invalid NGIT_RELAY_OWNER_NSEC \"\": expected a value (set empty: unset it "
            "instead)\n");
  auto typo = std::string(identity_nsec).substr(0, 60) + "qq";
  auto invalid = GraspdProcess::run_to_exit({}, Env{{"NGIT_RELAY_OWNER_NSEC", typo}});
  EXPECT_EQ(invalid.exit_code, 2) << invalid.stderr_text;
  EXPECT_EQ(invalid.stderr_text,
            "graspd: invalid NGIT_RELAY_OWNER_NSEC \"(elided)\": expected an nsec1... or 64-hex "
            "secret key\n");
  // No flag for it: the secret never goes in argv.
  auto flag = GraspdProcess::run_to_exit({"--relay-owner-nsec", identity_nsec});
  EXPECT_EQ(flag.exit_code, 2);
  EXPECT_EQ(flag.stderr_text.find(identity_nsec), std::string::npos);
}

TEST(RelayIdentityConfig, AnInvalidKeyFileStopsTheStartNamingTheOption) {
  TempDir dir{"graspd-identity"};
  auto path = dir.file("key.nsec");
  std::ofstream(path) << "not a key\n";
  auto result = GraspdProcess::run_to_exit(
      {"--bind-address", "127.0.0.1:0", "--relay-data-path", dir.file("relay")},
      Env{{"NGIT_RELAY_OWNER_NSEC_FILE", path}, {"NGIT_GIT_DATA_PATH", dir.file("git")}});
  EXPECT_EQ(result.exit_code, 2) << result.stderr_text;
  EXPECT_NE(result.stderr_text.find("invalid NGIT_RELAY_OWNER_NSEC_FILE \"" + path + "\""),
            std::string::npos)
      << result.stderr_text;
}

TEST(RelayIdentityConfig, CheckConfigElidesTheKeyAndShowsTheFile) {
  auto result = GraspdProcess::run_to_exit(
      {"check-config"},
      Env{{"NGIT_RELAY_OWNER_NSEC", identity_nsec}, {"NGIT_RELAY_OWNER_NSEC_FILE", "/srv/k"}});
  EXPECT_EQ(result.stdout_text.find(identity_nsec), std::string::npos) << result.stdout_text;
  EXPECT_NE(result.stdout_text.find("relay_owner_nsec = \"(elided)\""), std::string::npos)
      << result.stdout_text;
  EXPECT_NE(result.stdout_text.find("relay_owner_nsec_file = \"/srv/k\""), std::string::npos)
      << result.stdout_text;
}

}  // namespace
}  // namespace graspd::test
