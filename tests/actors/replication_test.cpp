// Deterministic tests of the replication view: the NIP-77 comparison engine against a scripted
// responder, the cache and its JSON, and the replication actor under the test coordinator over a
// real store, its relay probes dialling scripted peers and its git server probes answered by the
// test (docs/replication.md).
#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include "actors/sync/engine/relay_comparison.hpp"
#include "actors/sync/engine/replication_view.hpp"
#include "actors/sync/replication.hpp"
#include "messages/nostr/client_message.hpp"
#include "messages/nostr/negentropy.hpp"
#include "messages/nostr/nip19.hpp"
#include "store/lmdb/store_view.hpp"
#include "tests/actors/sync_fixture.hpp"

namespace graspd {
namespace {

using namespace std::chrono_literals;
using sync_test::ScriptedPeer;
using test::signed_event;
namespace neg = nostr::negentropy;

constexpr std::uint8_t owner_seed = 3;

nostr::Pubkey owner_key() {
  return *nostr::pubkey_from_secret(test::secret_key(owner_seed));
}

/// The NEG-MSG a NIP-77 relay holding `theirs` answers a NEG-OPEN or NEG-MSG frame with.
std::string respond(const std::string& frame, const std::vector<nostr::Event>& theirs,
                    std::map<std::string, std::unique_ptr<neg::Storage>>& storages) {
  auto msg = nostr::parse_client_message(frame, nostr::ParseLimits{});
  EXPECT_TRUE(msg.ok()) << frame;
  if (auto* open = std::get_if<nostr::ClientNegOpen>(&*msg)) {
    std::vector<neg::Item> items;
    for (const auto& ev : theirs)
      if (open->filter.matches(ev))
        items.push_back({static_cast<std::uint64_t>(ev.created_at), ev.id});
    auto& storage = storages[open->subscription_id] =
        std::make_unique<neg::Storage>(std::move(items));
    auto reply = neg::Negentropy::create(*storage)->respond(open->message);
    return nostr::relay_neg_msg(open->subscription_id, neg::message_to_hex(*reply));
  }
  auto& next = std::get<nostr::ClientNegMsg>(*msg);
  auto reply = neg::Negentropy::create(*storages.at(next.subscription_id))->respond(next.message);
  return nostr::relay_neg_msg(next.subscription_id, neg::message_to_hex(*reply));
}

/// Runs a comparison to its end against a relay holding `theirs`.
sync::RelayComparison::Step compare(sync::RelayComparison& comparison,
                                    const std::vector<nostr::Event>& theirs) {
  std::map<std::string, std::unique_ptr<neg::Storage>> storages;
  auto step = comparison.start(true);
  std::vector<std::string> outbox = step.frames;
  while (!step.finished && !outbox.empty()) {
    auto frame = outbox.front();
    outbox.erase(outbox.begin());
    if (frame.rfind("[\"NEG-CLOSE\"", 0) == 0) continue;
    step = comparison.on_frame(respond(frame, theirs, storages));
    outbox.insert(outbox.end(), step.frames.begin(), step.frames.end());
  }
  return step;
}

sync::LocalRecords records_of(const std::vector<nostr::Event>& ours) {
  return [ours](const nostr::Filter& filter, std::size_t) {
    std::vector<neg::Item> items;
    for (const auto& ev : ours)
      if (filter.matches(ev)) items.push_back({static_cast<std::uint64_t>(ev.created_at), ev.id});
    return std::optional(std::move(items));
  };
}

TEST(RelayComparison, CountsWhatEachSideLacksOverEveryFilterOnce) {
  const std::string repo = "30617:" + nostr::to_hex(owner_key()) + ":demo";
  auto root = signed_event(1621, {{"a", repo}}, 1700000000, owner_seed);
  // Tags both the repository and the root: matches two filters, counted once.
  auto reply = signed_event(1111, {{"a", repo}, {"e", nostr::to_hex(root.id)}}, 1700000001, 4);
  auto only_theirs = signed_event(1621, {{"a", repo}}, 1700000002, 5);
  auto filters = sync::replication_filters(repo, "demo", {owner_key()}, {root.id});
  sync::RelayComparison comparison(filters, records_of({root, reply}), 1000);
  auto step = compare(comparison, {root, only_theirs});
  EXPECT_TRUE(step.finished);
  EXPECT_TRUE(step.failure.empty()) << step.failure;
  EXPECT_EQ(comparison.only_here(), 1u);
  EXPECT_EQ(comparison.only_there(), 1u);
}

TEST(RelayComparison, ARelayThatRefusesOrDoesNotListNip77HasNoFigures) {
  auto filters = sync::replication_filters("30617:" + std::string(64, 'a') + ":x", "x", {}, {});
  sync::RelayComparison unlisted(filters, records_of({}), 1000);
  auto step = unlisted.start(false);
  EXPECT_TRUE(step.finished);
  EXPECT_EQ(step.failure, sync::no_nip77);

  sync::RelayComparison noticed(filters, records_of({}), 1000);
  EXPECT_FALSE(noticed.start(std::nullopt).finished);
  step = noticed.on_frame(nostr::relay_notice("ERROR: bad msg: negentropy disabled"));
  EXPECT_TRUE(step.finished);
  EXPECT_EQ(step.failure, sync::no_nip77);
  ASSERT_EQ(step.frames.size(), 1u);
  EXPECT_EQ(step.frames[0].rfind("[\"NEG-CLOSE\"", 0), 0u);

  sync::RelayComparison refused(filters, records_of({}), 1000);
  refused.start(true);
  step = refused.on_frame(nostr::relay_neg_err("rv0", "blocked: too many records"));
  EXPECT_TRUE(step.finished);
  EXPECT_NE(step.failure.find("blocked: too many records"), std::string::npos);

  sync::RelayComparison too_many(
      filters,
      [](const nostr::Filter&, std::size_t) { return std::optional<std::vector<neg::Item>>{}; },
      1000);
  step = too_many.start(true);
  EXPECT_TRUE(step.finished);
  EXPECT_FALSE(step.failure.empty());
}

TEST(ReplicationCache, KeepsTheMostRecentlyAskedAndNeverOneBeingMeasured) {
  sync::ReplicationCache cache(2);
  auto targets = [](std::string repo) {
    sync::RepositoryTargets t;
    t.repo = std::move(repo);
    t.relays = {{"wss://r.example/", sync::RelaySource::announcement}};
    return t;
  };
  cache.refresh(targets("a")).relays["wss://r.example/"].pending = true;
  cache.refresh(targets("b"));
  cache.refresh(targets("c"));
  EXPECT_TRUE(cache.find("a")) << "a measurement under way keeps its entry";
  EXPECT_FALSE(cache.find("b"));
  EXPECT_TRUE(cache.find("c"));
  // Only measured repositories are in the summary.
  EXPECT_EQ(cache.summary_json(), "{\"repositories\":{}}");
  auto& c = cache.refresh(targets("c"));
  c.relays["wss://r.example/"] = {};
  c.relays["wss://r.example/"].measured_at = 5;
  c.relays["wss://r.example/"].only_here = 0;
  c.relays["wss://r.example/"].only_there = 0;
  EXPECT_EQ(cache.summary_json(),
            "{\"repositories\":{\"c\":{\"relays\":1,\"relays_complete\":1,\"servers\":0,"
            "\"servers_current\":0,\"measured_at\":5}}}");
}

TEST(ReplicationView, AServerIsCurrentOnlyWithEveryRefOfTheState) {
  sync::RepositoryTargets targets;
  targets.state_id = std::string(64, 'f');
  targets.wanted_refs = {{"refs/heads/main", "aa"}, {"refs/tags/v1", "bb"}};
  sync::ServerRefs server;
  EXPECT_EQ(sync::current(server, targets), std::nullopt);
  server.refs = std::map<std::string, std::string>{{"refs/heads/main", "aa"}};
  EXPECT_EQ(sync::current(server, targets), false);
  (*server.refs)["refs/tags/v1"] = "bb";
  (*server.refs)["refs/heads/other"] = "cc";  // more than the state: still current
  EXPECT_EQ(sync::current(server, targets), true);
  targets.state_id.reset();
  EXPECT_EQ(sync::current(server, targets), std::nullopt) << "no state: nothing to compare";
}

class ReplicationActorTest : public test::ActorTest {
 protected:
  ReplicationActorTest() {
    store::StoreOptions options;
    options.path = dir_.path();
    store_ = std::make_shared<store::EventStore>(options);
  }

