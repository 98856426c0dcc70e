#include "runtime/net/nip11.hpp"

#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include <algorithm>
#include <map>
#include <vector>

#include "messages/nostr/event.hpp"
#include "messages/nostr/nip19.hpp"
#include "messages/nostr/verify.hpp"
#include "runtime/net/nip05.hpp"
#include "runtime/net/relay_client.hpp"
#include "runtime/ops/version.hpp"

namespace graspd::runtime {
namespace {

constexpr const char* npub = "npub10elfcs4fr0l0r8af98jlmgdh9c8tcxjvz9qkw038js35mp4dma8qzvjptg";
constexpr const char* npub_hex = "7e7e9c42a91bfef19fa929e5fda1b72e0ebc1a4c1141673e2794234d86addf4e";

Config config_with(const std::map<std::string, std::string>& env) {
  auto loaded = load_config({}, [&](std::string_view name) -> std::optional<std::string> {
    auto it = env.find(std::string(name));
    if (it == env.end()) return std::nullopt;
    return it->second;
  });
  return loaded.value().config;
}

rapidjson::Document parse(const std::string& json) {
  rapidjson::Document document;
  document.Parse(json.c_str(), json.size());
  EXPECT_FALSE(document.HasParseError()) << json;
  return document;
}

TEST(Nip11, Grasp03OnlyWhileSyncPlusRuns) {
  auto grasps = [](const std::map<std::string, std::string>& env) {
    auto document = parse(build_nip11_document(config_with(env)));
    std::vector<std::string> out;
    for (const auto& grasp : document["supported_grasps"].GetArray())
      out.emplace_back(grasp.GetString());
    return out;
  };
  EXPECT_EQ(grasps({}), (std::vector<std::string>{"GRASP-01", "GRASP-02", "GRASP-03"}));
  EXPECT_EQ(grasps({{"NGIT_SYNC_PLUS_ENABLED", "false"}}),
            (std::vector<std::string>{"GRASP-01", "GRASP-02"}));
  // The overlay extends the GRASP-02 manager: without it, it does not run.
  EXPECT_EQ(grasps({{"NGIT_SYNC_ENABLED", "false"}}), (std::vector<std::string>{"GRASP-01"}));
}

TEST(Nip11, ArchivesAddGrasp05AndEveryCurationRuleIsAdvertised) {
  auto document_of = [](const std::map<std::string, std::string>& env) {
    return parse(build_nip11_document(config_with(env)));
  };
  auto grasps = [](const rapidjson::Document& document) {
    std::vector<std::string> out;
    for (const auto& grasp : document["supported_grasps"].GetArray())
      out.emplace_back(grasp.GetString());
    return out;
  };
  auto curation = [](const rapidjson::Document& document) {
    return document.HasMember("curation") ? std::string(document["curation"].GetString())
                                          : std::string("(none)");
  };
  auto plain = document_of({});
  EXPECT_EQ(curation(plain), "(none)");
  auto all = document_of({{"NGIT_ARCHIVE_ALL", "true"}});
  EXPECT_EQ(grasps(all),
            (std::vector<std::string>{"GRASP-01", "GRASP-02", "GRASP-03", "GRASP-05"}));
  EXPECT_EQ(curation(all), "Read-only sync of all repositories found on network");
  EXPECT_EQ(curation(document_of({{"NGIT_ARCHIVE_WHITELIST", npub}})),
            "Read-only sync of whitelisted repositories and maintainers");
  // ngit-grasp omits it here although the relay curates; graspd says what it archives.
  EXPECT_EQ(curation(document_of({{"NGIT_ARCHIVE_GRASP_SERVICES", "a.example,b.example:8443"}})),
            "Read-only sync of repositories hosted on a.example, b.example:8443");
  EXPECT_EQ(curation(document_of({{"NGIT_REPOSITORY_WHITELIST", "repo"}})),
            "Accepts only whitelisted repositories and maintainers that list this service");
  EXPECT_EQ(curation(document_of({{"NGIT_REPOSITORY_WHITELIST", "repo"},
                                  {"NGIT_ARCHIVE_ALL", "true"},
                                  {"NGIT_ARCHIVE_READ_ONLY", "false"}})),
            "Accepts only whitelisted repositories and maintainers that list this service, and "
            "archives all repositories found on network");
  EXPECT_EQ(curation(document_of({{"NGIT_REPOSITORY_BLACKLIST", "spam"}})),
            "Refuses the repositories on its blacklist");
  EXPECT_EQ(curation(document_of({{"NGIT_EVENT_BLACKLIST", npub}})),
            "Refuses events of blacklisted authors");
  std::string criteria = all["repo_acceptance_criteria"].GetString();
  EXPECT_NE(criteria.find("as archives"), std::string::npos) << criteria;
  EXPECT_EQ(grasps(document_of({{"NGIT_ACCEPTANCE_POLICY", "open"}, {"NGIT_ARCHIVE_ALL", "true"}}))
                .size(),
            2u)
      << "an open relay applies no GRASP-01 policy, so no archive rule either";
}

TEST(Nip11, DocumentFromDefaults) {
  auto document = parse(build_nip11_document(config_with({})));
  ASSERT_TRUE(document.IsObject());
  EXPECT_STREQ(document["name"].GetString(), "graspd");
  EXPECT_TRUE(document["description"].IsString());
  EXPECT_FALSE(document.HasMember("pubkey"));
  EXPECT_TRUE(document["software"].IsString());
  EXPECT_EQ(std::string(document["version"].GetString()), version());
  const auto& nips = document["supported_nips"];
  ASSERT_TRUE(nips.IsArray());
  std::vector<int> listed;
  for (const auto& nip : nips.GetArray()) listed.push_back(nip.GetInt());
  EXPECT_TRUE(std::is_sorted(listed.begin(), listed.end()));
  EXPECT_NE(std::find(listed.begin(), listed.end(), 1), listed.end());
  EXPECT_NE(std::find(listed.begin(), listed.end(), 11), listed.end());
  EXPECT_NE(std::find(listed.begin(), listed.end(), 62), listed.end());  // requests to vanish
  // NIP-86: the management API (POST / with application/nostr+json+rpc).
  EXPECT_NE(std::find(listed.begin(), listed.end(), 86), listed.end());
  ASSERT_TRUE(document["supported_grasps"].IsArray());
  // GRASP-01 (policy on by default), GRASP-02 (sync on by default) and GRASP-03 (Sync+ on by
  // default).
  ASSERT_EQ(document["supported_grasps"].Size(), 3u);
  EXPECT_STREQ(document["supported_grasps"][0].GetString(), "GRASP-01");
  EXPECT_STREQ(document["supported_grasps"][1].GetString(), "GRASP-02");
  EXPECT_STREQ(document["supported_grasps"][2].GetString(), "GRASP-03");
  ASSERT_TRUE(document["repo_acceptance_criteria"].IsString());
  EXPECT_NE(std::string(document["repo_acceptance_criteria"].GetString()).find("30617"),
            std::string::npos);
  EXPECT_EQ(document["limitation"]["max_message_length"].GetInt64(), 1048576);
  for (int nip : {42, 70})
    EXPECT_NE(std::find(listed.begin(), listed.end(), nip), listed.end()) << nip;
  EXPECT_FALSE(document["limitation"]["auth_required"].GetBool());
  EXPECT_TRUE(document["limitation"]["restricted_writes"].GetBool());
}

TEST(Nip11, ASyncingGraspdReadsTheLimitsThisOneAdvertises) {
  auto limits =
      parse_peer_limits(build_nip11_document(config_with({{"NGIT_MAX_SUBSCRIPTION_VALUES", "5000"},
                                                          {"NGIT_MAX_SUBSCRIPTIONS", "30"},
                                                          {"NGIT_MAX_FILTERS", "7"}})));
  EXPECT_EQ(limits.max_subscription_values, 5000u);
  EXPECT_EQ(limits.max_subscriptions, 30u);
  EXPECT_EQ(limits.max_filters, 7u);
  EXPECT_EQ(limits.nip77, true);
  EXPECT_EQ(parse_peer_limits(R"({"limitation": {"max_subscription_values": -1}})")
                .max_subscription_values,
            0u)
      << "a value that is not a count is not advertised";
}

TEST(Nip11, ConfiguredFields) {
  auto document = parse(build_nip11_document(config_with({{"NGIT_RELAY_NAME", "My \"relay\""},
                                                          {"NGIT_RELAY_DESCRIPTION", "desc"},
                                                          {"NGIT_OWNER_NPUB", npub},
                                                          {"NGIT_MAX_MESSAGE_BYTES", "4096"}})));
  EXPECT_STREQ(document["name"].GetString(), "My \"relay\"");
  EXPECT_STREQ(document["description"].GetString(), "desc");
  EXPECT_STREQ(document["pubkey"].GetString(), npub_hex);
  EXPECT_EQ(document["limitation"]["max_message_length"].GetInt64(), 4096);
}

TEST(Nip11, SelfIsTheRelayKeyPubkeyTheOperatorElseTheRelayKey) {
  // Without a resolved relay key (check-config, tests) neither is published.
  EXPECT_FALSE(parse(build_nip11_document(config_with({}))).HasMember("self"));
  nostr::SecretKey secret{};
  secret[31] = 7;
  auto relay = *nostr::pubkey_from_secret(secret);
  auto relay_hex = nostr::to_hex(relay);
  auto config = config_with({});
  config.relay_key = RelayKey{secret, relay};
  auto alone = parse(build_nip11_document(config));
  EXPECT_EQ(std::string(alone["self"].GetString()), relay_hex);
  EXPECT_EQ(std::string(alone["pubkey"].GetString()), relay_hex);
  auto with_operator = config_with({{"NGIT_OWNER_NPUB", npub}});
  with_operator.relay_key = RelayKey{secret, relay};
  auto both = parse(build_nip11_document(with_operator));
  EXPECT_EQ(std::string(both["self"].GetString()), relay_hex);
  EXPECT_STREQ(both["pubkey"].GetString(), npub_hex);
}

TEST(Nip05, UnderscoreIsTheRelayKeyAnyOtherNameNothing) {
  auto config = config_with({{"NGIT_DOMAIN", "Relay.Example:8443"}});
  EXPECT_EQ(nip05_json(config, std::nullopt), R"({"names":{}})") << "no key, no name";
  nostr::SecretKey secret{};
  secret[31] = 7;
  auto relay = *nostr::pubkey_from_secret(secret);
  config.relay_key = RelayKey{secret, relay};
  auto hex = nostr::to_hex(relay);
  const auto itself = R"({"names":{"_":")" + hex + R"("},"relays":{")" + hex +
                      R"(":["wss://Relay.Example:8443"]}})";
  EXPECT_EQ(nip05_json(config, std::nullopt), itself);
  EXPECT_EQ(nip05_json(config, std::string("_")), itself);
  EXPECT_EQ(nip05_json(config, std::string("bob")), R"({"names":{}})");
}

