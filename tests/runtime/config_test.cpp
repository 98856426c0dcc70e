#include "runtime/config/config.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>

#include "tests/support/config_loading.hpp"
#include "tests/support/temp_dir.hpp"

namespace graspd::runtime {
namespace {

using test::Env;
using test::load_ok;
using test::lookup;

std::string load_error(const std::vector<std::string>& args, const Env& env = {}) {
  auto result = load_config(args, lookup(env));
  if (!result) return result.error().message;
  ADD_FAILURE() << "expected a configuration error";
  return {};
}

/// A configuration file with `text`, in a temporary directory of its own.
class TempFile {
 public:
  explicit TempFile(const std::string& text) : path_(dir_.file("graspd.conf")) {
    std::ofstream(path_) << text;
  }
  const std::string& path() const { return path_; }

 private:
  test::TempDir dir_{"graspd-config-test"};
  std::string path_;
};

TEST(Config, DefaultsMatchTheProtocolTable) {
  auto config = load_ok({});
  EXPECT_EQ(config.bind_address.text, "127.0.0.1:7334");
  EXPECT_EQ(config.bind_address.host, "127.0.0.1");
  EXPECT_EQ(config.bind_address.port, 7334);
  EXPECT_EQ(config.domain.text, "127.0.0.1:7334");
  EXPECT_EQ(config.domain.address, (HostPort{"127.0.0.1", 7334}));
  EXPECT_EQ(config.acceptance_policy, AcceptanceMode::grasp01);
  EXPECT_FALSE(config.owner_npub);
  EXPECT_EQ(config.data_path, "./data/relay");
  EXPECT_EQ(config.log_level, log::Level::info);
  EXPECT_TRUE(config.metrics_enabled);
  EXPECT_EQ(config.max_connections, 0u);
  EXPECT_EQ(config.max_connections_per_ip, 256u) << "one address cannot take every connection";
  EXPECT_EQ(config.max_message_bytes, 1048576u);
  EXPECT_EQ(config.max_event_bytes, 524288u);
  EXPECT_TRUE(config.event_blacklist.empty());
  EXPECT_TRUE(config.sync_enabled);
  EXPECT_FALSE(config.sync_bootstrap_relay_url);
  EXPECT_EQ(config.sync_base_backoff_secs, 5u);
  EXPECT_EQ(config.sync_max_backoff_secs, 3600u);
  EXPECT_EQ(config.sync_batch_window_ms, 5000u);
  EXPECT_EQ(config.sync_quick_reconnect_secs, 900u);
  EXPECT_EQ(config.sync_consolidation_threshold, 70u);
  EXPECT_EQ(config.sync_daily_resync_min_secs, 82800u);
  EXPECT_EQ(config.sync_daily_resync_max_secs, 90000u);
  EXPECT_EQ(config.sync_disconnect_check_interval_secs, 60u);
  EXPECT_EQ(config.sync_dead_after_secs, 86400u);
  EXPECT_EQ(config.sync_rate_limit_cooldown_secs, 65u);
  EXPECT_FALSE(config.sync_allow_private_addresses);
  EXPECT_TRUE(config.sync_plus_enabled);
  EXPECT_TRUE(config.sync_plus_user_index_relays.empty());
  EXPECT_EQ(config.sync_plus_reconcile_secs, 60u);
  EXPECT_EQ(config.sync_plus_refresh_secs, 86400u);
  EXPECT_EQ(config.sync_plus_retry_secs, 300u);
}

TEST(Config, FlagBeatsEnvironmentBeatsFileBeatsDefault) {
  TempFile file(
      "# comment line\n"
      "relay_name = from-file\n"
      "relay_description = \"quoted file value\"  # trailing comment\n"
      "\n"
      "log_level = debug\n"
      "max_connections = 7\n");
  Env env{{"NGIT_RELAY_NAME", "from-env"}, {"NGIT_LOG_LEVEL", "warn"}};
  auto config = load_ok({"--config", file.path(), "--log-level=error"}, env);
  EXPECT_EQ(config.relay_name, "from-env");
  EXPECT_EQ(config.relay_description, "quoted file value");
  EXPECT_EQ(config.log_level, log::Level::error);
  EXPECT_EQ(config.max_connections, 7u);
  EXPECT_EQ(config.max_event_bytes, 524288u);
  EXPECT_EQ(config.config_file, file.path());
}

TEST(Config, ConfigFileFromEnvironment) {
  TempFile file("relay_name = named\n");
  auto config = load_ok({}, {{"GRASPD_CONFIG", file.path()}});
  EXPECT_EQ(config.relay_name, "named");
}

TEST(Config, FlagsTakeSeparateOrInlineValues) {
  auto config = load_ok({"--relay-name", "a b", "--metrics-enabled=false", "--sync-enabled", "no"});
  EXPECT_EQ(config.relay_name, "a b");
  EXPECT_FALSE(config.metrics_enabled);
  EXPECT_FALSE(config.sync_enabled);
}

TEST(Config, BadBindAddressNamesOptionValueAndExpectation) {
  EXPECT_EQ(load_error({}, {{"NGIT_BIND_ADDRESS", "nonsense"}}),
            "invalid NGIT_BIND_ADDRESS \"nonsense\": expected host:port");
  EXPECT_EQ(load_error({"--bind-address", "1.2.3.4:99999"}),
            "invalid --bind-address \"1.2.3.4:99999\": expected host:port");
  EXPECT_EQ(load_error({}, {{"NGIT_BIND_ADDRESS", "host name:80"}}),
            "invalid NGIT_BIND_ADDRESS \"host name:80\": expected host:port");
}

TEST(Config, BindAddressForms) {
  auto v6 = load_ok({"--bind-address", "[::1]:8080"});
  EXPECT_EQ(v6.bind_address.host, "::1");
  EXPECT_EQ(v6.bind_address.port, 8080);
  auto any = load_ok({"--bind-address", "0.0.0.0:0"});
  EXPECT_EQ(any.bind_address.port, 0);
  auto named = load_ok({"--bind-address", "localhost:7000"});
  EXPECT_EQ(named.bind_address.host, "localhost");
}

TEST(Config, DomainDefaultsToBindAddressUnlessSet) {
  EXPECT_EQ(load_ok({"--bind-address", "0.0.0.0:9000"}).domain.text, "0.0.0.0:9000");
  EXPECT_EQ(load_ok({"--domain", "relay.example.com"}).domain.text, "relay.example.com");
  EXPECT_NE(load_error({"--domain", "https://relay.example.com"}).find("--domain"),
            std::string::npos);
}

TEST(Config, UnknownLogLevel) {
  EXPECT_EQ(load_error({}, {{"NGIT_LOG_LEVEL", "loud"}}),
            "invalid NGIT_LOG_LEVEL \"loud\": expected one of trace, debug, info, warn, error");
}

TEST(Config, BadNumbers) {
  EXPECT_EQ(load_error({}, {{"NGIT_MAX_CONNECTIONS", "many"}}),
            "invalid NGIT_MAX_CONNECTIONS \"many\": expected an integer from 0 to "
            "18446744073709551615");
  EXPECT_NE(load_error({}, {{"NGIT_MAX_MESSAGE_BYTES", "-1"}}).find("NGIT_MAX_MESSAGE_BYTES"),
            std::string::npos);
  EXPECT_NE(load_error({}, {{"NGIT_SYNC_BASE_BACKOFF_SECS", "0"}}).find("expected an integer"),
            std::string::npos);
  EXPECT_NE(load_error({}, {{"NGIT_MAX_EVENT_BYTES", "12abc"}}).find("\"12abc\""),
            std::string::npos);
}

TEST(Config, BadBoolean) {
  EXPECT_EQ(load_error({}, {{"NGIT_METRICS_ENABLED", "maybe"}}),
            "invalid NGIT_METRICS_ENABLED \"maybe\": expected true or false");
}

TEST(Config, CrossOptionChecks) {
  auto message = load_error({}, {{"NGIT_SYNC_DAILY_RESYNC_MIN_SECS", "100000"}});
  EXPECT_NE(message.find("NGIT_SYNC_DAILY_RESYNC_MIN_SECS"), std::string::npos);
  EXPECT_NE(load_error({"--sync-base-backoff-secs=9999"}).find("NGIT_SYNC_BASE_BACKOFF_SECS"),
            std::string::npos);
}

TEST(Config, ArchiveOptionsFollowNgitGraspsNamesDefaultsAndFatalCombinations) {
  auto none = load_ok({}, {});
  EXPECT_FALSE(none.archive_all);
  EXPECT_FALSE(none.archive_read_only);
  // Read-only is in effect as soon as an archive source is set, unless turned off.
  EXPECT_TRUE(load_ok({}, {{"NGIT_ARCHIVE_ALL", "true"}}).archive_read_only);
  auto services =
      load_ok({}, {{"NGIT_ARCHIVE_GRASP_SERVICES", "git.example.com, Other.Example:8443"},
                   {"NGIT_ARCHIVE_READ_ONLY", "false"}});
  EXPECT_FALSE(services.archive_read_only);
  ASSERT_EQ(services.archive_grasp_services.size(), 2u);
  EXPECT_EQ(services.archive_grasp_services[1], (HostPort{"other.example", 8443}));
  // Entries are hosts: a scheme, a path or a user is refused, naming the option and the item.
  for (const auto& bad : {"https://git.example.com", "git.example.com/x", "me@git.example.com"}) {
    auto message = load_error({}, {{"NGIT_ARCHIVE_GRASP_SERVICES", bad}});
    EXPECT_NE(message.find("NGIT_ARCHIVE_GRASP_SERVICES"), std::string::npos) << message;
    EXPECT_NE(message.find(bad), std::string::npos) << message;
  }
  // ngit-grasp's fatal combinations, each naming the option to change.
  EXPECT_NE(
      load_error({}, {{"NGIT_ARCHIVE_GRASP_SERVICES", "g.example"}, {"NGIT_ARCHIVE_ALL", "true"}})
          .find("NGIT_ARCHIVE_GRASP_SERVICES"),
      std::string::npos);
  EXPECT_NE(load_error({}, {{"NGIT_ARCHIVE_GRASP_SERVICES", "g.example"},
                            {"NGIT_ARCHIVE_WHITELIST", "repo"}})
                .find("NGIT_ARCHIVE_GRASP_SERVICES"),
            std::string::npos);
  EXPECT_NE(load_error({}, {{"NGIT_ARCHIVE_READ_ONLY", "true"}}).find("NGIT_ARCHIVE_READ_ONLY"),
            std::string::npos);
  EXPECT_NE(load_error({}, {{"NGIT_ARCHIVE_ALL", "true"}, {"NGIT_REPOSITORY_WHITELIST", "repo"}})
                .find("NGIT_REPOSITORY_WHITELIST"),
            std::string::npos);
  // Hosting beside archives may keep its whitelist.
  EXPECT_EQ(load_ok({}, {{"NGIT_ARCHIVE_ALL", "true"},
                         {"NGIT_ARCHIVE_READ_ONLY", "false"},
                         {"NGIT_REPOSITORY_WHITELIST", "repo"}})
                .repository_whitelist.size(),
            1u);
}

TEST(Config, AnArchiveWhitelistEntryWithoutOwnerIsWarnedAbout) {
  auto loaded = load_config({}, lookup({{"NGIT_ARCHIVE_WHITELIST", "popular"}}));
  ASSERT_TRUE(loaded);
  ASSERT_EQ(loaded.value().warnings.size(), 1u);
  EXPECT_NE(loaded.value().warnings[0].find("popular"), std::string::npos);
}

TEST(Config, ListsAreSplitTrimmedAndValidated) {
  auto config = load_ok({}, {{"NGIT_REPOSITORY_BLACKLIST", " a, b ,,c "},
                             {"NGIT_SYNC_PLUS_FALLBACK_RELAYS", "wss://one.example,ws://two:7"}});
  std::vector<std::string> identifiers;
  for (const auto& rule : config.repository_blacklist) identifiers.push_back(*rule.identifier);
  EXPECT_EQ(identifiers, (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(config.sync_plus_fallback_relays.size(), 2u);
  auto message = load_error({}, {{"NGIT_SYNC_PLUS_USER_INDEX_RELAYS", "wss://ok,http://bad"}});
  EXPECT_NE(message.find("NGIT_SYNC_PLUS_USER_INDEX_RELAYS"), std::string::npos);
  EXPECT_NE(message.find("http://bad"), std::string::npos);
  EXPECT_NE(load_error({"--sync-bootstrap-relay-url", "relay.example"}).find("ws://"),
            std::string::npos);
}

TEST(Config, RelayUrlsAreCheckedByTheParserSyncUses) {
  EXPECT_EQ(load_error({}, {{"NGIT_SYNC_BOOTSTRAP_RELAY_URL", "ws://:9"}}),
            "invalid NGIT_SYNC_BOOTSTRAP_RELAY_URL \"ws://:9\": expected a ws:// or wss:// URL");
  for (std::string bad : {"wss://host:0", "ws://host:99999", "ws://[::1", "ws://user@"}) {
    EXPECT_NE(load_error({"--sync-bootstrap-relay-url", bad}).find("--sync-bootstrap-relay-url"),
              std::string::npos)
        << bad;
    EXPECT_NE(load_error({}, {{"NGIT_SYNC_PLUS_FALLBACK_RELAYS", "wss://ok.example," + bad}})
                  .find("(item \"" + bad + "\")"),
              std::string::npos)
        << bad;
  }
  auto bootstrap =
      load_ok({"--sync-bootstrap-relay-url", "WSS://Relay.Example:443/"}).sync_bootstrap_relay_url;
  ASSERT_TRUE(bootstrap);
  EXPECT_EQ(bootstrap->str(), "wss://relay.example") << "held in the form sync dials";
}

TEST(Config, OwnerNpubIsChecked) {
  auto config =
      load_ok({"--owner-npub", "npub10elfcs4fr0l0r8af98jlmgdh9c8tcxjvz9qkw038js35mp4dma8qzvjptg"});
  ASSERT_TRUE(config.owner_npub);
  EXPECT_EQ(nostr::to_hex(*config.owner_npub),
            "7e7e9c42a91bfef19fa929e5fda1b72e0ebc1a4c1141673e2794234d86addf4e");
  // Last character changed: checksum mismatch.
  EXPECT_NE(load_error({}, {{"NGIT_OWNER_NPUB",
                             "npub10elfcs4fr0l0r8af98jlmgdh9c8tcxjvz9qkw038js35mp4dma8qzvjptq"}})
                .find("expected an npub"),
            std::string::npos);
}

TEST(Config, RelayOwnerNsecIsASecretWithoutFlag) {
  constexpr const char* nsec = "nsec1vl029mgpspedva04g90vltkh6fvh240zqtv9k0t9af8935ke9laqsnlfe5";
  constexpr const char* hex = "67dea2ed018072d675f5415ecfaed7d2597555e202d85b3d65ea4e58d2d92ffa";
  EXPECT_FALSE(load_ok({}).relay_owner_nsec) << "unset by default";
  EXPECT_EQ(load_ok({}).relay_owner_nsec_file, "./.relay-owner.nsec");
  auto from_env = load_ok({}, {{"NGIT_RELAY_OWNER_NSEC", nsec}});
  ASSERT_TRUE(from_env.relay_owner_nsec);
  EXPECT_EQ(nostr::to_hex(*from_env.relay_owner_nsec), hex);
  TempFile file(std::string("relay_owner_nsec = ") + hex + "\n");
  auto from_file = load_ok({"--config", file.path()});
  ASSERT_TRUE(from_file.relay_owner_nsec);
  EXPECT_EQ(nostr::to_hex(*from_file.relay_owner_nsec), hex);
  // No flag: the secret never goes in argv.
  EXPECT_EQ(load_error({"--relay-owner-nsec", nsec}),
            "unknown option \"--relay-owner-nsec\" (see graspd --help)");
  // Set empty, or invalid: an error naming the option, never echoing the value.
  EXPECT_EQ(load_error({}, {{"NGIT_RELAY_OWNER_NSEC", " "}}),
            "invalid NGIT_RELAY_OWNER_NSEC \"\": expected a value (set empty: unset it instead)");
  auto typo = std::string(nsec).substr(0, 60) + "qq";
  auto invalid = load_error({}, {{"NGIT_RELAY_OWNER_NSEC", typo}});
  EXPECT_EQ(
      invalid,
      "invalid NGIT_RELAY_OWNER_NSEC \"(elided)\": expected an nsec1... or 64-hex secret key");
  EXPECT_EQ(load_error({}, {{"NGIT_RELAY_OWNER_NSEC", std::string(64, '0')}}).find("0000"),
            std::string::npos)
      << "zero is no valid secp256k1 scalar, and is not echoed either";
  EXPECT_EQ(load_ok({"--relay-owner-nsec-file", "/x/key"}).relay_owner_nsec_file, "/x/key");
}

TEST(Config, CommandLineErrors) {
  EXPECT_EQ(load_error({"--bogus", "1"}), "unknown option \"--bogus\" (see graspd --help)");
  EXPECT_EQ(load_error({"--relay-name"}), "option --relay-name needs a value");
  EXPECT_EQ(load_error({"serve"}), "unexpected argument \"serve\"");
}

TEST(Config, ConfigFileErrors) {
  auto missing = load_error({"--config", "/nonexistent/graspd.conf"});
  EXPECT_EQ(missing.rfind("invalid --config \"/nonexistent/graspd.conf\": expected a readable", 0),
            0u)
      << missing;
  TempFile unknown("no_such_key = 1\n");
  EXPECT_NE(load_error({"--config", unknown.path()}).find("unknown key \"no_such_key\""),
            std::string::npos);
  TempFile malformed("relay_name\n");
  EXPECT_NE(load_error({"--config", malformed.path()}).find(":1: expected key = value"),
            std::string::npos);
  TempFile bad_value("\n\nlog_level = loud\n");
  EXPECT_EQ(load_error({"--config", bad_value.path()}),
            "invalid log_level (" + bad_value.path() +
                ":3) \"loud\": expected one of trace, debug, info, warn, error");
}

TEST(Config, HelpAndVersionActions) {
  auto help = load_config({"--help"}, lookup({{"NGIT_BIND_ADDRESS", "nonsense"}}));
  ASSERT_TRUE(help.ok());
  EXPECT_EQ(help.value().action, Action::help);
  auto version = load_config({"--version"}, lookup({}));
  EXPECT_EQ(version.value().action, Action::version);
}

TEST(Config, HelpListsEveryOption) {
  auto text = help_text();
  for (const auto& spec : option_table()) {
    EXPECT_NE(text.find(std::string(spec.flag.empty() ? spec.env : spec.flag) + " <"),
              std::string::npos)
        << spec.key;
    EXPECT_NE(text.find(std::string(spec.env)), std::string::npos) << spec.env;
    EXPECT_NE(text.find(std::string(spec.description)), std::string::npos) << spec.key;
  }
}

TEST(Config, OptionsThatNothingReadsSayTheyHaveNoEffect) {
  std::set<std::string_view> inert;
  for (const auto& spec : option_table())
    if (!spec.no_effect_yet.empty()) inert.insert(spec.key);
  // Every option is read since GRASP-03 Sync+ landed.
  EXPECT_EQ(inert, std::set<std::string_view>{});
  auto help = help_text();
  for (const auto& spec : option_table()) {
    auto entry = help.find(std::string(spec.flag.empty() ? spec.env : spec.flag) + " <");
    ASSERT_NE(entry, std::string::npos) << spec.key;
    auto next = help.find("\n  --", entry + 1);
    bool marked = help.substr(entry, next - entry).find("No effect yet") != std::string::npos;
    EXPECT_EQ(marked, !spec.no_effect_yet.empty()) << spec.flag;
  }
}

TEST(Config, SyncPlusOptionsTakeEffectWithoutWarnings) {
  auto loaded = [](const std::vector<std::string>& args, const Env& env) {
    auto result = load_config(args, lookup(env));
    EXPECT_TRUE(result.ok());
    return result.value();
  };
  EXPECT_TRUE(loaded({}, {}).warnings.empty()) << "defaults are not warned about";
  auto off = loaded({"--sync-plus-enabled=false"}, {});
  EXPECT_TRUE(off.warnings.empty());
  EXPECT_FALSE(off.config.sync_plus_enabled);
  auto retry = loaded({}, {{"NGIT_SYNC_PLUS_RETRY_SECS", "30"}});
  EXPECT_TRUE(retry.warnings.empty());
  EXPECT_EQ(retry.config.sync_plus_retry_secs, 30u);
  TempFile file("sync_plus_fallback_relays = wss://one.example\n");
  auto from_file = loaded({"--config", file.path()}, {});
  EXPECT_TRUE(from_file.warnings.empty());
  ASSERT_EQ(from_file.config.sync_plus_fallback_relays.size(), 1u);
  EXPECT_EQ(from_file.config.sync_plus_fallback_relays[0].str(), "wss://one.example");
}

TEST(Config, TableNamesFollowOneScheme) {
  std::set<std::string_view> keys;
  for (const auto& spec : option_table()) {
    EXPECT_TRUE(keys.insert(spec.key).second) << "duplicate " << spec.key;
    std::string env = "NGIT_";
    std::string flag = "--";
    for (char c : spec.key) {
      env += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
      flag += c == '_' ? '-' : c;
    }
    EXPECT_EQ(spec.env, env);
    // A secret has no flag: every local user can read a process's argv.
    EXPECT_EQ(spec.flag, spec.secret ? "" : flag);
    EXPECT_FALSE(spec.description.empty()) << spec.key;
    EXPECT_TRUE(spec.set) << spec.key;
  }
}

TEST(Config, SplitList) {
  EXPECT_TRUE(split_list("").empty());
  EXPECT_TRUE(split_list(" , ,").empty());
  EXPECT_EQ(split_list("x"), (std::vector<std::string>{"x"}));
}

}  // namespace
}  // namespace graspd::runtime