  std::int64_t unix_now() {
    return 1'700'000'000 +
           std::chrono::duration_cast<std::chrono::seconds>(now().time_since_epoch()).count();
  }

  void store(const std::vector<nostr::Event>& events) {
    std::vector<nostr::EventPtr> batch;
    for (const auto& ev : events) batch.push_back(std::make_shared<const nostr::Event>(ev));
    store_->write_batch(batch);
  }

  replication_actor start(std::size_t max_running = 4) {
    ReplicationConfig config;
    config.view = std::make_shared<store::EventStoreView>(store_);
    config.probe.clients = [this](const ParsedUrl& url, const runtime::RelayClientOptions&,
                                  std::shared_ptr<runtime::RelayClientHandler> handler) {
      auto peer = std::make_shared<ScriptedPeer>();
      peer->handler = std::move(handler);
      peers_.emplace_back(url.host, peer);
      return peer;
    };
    config.probe.local_records = [this](const nostr::Filter& filter, std::size_t max) {
      return store_->negentropy_items(filter, max);
    };
    config.probe_server = [this](ServerProbeRequest request,
                                 std::function<void(ServerProbeOutcome)> done) {
      servers_.emplace_back(std::move(request), std::move(done));
    };
    config.is_own_server = [](std::string_view url) {
      return url.find("own.example") != std::string_view::npos;
    };
    config.own_relays = {"wss://own.example"};
    config.publish = [this](std::string json) { published_ = std::move(json); };
    config.unix_now = [this] { return unix_now(); };
    config.max_running = max_running;
    config.plus = plus_;
    actor_ = spawn(replication, std::move(config));
    run();
    return actor_;
  }

