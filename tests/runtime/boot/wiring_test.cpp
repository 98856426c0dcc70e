#include <utility>  // before Asio, see docs/toolchain.md §1

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/scheduler/abstract_coordinator.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "runtime/boot/wire_monitor.hpp"
#include "runtime/boot/wire_policy.hpp"
#include "runtime/boot/wire_relay.hpp"
#include "runtime/boot/wire_store.hpp"
#include "runtime/boot/wire_sync.hpp"
#include "runtime/net/http_server.hpp"
#include "runtime/ops/metrics.hpp"
#include "runtime/ops/status_board.hpp"
#include "tests/support/temp_dir.hpp"

namespace graspd::boot {
namespace {

using runtime::Config;

constexpr const char* npub = "npub10elfcs4fr0l0r8af98jlmgdh9c8tcxjvz9qkw038js35mp4dma8qzvjptg";

Config load(std::map<std::string, std::string> env) {
  auto loaded = runtime::load_config({}, [&](std::string_view name) -> std::optional<std::string> {
    auto it = env.find(std::string(name));
    if (it == env.end()) return std::nullopt;
    return it->second;
  });
  if (!loaded) {
    ADD_FAILURE() << loaded.error().message;
    return {};
  }
  return loaded.value().config;
}

TEST(Wiring, PolicyConfigCopiesWhatTheConfigurationParsed) {
  auto config = load({{"NGIT_DOMAIN", "Relay.Example.com:8443"},
                      {"NGIT_EVENT_BLACKLIST", npub},
                      {"NGIT_REPOSITORY_WHITELIST", "a, b"},
                      {"NGIT_REPOSITORY_BLACKLIST", std::string(npub) + "/c"}});
  auto policy = policy_config(config);
  EXPECT_EQ(policy.service, (HostPort{"relay.example.com", 8443}));
  EXPECT_EQ(policy.event_blacklist, config.event_blacklist);
  EXPECT_EQ(policy.repository_whitelist, config.repository_whitelist);
  EXPECT_EQ(policy.repository_blacklist, config.repository_blacklist);
  EXPECT_EQ(policy.repository_whitelist.size(), 2u);
  EXPECT_EQ(acceptance_config(config).policy.service, policy.service);
}

TEST(Wiring, AcceptanceConfigCarriesPurgatorysBoundsWhenItIsOn) {
  auto on = acceptance_config(load({{"NGIT_PURGATORY_HOLD_SECS", "600"},
                                    {"NGIT_PURGATORY_MAX_EVENTS", "77"},
                                    {"NGIT_PURGATORY_AUTHOR_SHARE_PERCENT", "20"}}));
  EXPECT_TRUE(on.purgatory_enabled);
  EXPECT_EQ(on.purgatory.hold_seconds, 600);
  EXPECT_EQ(on.purgatory.max_held, 77u);
  EXPECT_DOUBLE_EQ(on.purgatory.author_share, 0.2);
  EXPECT_EQ(on.expiry_interval, std::chrono::seconds(30));  // a quarter of the hold, at most 30 s
  EXPECT_GT(on.state_answer_wait.count(), 0);
  EXPECT_FALSE(on.git);  // git hosting is the caller's to give

  auto off = acceptance_config(load({{"NGIT_PURGATORY_ENABLED", "false"}}));
  EXPECT_FALSE(off.purgatory_enabled);
  EXPECT_EQ(off.state_answer_wait.count(), 0);
}

TEST(Wiring, SyncConfigCarriesTheCanonicalBootstrapRelayAndOwnUrls) {
  auto config = load({{"NGIT_SYNC_BOOTSTRAP_RELAY_URL", "WSS://Boot.Example:443/"},
                      {"NGIT_DOMAIN", "relay.example.com"},
                      {"NGIT_BIND_ADDRESS", "127.0.0.1:7334"},
                      {"NGIT_RELAY_DATA_PATH", "/var/lib/graspd"}});
  auto sync = sync_manager_config(config);
  EXPECT_EQ(sync.bootstrap_relay, "wss://boot.example");
  EXPECT_EQ(sync.plan.own_relays,
            (std::set<std::string>{"ws://relay.example.com", "wss://relay.example.com",
                                   "ws://127.0.0.1:7334", "wss://127.0.0.1:7334"}));
  EXPECT_EQ(sync.connection.client.own_endpoint, "127.0.0.1:7334");
  EXPECT_EQ(sync.state_file, "/var/lib/graspd/sync-state.json");
  EXPECT_FALSE(sync_manager_config(load({})).bootstrap_relay);
}

TEST(Wiring, ClusterPeersLeaveOutThisNodeAndRepeatsAndGiveTheirGitBases) {
  auto config = load({{"NGIT_SYNC_PEERS",
                       "ws://127.0.0.1:7401,WS://127.0.0.1:7402/,ws://127.0.0.1:7401,"
                       "ws://cluster.example,wss://node3.example:8443"},
                      {"NGIT_DOMAIN", "cluster.example"},
                      {"NGIT_BIND_ADDRESS", "127.0.0.1:7402"}});
  EXPECT_EQ(sync_manager_config(config).peers,
            (std::vector<std::string>{"ws://127.0.0.1:7401", "wss://node3.example:8443"}))
      << "its own bind address and domain are not peers";
  EXPECT_EQ(peer_git_bases(config),
            (std::vector<std::string>{"http://127.0.0.1:7401", "https://node3.example:8443"}));
  EXPECT_TRUE(sync_manager_config(load({})).peers.empty());
}

TEST(Wiring, SyncPlusConfigCarriesTheTrustedRelaysCadencesAndTheUrlGuard) {
  auto config =
      load({{"NGIT_SYNC_BOOTSTRAP_RELAY_URL", "wss://boot.example"},
            {"NGIT_SYNC_PLUS_USER_INDEX_RELAYS", "WSS://Index.Example/, wss://two.example"},
            {"NGIT_SYNC_PLUS_FALLBACK_RELAYS", "wss://fallback.example:443"},
            {"NGIT_SYNC_PLUS_RECONCILE_SECS", "7"},
            {"NGIT_SYNC_PLUS_REFRESH_SECS", "3600"},
            {"NGIT_SYNC_PLUS_RETRY_SECS", "30"},
            {"NGIT_SYNC_ALLOW_PRIVATE_ADDRESSES", "true"},
            {"NGIT_DOMAIN", "relay.example.com"}});
  auto plus = sync_plus_config(config);
  EXPECT_EQ(plus.user_index_relays,
            (std::vector<std::string>{"wss://index.example", "wss://two.example"}));
  EXPECT_EQ(plus.fallback_relays, std::vector<std::string>{"wss://fallback.example"});
  EXPECT_EQ(plus.bootstrap_relay, "wss://boot.example");
  EXPECT_EQ(plus.reconcile_interval, std::chrono::seconds(7));
  EXPECT_EQ(plus.discovery.refresh_seconds, 3600);
  EXPECT_EQ(plus.discovery.retry_seconds, 30);
  EXPECT_EQ(plus.history.refresh_seconds, 3600);
  EXPECT_EQ(plus.history.retry_seconds, 30);
  EXPECT_TRUE(plus.hygiene.allow_private_addresses);
  EXPECT_EQ(plus.hygiene.own_relays, own_relay_urls(config));
  // A Config built without the table cannot make the maintenance pass a busy loop.
  EXPECT_EQ(sync_plus_config(Config{}).reconcile_interval, std::chrono::seconds(1));
}

TEST(Wiring, RelayLimitsCapTheDefaultLimit) {
  auto limits = relay_limits(load({{"NGIT_MAX_LIMIT", "100"}, {"NGIT_DEFAULT_LIMIT", "500"}}));
  EXPECT_EQ(limits.max_limit, 100u);
  EXPECT_EQ(limits.default_limit, 100u);
  auto options = ws_options(limits, false, 0);
  EXPECT_FALSE(options.compression);
  EXPECT_GE(options.max_inbound_backlog, 4 * limits.max_message_bytes);
}

class ActorSystemConfig : public caf::actor_system_config {
 public:
  ActorSystemConfig() { set("scheduler.max-threads", std::size_t{2}); }
};

/// The process-wide objects a wiring function builds from, as the daemon makes them (nothing
/// listens and no network thread runs).
class WiringTest : public ::testing::Test {
 protected:
  Config config(std::map<std::string, std::string> env) {
    env["NGIT_RELAY_DATA_PATH"] = dir_.path().string();
    return load(std::move(env));
  }
  Services services(const Config& config) {
    return Services{config, system_, io_, metrics_, http_, status_};
  }

