// The value parsers behind the option table: each turns one option's text into the type the
// component that reads the option uses.
#include "runtime/config/config_values.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "messages/nostr/event.hpp"
#include "messages/nostr/nip19.hpp"
#include "runtime/config/config.hpp"
#include "tests/support/config_loading.hpp"

namespace graspd::runtime {
namespace {

constexpr const char* npub = "npub10elfcs4fr0l0r8af98jlmgdh9c8tcxjvz9qkw038js35mp4dma8qzvjptg";
constexpr const char* npub_hex = "7e7e9c42a91bfef19fa929e5fda1b72e0ebc1a4c1141673e2794234d86addf4e";

TEST(ConfigValues, BindAddressKeepsTheTextAndGivesTheResolverItsHost) {
  auto v6 = parse_bind_address("[::1]:8080");
  ASSERT_TRUE(v6);
  EXPECT_EQ(v6->text, "[::1]:8080");
  EXPECT_EQ(v6->host, "::1");
  EXPECT_EQ(v6->port, 8080);
  auto named = parse_bind_address("LocalHost:7000");
  ASSERT_TRUE(named);
  EXPECT_EQ(named->host, "LocalHost");
  auto any = parse_bind_address("0.0.0.0:0");
  ASSERT_TRUE(any);
  EXPECT_EQ(any->port, 0) << "port 0 = any free port";
  EXPECT_TRUE(parse_bind_address("[127.0.0.1]:80"));
}

TEST(ConfigValues, BindAddressRefusesWhatCannotBeBound) {
  for (const std::string& bad :
       std::vector<std::string>{"", "nonsense", "localhost", "1.2.3.4:99999", "host name:80",
                                "[::1]", "[nothex]:80", "[]:80", "a:b:80", ":80", "x:", "x:-1",
                                "ws://x:80", "x/y:80", std::string(254, 'a') + ":1"})
    EXPECT_FALSE(parse_bind_address(bad)) << bad;
}

TEST(ConfigValues, DomainIsParsedOnceForMatchingAndKeptAsWrittenForDisplay) {
  auto domain = parse_domain("Relay.Example.com:8443");
  ASSERT_TRUE(domain);
  EXPECT_EQ(domain->text, "Relay.Example.com:8443");
  EXPECT_EQ(domain->address, (HostPort{"relay.example.com", 8443}));
  auto v6 = parse_domain("[::1]");
  ASSERT_TRUE(v6);
  EXPECT_EQ(v6->address, (HostPort{"[::1]", std::nullopt}));
  for (const char* bad : {"", "https://relay.example.com", "x.com:0", "x.com/path", "[zz]", "a b"})
    EXPECT_FALSE(parse_domain(bad)) << bad;
}

TEST(ConfigValues, DomainOfABindAddress) {
  auto bind = *parse_bind_address("LocalHost:7334");
  auto same = domain_of(bind, 7334);
  EXPECT_EQ(same.text, "LocalHost:7334");
  EXPECT_EQ(same.address, (HostPort{"localhost", 7334}));
  auto v6 = *parse_bind_address("[::1]:0");
  auto bound = domain_of(v6, 4000);
  EXPECT_EQ(bound.text, "[::1]:4000");
  EXPECT_EQ(bound.address, (HostPort{"[::1]", 4000}));
  EXPECT_EQ(endpoint_text("::1", 80), "[::1]:80");
  EXPECT_EQ(endpoint_text("127.0.0.1", 80), "127.0.0.1:80");
}

TEST(ConfigValues, RepositoryRules) {
  auto key = *nostr::decode_npub(npub);
  auto one = parse_repository_rule(std::string(npub) + "/repo");
  ASSERT_TRUE(one);
  EXPECT_EQ(one->owner, key);
  EXPECT_EQ(one->identifier, "repo");
  auto owner = parse_repository_rule(npub);
  ASSERT_TRUE(owner);
  EXPECT_EQ(owner->owner, key);
  EXPECT_FALSE(owner->identifier);
  auto any_owner = parse_repository_rule("repo");
  ASSERT_TRUE(any_owner);
  EXPECT_FALSE(any_owner->owner);
  EXPECT_EQ(any_owner->identifier, "repo");
  for (const std::string& bad : std::vector<std::string>{"npub1notreally/x", "../etc", "..",
                                                         std::string(npub) + "/", "a\\b"})
    EXPECT_FALSE(parse_repository_rule(bad)) << bad;
}

TEST(ConfigValues, ScalarParsers) {
  EXPECT_EQ(parse_acceptance_mode("grasp01"), AcceptanceMode::grasp01);
  EXPECT_EQ(parse_acceptance_mode("open"), AcceptanceMode::open);
  EXPECT_FALSE(parse_acceptance_mode("Open"));
  EXPECT_EQ(parse_uint("0042"), 42u);
  EXPECT_FALSE(parse_uint("+1"));
  EXPECT_FALSE(parse_uint(" 1"));
  EXPECT_EQ(parse_bool("ON"), true);
  EXPECT_EQ(parse_bool("no"), false);
  EXPECT_FALSE(parse_bool("maybe"));
  EXPECT_EQ(trim("  x y \t"), "x y");
}

using test::load;
using test::load_ok;

TEST(ConfigValues, ListsArriveParsedInTheConfig) {
  auto config = load_ok({"--event-blacklist", std::string(npub) + ", " + std::string(64, 'A'),
                         "--repository-whitelist", std::string(npub) + "/repo, other",
                         "--sync-plus-fallback-relays", "WSS://One.Example/, ws://two:7"});
  nostr::Pubkey all_a{};
  all_a.fill(0xaa);
  EXPECT_EQ(config.event_blacklist, (std::set<nostr::Pubkey>{*nostr::decode_npub(npub), all_a}));
  ASSERT_EQ(config.repository_whitelist.size(), 2u);
  EXPECT_EQ(nostr::to_hex(*config.repository_whitelist[0].owner), npub_hex);
  EXPECT_EQ(config.repository_whitelist[0].identifier, "repo");
  EXPECT_EQ(config.repository_whitelist[1], (policy::RepositoryRule{std::nullopt, "other"}));
  ASSERT_EQ(config.sync_plus_fallback_relays.size(), 2u);
  EXPECT_EQ(config.sync_plus_fallback_relays[0].str(), "wss://one.example");
  EXPECT_EQ(config.sync_plus_fallback_relays[1].str(), "ws://two:7");
}

TEST(ConfigValues, ListErrorsNameTheItem) {
  auto error = [](const std::vector<std::string>& args) {
    auto result = load(args);
    return !result.ok() ? result.error().message : std::string("(loaded)");
  };
  EXPECT_EQ(error({"--repository-blacklist", "good, npub1notreally/x"}),
            "invalid --repository-blacklist \"good, npub1notreally/x\": expected comma separated "
            "npub, npub/identifier or identifier entries (item \"npub1notreally/x\")");
  EXPECT_EQ(error({"--repository-whitelist", "../etc"}),
            "invalid --repository-whitelist \"../etc\": expected comma separated npub, "
            "npub/identifier or identifier entries (item \"../etc\")");
  EXPECT_EQ(error({"--event-blacklist", std::string(npub_hex) + ",zz"}),
            "invalid --event-blacklist \"" + std::string(npub_hex) +
                ",zz\": expected comma separated npubs or 64-hex public keys (item \"zz\")");
}

TEST(ConfigValues, OwnerAndAcceptancePolicyArriveParsed) {
  auto config = load_ok({"--owner-npub", npub, "--acceptance-policy", "open"});
  ASSERT_TRUE(config.owner_npub);
  EXPECT_EQ(nostr::to_hex(*config.owner_npub), npub_hex);
  EXPECT_EQ(config.acceptance_policy, AcceptanceMode::open);
}

TEST(ConfigValues, TheBoundPortReplacesPortZero) {
  auto any = load_ok({"--bind-address", "0.0.0.0:0"});
  EXPECT_EQ(any.domain.text, "0.0.0.0:0");
  adopt_bound_port(any, 4321);
  EXPECT_EQ(any.bind_address.port, 4321);
  EXPECT_EQ(any.domain.text, "0.0.0.0:4321");
  EXPECT_EQ(any.domain.address, (HostPort{"0.0.0.0", 4321}));

  auto named = load_ok({"--bind-address", "0.0.0.0:0", "--domain", "relay.example.com"});
  adopt_bound_port(named, 4321);
  EXPECT_EQ(named.domain.text, "relay.example.com") << "a configured domain stays";

  auto fixed = load_ok({"--bind-address", "127.0.0.1:7334"});
  adopt_bound_port(fixed, 7334);
  EXPECT_EQ(fixed.domain.text, "127.0.0.1:7334");
}

}  // namespace
}  // namespace graspd::runtime