  /// Sends a query; the answer is read with answer() once it came.
  void ask(const std::string& identifier = "demo") {
    asker_->send(actor_, ReplicationQuery{owner_key(), identifier});
    run();
  }
  std::optional<ReplicationAnswer> answer() {
    std::optional<ReplicationAnswer> out;
    asker_->receive([&](ReplicationAnswer& a) { out = std::move(a); },
                    caf::after(std::chrono::seconds(0)) >> [] {});
    return out;
  }

  /// Plays the NIP-77 relay holding `theirs` on `peer` until it is done.
  void play_relay(ScriptedPeer& peer, const std::vector<nostr::Event>& theirs) {
    std::map<std::string, std::unique_ptr<neg::Storage>> storages;
    runtime::PeerLimits limits;
    limits.nip77 = true;
    peer.handler->on_open(limits, false);
    run();
    for (std::size_t next = 0; next < peer.sent.size(); ++next) {
      const auto frame = peer.sent[next];
      if (frame.rfind("[\"NEG-CLOSE\"", 0) == 0) continue;
      peer.handler->on_message(respond(frame, theirs, storages));
      run();
    }
  }

  ScriptedPeer* peer(const std::string& host) {
    for (auto& [dialled, peer] : peers_)
      if (dialled == host) return peer.get();
    return nullptr;
  }

  nostr::Event announcement(std::vector<std::string> relays, std::vector<std::string> clones) {
    nostr::Tag relay_tag{"relays"}, clone_tag{"clone"};
    relay_tag.insert(relay_tag.end(), relays.begin(), relays.end());
    clone_tag.insert(clone_tag.end(), clones.begin(), clones.end());
    return signed_event(30617, {{"d", "demo"}, relay_tag, clone_tag}, 1700000000, owner_seed);
  }