  test::TempDir dir_{"graspd-wiring-test"};
  runtime::Metrics metrics_{"test"};
  ActorSystemConfig actor_config_;
  caf::actor_system system_{actor_config_};
  boost::asio::io_context io_;
  runtime::HttpServer http_{
      io_, {}, [](const runtime::HttpRequestInfo&) { return runtime::HttpResponse{}; }};
  std::shared_ptr<runtime::StatusBoard> status_ = std::make_shared<runtime::StatusBoard>();
};

TEST_F(WiringTest, EveryComponentStartsOnWhatItNeedsAndStopsTheOneWay) {
  auto cfg = config({});
  auto wired = services(cfg);
  auto store = wire_store(wired);
  ASSERT_TRUE(store.store);
  EXPECT_TRUE(store.writer);
  auto policy = wire_policy(wired, store);
  EXPECT_TRUE(policy.acceptance);
  auto relay = wire_relay(wired, store, policy);
  EXPECT_TRUE(relay.fanout);
  EXPECT_TRUE(relay.endpoint);
  EXPECT_EQ(relay.verifiers.actors.size(), system_.scheduler().num_workers());
  auto sync = wire_sync(wired, store, policy);
  ASSERT_TRUE(sync);
  EXPECT_TRUE(sync->manager);
  EXPECT_TRUE(sync->subscriber);
  EXPECT_TRUE(sync->plus) << "Sync+ runs by default";
  EXPECT_EQ(sync->verifiers.actors.size(), system_.scheduler().num_workers());
  auto monitor = wire_monitor(wired);
  EXPECT_TRUE(monitor.monitor);

  close_connections(*sync);
  close_sessions(relay);
  stop(monitor);
  stop(*sync);
  stop(relay);
  stop(policy);
  stop(store);
  // Returns only when every actor the wiring spawned (verifiers and subscriber included) is gone.
  system_.await_all_actors_done();
}

TEST_F(WiringTest, DisabledSyncPlusStartsNoController) {
  auto cfg = config({{"NGIT_SYNC_PLUS_ENABLED", "false"}});
  auto wired = services(cfg);
  auto store = wire_store(wired);
  auto policy = wire_policy(wired, store);
  auto sync = wire_sync(wired, store, policy);
  ASSERT_TRUE(sync);
  EXPECT_TRUE(sync->subscriber);
  EXPECT_FALSE(sync->plus);
  close_connections(*sync);
  stop(*sync);
  stop(policy);
  stop(store);
  system_.await_all_actors_done();
}

TEST_F(WiringTest, OpenPolicyAndDisabledSyncStartNothing) {
  auto cfg = config({{"NGIT_ACCEPTANCE_POLICY", "open"}, {"NGIT_SYNC_ENABLED", "false"}});
  auto wired = services(cfg);
  auto store = wire_store(wired);
  auto policy = wire_policy(wired, store);
  EXPECT_FALSE(policy.acceptance);
  EXPECT_FALSE(wire_sync(wired, store, policy));
  stop(policy);
  stop(store);
  system_.await_all_actors_done();
}

TEST_F(WiringTest, AStoreThatCannotOpenNamesTheStore) {
  std::filesystem::create_directories(dir_.path() / "blocked");
  auto cfg = config({});
  cfg.data_path = (dir_.path() / "blocked" / "file").string();
  { std::ofstream(cfg.data_path) << "not a directory"; }
  auto wired = services(cfg);
  try {
    wire_store(wired);
    ADD_FAILURE() << "expected an exception";
  } catch (const std::runtime_error& failure) {
    EXPECT_EQ(std::string(failure.what()).rfind("event store: ", 0), 0u) << failure.what();
  }
}

}  // namespace
}  // namespace graspd::boot