TEST(Nip11, InformationIsDataDriven) {
  RelayInformation info;
  info.name = "n";
  info.supported_nips = {1, 9, 11};
  info.supported_grasps = {"GRASP-01", "GRASP-02"};
  info.limitation = {{"max_subscriptions", 20}, {"max_limit", 500}};
  auto document = parse(nip11_json(info));
  EXPECT_EQ(document["supported_nips"].Size(), 3u);
  EXPECT_STREQ(document["supported_grasps"][1].GetString(), "GRASP-02");
  EXPECT_EQ(document["limitation"]["max_subscriptions"].GetInt64(), 20);
  EXPECT_EQ(document["limitation"]["max_limit"].GetInt64(), 500);
}

std::optional<std::string> decode_npub_hex(std::string_view text) {
  auto key = nostr::decode_npub(text);
  if (!key) return std::nullopt;
  return nostr::to_hex(*key);
}

TEST(Npub, DecodesValidKeys) {
  EXPECT_EQ(decode_npub_hex(npub), npub_hex);
  std::string upper = npub;
  for (auto& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  EXPECT_EQ(decode_npub_hex(upper), npub_hex);
}

TEST(Npub, RejectsInvalidKeys) {
  std::string text = npub;
  EXPECT_FALSE(decode_npub_hex(""));
  EXPECT_FALSE(decode_npub_hex(text.substr(0, 62)));
  std::string bad_checksum = text;
  bad_checksum.back() = 'q';
  EXPECT_FALSE(decode_npub_hex(bad_checksum));
  std::string wrong_prefix = text;
  wrong_prefix[1] = 's';
  EXPECT_FALSE(decode_npub_hex(wrong_prefix));
  std::string bad_char = text;
  bad_char[10] = 'b';  // 'b' is not in the bech32 charset
  EXPECT_FALSE(decode_npub_hex(bad_char));
  std::string mixed_case = text;
  mixed_case[20] = static_cast<char>(std::toupper(static_cast<unsigned char>(mixed_case[20])));
  if (mixed_case != text) {
    EXPECT_FALSE(decode_npub_hex(mixed_case));
  }
}

}  // namespace
}  // namespace graspd::runtime