  test::TempDir dir_{"graspd-replication-actor"};
  std::shared_ptr<store::EventStore> store_;
  replication_actor actor_;
  sync_plus_actor plus_;
  caf::scoped_actor asker_{system()};
  std::vector<std::pair<std::string, std::shared_ptr<ScriptedPeer>>> peers_;
  std::vector<std::pair<ServerProbeRequest, std::function<void(ServerProbeOutcome)>>> servers_;
  std::string published_;
};

TEST_F(ReplicationActorTest, AQueryMeasuresEachRelayAndServerOnceAnHourAndAnswersWhenDone) {
  auto repo_announcement =
      announcement({"wss://own.example", "wss://a.example", "wss://b.example"},
                   {"https://git.example/demo.git",
                    "https://own.example/" + nostr::encode_npub(owner_key()) + "/demo.git"});
  auto repo = nostr::address_of(repo_announcement);
  auto state = signed_event(30618, {{"d", "demo"}, {"refs/heads/main", std::string(40, '1')}},
                            1700000100, owner_seed);
  auto issue = signed_event(1621, {{"a", repo}}, 1700000200, 4);
  auto theirs_only = signed_event(1621, {{"a", repo}}, 1700000300, 5);
  store({repo_announcement, state, issue});
  start();
  ask();
  ASSERT_EQ(peers_.size(), 2u) << "our own relay is not compared with itself";
  ASSERT_EQ(servers_.size(), 2u);
  EXPECT_FALSE(answer()) << "answered once the probes are done";
  EXPECT_FALSE(servers_[0].first.own);
  EXPECT_TRUE(servers_[1].first.own);
  EXPECT_EQ(servers_[1].first.identifier, "demo");

  play_relay(*peer("a.example"), {repo_announcement, state, theirs_only});
  runtime::PeerLimits no_77;
  no_77.nip77 = false;
  peer("b.example")->handler->on_open(no_77, false);
  run();
  EXPECT_TRUE(peer("b.example")->closed);
  EXPECT_TRUE(peer("b.example")->frames("REQ").empty()) << "nothing is downloaded";
  EXPECT_TRUE(peer("a.example")->frames("REQ").empty()) << "nothing is downloaded";
  servers_[0].second({0, true, {}, {{"refs/heads/main", std::string(40, '1')}}});
  servers_[1].second({0, false, "no git data here yet", {}});
  run();

  auto reply = answer();
  ASSERT_TRUE(reply);
  ASSERT_EQ(reply->status, 200u);
  rapidjson::Document view;
  view.Parse(reply->json.c_str(), reply->json.size());
  ASSERT_FALSE(view.HasParseError()) << reply->json;
  const auto& relays = view["relays"];
  ASSERT_EQ(relays.Size(), 2u);
  EXPECT_EQ(std::string(relays[0]["url"].GetString()), "wss://a.example");
  EXPECT_EQ(relays[0]["only_there"].GetUint64(), 1u) << reply->json;
  EXPECT_EQ(relays[0]["only_here"].GetUint64(), 1u) << reply->json;
  EXPECT_EQ(relays[0]["measured_at"].GetInt64(), unix_now());
  EXPECT_TRUE(relays[1]["only_there"].IsNull());
  EXPECT_EQ(std::string(relays[1]["reason"].GetString()), sync::no_nip77);
  const auto& servers = view["servers"];
  EXPECT_TRUE(servers[0]["current"].GetBool());
  EXPECT_EQ(std::string(servers[0]["refs"][0]["status"].GetString()), "current");
  EXPECT_TRUE(servers[1]["self"].GetBool());
  EXPECT_TRUE(servers[1]["current"].IsNull());
  EXPECT_EQ(std::string(servers[1]["reason"].GetString()), "no git data here yet");
  EXPECT_NE(published_.find("\"" + repo +
                            "\":{\"relays\":2,\"relays_complete\":0,\"servers\":2,"
                            "\"servers_current\":1"),
            std::string::npos)
      << published_;

  // Within the hour: answered at once from the cache, nothing dialled or read again.
  advance_time(3599s);
  ask();
  EXPECT_TRUE(answer());
  EXPECT_EQ(peers_.size(), 2u);
  EXPECT_EQ(servers_.size(), 2u);
  // An hour after: measured again.
  advance_time(1s);
  ask();
  EXPECT_EQ(peers_.size(), 4u);
  EXPECT_EQ(servers_.size(), 4u);
}

TEST_F(ReplicationActorTest, ARequestIsAnsweredAtItsDeadlineAndASilentRelayTimesOut) {
  store({announcement({"wss://a.example"}, {})});
  start();
  ask();
  ASSERT_EQ(peers_.size(), 1u);
  EXPECT_FALSE(answer());
  advance_time(10s);
  auto reply = answer();
  ASSERT_TRUE(reply) << "answered at its deadline with what is known";
  EXPECT_NE(reply->json.find("\"pending\":true"), std::string::npos) << reply->json;
  // The connection never opens: the probe gives up at its own deadline.
  advance_time(60s);
  ask();
  reply = answer();
  ASSERT_TRUE(reply);
  EXPECT_NE(reply->json.find("\"reason\":\"unreachable: no connection before the deadline\""),
            std::string::npos)
      << reply->json;
}

TEST_F(ReplicationActorTest, ProbesRunAFewAtATimeWithinTheRequestsBudget) {
  std::vector<std::string> relays;
  for (int i = 0; i < 40; ++i) relays.push_back("wss://r" + std::to_string(i) + ".example");
  store({announcement(relays, {})});
  start(3);
  ask();
  EXPECT_EQ(peers_.size(), 3u) << "three at a time";
  for (std::size_t i = 0; i < 3; ++i) peers_[i].second->handler->on_close(false, "refused");
  run();
  EXPECT_EQ(peers_.size(), 6u) << "the next ones start as others end";
  auto& st = state<ReplicationState, replication_actor::base>(actor_);
  EXPECT_EQ(st.running.size() + st.queued.size(), 16u - 3u) << "16 probes per request";
  auto* entry = st.cache->find(nostr::address_of(announcement(relays, {})));
  ASSERT_TRUE(entry);
  EXPECT_EQ(entry->targets.relays.size(), sync::max_replication_targets);
}

TEST_F(ReplicationActorTest, SyncPlusMailboxesOfTheThreadsAreComparedToo) {
  store({announcement({"wss://a.example"}, {})});
  auto plus = spawn([](sync_plus_actor::pointer) -> sync_plus_actor::behavior_type {
    return {
        [](PlusInventoryUpdate&) {},
        [](HistoryNext&) {},
        [](atom::tick) {},
        [](atom::maintain) {},
        [](atom::status) { return std::string{}; },
        [](const PlusRepositoryRelays&) {
          return std::vector<std::string>{"wss://a.example", "wss://inbox.example",
                                          "wss://own.example"};
        },
    };
  });
  plus_ = plus;
  start();
  ask();
  EXPECT_EQ(peers_.size(), 2u) << "a relay named twice is compared once, our own never";
  auto& st = state<ReplicationState, replication_actor::base>(actor_);
  auto* entry = st.cache->find(nostr::address_of(announcement({"wss://a.example"}, {})));
  ASSERT_TRUE(entry);
  ASSERT_EQ(entry->targets.relays.size(), 2u);
  EXPECT_EQ(entry->targets.relays[1],
            std::make_pair(std::string("wss://inbox.example"), sync::RelaySource::sync_plus));
}

TEST_F(ReplicationActorTest, AnUnknownRepositoryIsNotFound) {
  start();
  ask("nothing-here");
  auto reply = answer();
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->status, 404u);
  EXPECT_TRUE(peers_.empty());
}

}  // namespace
}  // namespace graspd
