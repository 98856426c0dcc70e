// Deterministic tests of the sync actors (SyncManager, RelayConnection,
// SelfSubscriber) under the test coordinator, with a scripted peer in place
// of the network transport and a real LMDB store in a temp dir.
#include <gtest/gtest.h>
#include <rapidjson/document.h>
#include <caf/typed_event_based_actor.hpp>

#include "actors/self_subscriber.hpp"
#include "actors/store_writer.hpp"
#include "actors/sync_manager.hpp"
#include "actors/verifier.hpp"
#include "messages/nostr/json.hpp"
#include "messages/nostr/relay_message.hpp"
#include "tests/support/actor_fixture.hpp"
#include "tests/support/holding_verifier.hpp"
#include "tests/support/nostr_builders.hpp"
#include "tests/support/temp_dir.hpp"

namespace graspd {
namespace {

using namespace std::chrono_literals;

/// A peer relay scripted by the test: records what graspd sends and lets the
/// test deliver frames or drop the connection through the handler.
struct ScriptedPeer : runtime::RelayClient {
  std::shared_ptr<runtime::RelayClientHandler> handler;
  std::vector<std::string> sent;
  bool closed = false;
  bool paused = false;
  void send(std::string text) override { sent.push_back(std::move(text)); }
  void close() override { closed = true; }
  void pause_reading() override { paused = true; }
  void resume_reading() override { paused = false; }
  std::size_t consumed_bytes = 0;  // reported through consumed()
  void consumed(std::size_t bytes) override { consumed_bytes += bytes; }

  /// Subscription ids and filters of the REQ frames sent so far.
  std::vector<std::pair<std::string, nostr::Filters>> reqs() const {
    std::vector<std::pair<std::string, nostr::Filters>> out;
    for (const auto& frame : sent) {
      rapidjson::Document doc;
      doc.Parse(frame.c_str());
      if (std::string(doc[0].GetString()) != "REQ") continue;
      nostr::Filters filters;
      for (rapidjson::SizeType i = 2; i < doc.Size(); ++i)
        filters.push_back(nostr::parse_filter(doc[i], nostr::ParseLimits{}).value());
      out.emplace_back(doc[1].GetString(), std::move(filters));
    }
    return out;
  }
};

/// A kind-`kind` event with content "hello", signed by `secret_key(author)`.
nostr::Event signed_event(std::uint32_t kind, nostr::Tags tags, std::int64_t created_at,
                          std::uint8_t author = 7) {
  return test::signed_event(kind, std::move(tags), created_at, "hello", author);
}

/// Fails the test: a mock received a message the test does not expect.
void unexpected_at_manager(const char* message_type) {
  ADD_FAILURE() << "the mock sync manager received an unexpected " << message_type;
}

class SyncActorsTest : public test::ActorTest {
 protected:
  SyncActorsTest() {
    store::StoreOptions options;
    options.path = dir_.path();
    store_ = std::make_shared<store::EventStore>(options);
    writer_ = spawn(store_writer, store_, StoreWriterConfig{});
    run();
  }

  std::int64_t unix_now() {
    return 1'700'000'000 +
           std::chrono::duration_cast<std::chrono::seconds>(now().time_since_epoch()).count();
  }

  /// Verifies on two real verifier actors unless `verifiers` says otherwise (empty = inline).
  sync_manager_actor start_manager(std::optional<std::string> bootstrap = std::nullopt,
                                   std::optional<std::vector<verifier_actor>> verifiers = {}) {
    SyncManagerConfig config;
    config.bootstrap_relay = bootstrap;
    config.unix_now = [this] { return unix_now(); };
    config.connection.traffic_report_interval = 1s;
    config.connection.already_stored = [this](const nostr::EventId& id) {
      return store_->contains(id);
    };
    config.connection.verifiers =
        verifiers ? *verifiers : std::vector<verifier_actor>{spawn(verifier), spawn(verifier)};
    config.random_seed = 42;
    auto factory = [this](const ParsedUrl& url, const runtime::RelayClientOptions& options,
                          std::shared_ptr<runtime::RelayClientHandler> handler) {
      auto peer = std::make_shared<ScriptedPeer>();
      peer->handler = std::move(handler);
      dials_.push_back({url.host, options.allow_private_addresses});
      peers_.push_back(peer);
      return peer;
    };
    manager_ = spawn(sync_manager, config, acceptance_actor{}, writer_, factory, board_, nullptr);
    run();
    return manager_;
  }

  SyncManagerState& manager_state() {
    return state<SyncManagerState, sync_manager_actor::base>(manager_);
  }
  const sync::RelayState& relay_state(const std::string& relay) {
    return manager_state().plan->relays().at(relay);
  }

  RepoDiscovery discovery(const std::string& repo, std::set<std::string> relays,
                          std::set<nostr::EventId> roots = {}) {
    RepoDiscovery d;
    d.repos.push_back(RepoDiscovery::Repo{repo, std::move(relays), std::move(roots)});
    return d;
  }

  /// Starts the manager, discovers repo_ on relay_ and opens the scripted connection.
  void connect_first_peer(std::optional<std::vector<verifier_actor>> verifiers = {}) {
    start_manager(std::nullopt, std::move(verifiers));
    anon_send(manager_, discovery(repo_, {relay_}));
    run();
    peers_[0]->handler->on_open({});
    run();
  }

  /// Answers every REQ not answered yet with EOSE (an empty remote history).
  void answer_all_with_eose(ScriptedPeer& peer) {
    for (const auto& [id, filters] : peer.reqs()) {
      if (answered_.count(id)) continue;
      answered_.insert(id);
      peer.handler->on_message(nostr::relay_eose(id));
    }
    run();
  }

  test::TempDir dir_{"graspd-sync-actors"};
  std::shared_ptr<store::EventStore> store_;
  store_writer_actor writer_;
  sync_manager_actor manager_;
  std::shared_ptr<runtime::StatusBoard> board_ = std::make_shared<runtime::StatusBoard>();
  std::vector<std::shared_ptr<ScriptedPeer>> peers_;
  std::vector<std::pair<std::string, bool>> dials_;
  std::set<std::string> answered_;
  const std::string repo_ = "30617:" + std::string(64, 'a') + ":demo";
  const std::string relay_ = "wss://peer.example";
};

TEST_F(SyncActorsTest, InitialConnectConfirmsRepositoryAfterAllEose) {
  start_manager();
  anon_send(manager_, discovery(repo_, {relay_}));
  run();
  ASSERT_EQ(peers_.size(), 1u);
  EXPECT_EQ(dials_[0].first, "peer.example");
  EXPECT_FALSE(dials_[0].second) << "relays from events may not be private";
  peers_[0]->handler->on_open({});
  run();
  auto reqs = peers_[0]->reqs();
  ASSERT_GE(reqs.size(), 2u);
  for (const auto& [id, filters] : reqs)
    for (const auto& f : filters) EXPECT_FALSE(f.since) << "fresh sync";
  EXPECT_EQ(relay_state(relay_).pending.size(), 1u);
  answer_all_with_eose(*peers_[0]);
  EXPECT_TRUE(relay_state(relay_).pending.empty());
  EXPECT_EQ(relay_state(relay_).confirmed.repos.count(repo_), 1u);
  advance_time(1s);
  auto status = board_->get("sync");
  ASSERT_TRUE(status);
  rapidjson::Document doc;
  doc.Parse(status->c_str());
  ASSERT_TRUE(doc.IsObject()) << *status;
  ASSERT_TRUE(doc.HasMember("relays") && doc["relays"].IsArray()) << *status;
  const rapidjson::Value* peer = nullptr;
  for (const auto& relay : doc["relays"].GetArray())
    if (relay.HasMember("url") && relay["url"] == "wss://peer.example") peer = &relay;
  ASSERT_NE(peer, nullptr) << *status;
  ASSERT_TRUE(peer->HasMember("repos_confirmed") && (*peer)["repos_confirmed"].IsUint64())
      << *status;
  EXPECT_EQ((*peer)["repos_confirmed"].GetUint64(), 1u) << *status;
}

TEST_F(SyncActorsTest, PeerEventsAreVerifiedAndStored) {
  connect_first_peer();
  auto [sub, filters] = peers_[0]->reqs().back();
  auto issue = signed_event(1621, {{"a", repo_}}, unix_now() - 10);
  auto forged = issue;
  forged.content = "tampered";
  peers_[0]->handler->on_message(nostr::relay_event(sub, nostr::serialize_event(issue)));
  peers_[0]->handler->on_message(nostr::relay_event(sub, nostr::serialize_event(forged)));
  peers_[0]->handler->on_message("[\"EVENT\",\"" + sub + "\",{\"garbage\":1}]");
  run();
  EXPECT_TRUE(store_->contains(issue.id));
  advance_time(1s);  // traffic report
  auto& figures = manager_state().figures.at(relay_);
  EXPECT_EQ(figures.events_stored, 1u);
  EXPECT_EQ(figures.events_invalid, 2u);
}

TEST_F(SyncActorsTest, EveryFrameIsReportedConsumedWhateverItWas) {
  connect_first_peer();
  auto& peer = *peers_[0];
  auto [sub, filters] = peer.reqs().back();
  std::size_t delivered = 0;
  auto deliver = [&](std::string frame) {
    delivered += frame.size();
    peer.handler->on_message(std::move(frame));
  };
  // A NOTICE flood (more than one report batch) and garbage.
  for (int i = 0; i < 64; ++i) deliver("[\"NOTICE\",\"" + std::string(8 * 1024, 'n') + "\"]");
  run();
  EXPECT_GE(peer.consumed_bytes, 256u * 1024) << "reports in batches, not only on the tick";
  for (int i = 0; i < 16; ++i) deliver(std::string(4 * 1024, '{'));
  // Events: stored, then known, under a forged id, for an unknown subscription; then EOSE.
  auto issue = signed_event(1621, {{"a", repo_}}, unix_now() - 10);
  auto forged = issue;
  forged.content = "tampered";
  deliver(nostr::relay_event(sub, nostr::serialize_event(issue)));
  run();
  deliver(nostr::relay_event(sub, nostr::serialize_event(issue)));
  deliver(nostr::relay_event(sub, nostr::serialize_event(forged)));
  deliver(nostr::relay_event("nobody", nostr::serialize_event(issue)));
  deliver(nostr::relay_eose(sub));
  run();
  EXPECT_TRUE(store_->contains(issue.id));
  EXPECT_LT(peer.consumed_bytes, delivered) << "the last batch waits for the tick";
  advance_time(1s);
  EXPECT_EQ(peer.consumed_bytes, delivered);
}

TEST_F(SyncActorsTest, AlreadyStoredEventsSkipTheSignatureCheckButForgedIdsDoNot) {
  connect_first_peer();
  auto [sub, filters] = peers_[0]->reqs().back();
  auto issue = signed_event(1621, {{"a", repo_}}, unix_now() - 10);
  peers_[0]->handler->on_message(nostr::relay_event(sub, nostr::serialize_event(issue)));
  run();
  ASSERT_TRUE(store_->contains(issue.id));
  // The same event again, with a signature that would not verify: known by its id, so skipped
  // (a signature check would count it invalid).
  auto again = issue;
  again.sig[7] ^= 1;
  peers_[0]->handler->on_message(nostr::relay_event(sub, nostr::serialize_event(again)));
  // Other content under the stored id: the id no longer matches, so it is invalid, not known.
  auto forged = issue;
  forged.content = "tampered";
  peers_[0]->handler->on_message(nostr::relay_event(sub, nostr::serialize_event(forged)));
  run();
  advance_time(1s);  // traffic report
  auto& figures = manager_state().figures.at(relay_);
  EXPECT_EQ(figures.events_received, 3u);
  EXPECT_EQ(figures.events_stored, 1u);
  EXPECT_EQ(figures.events_known, 1u);
  EXPECT_EQ(figures.events_invalid, 1u);
  advance_time(1s);  // status publication
  auto status = board_->get("sync");
  ASSERT_TRUE(status);
  rapidjson::Document doc;
  doc.Parse(status->c_str());
  ASSERT_TRUE(doc.IsObject()) << *status;
  ASSERT_EQ(doc["relays"].Size(), 1u);
  EXPECT_EQ(doc["relays"][0]["events_known"].GetUint64(), 1u) << *status;
  EXPECT_EQ(doc["relays"][0]["events_stored"].GetUint64(), 1u) << *status;
}

TEST_F(SyncActorsTest, TheVerifiersRefuseABadSignatureUnderAGoodId) {
  connect_first_peer();
  auto [sub, filters] = peers_[0]->reqs().back();
  auto forged = signed_event(1621, {{"a", repo_}}, unix_now() - 10);
  forged.sig[3] ^= 1;  // the id still matches the content: only the signature check can tell
  peers_[0]->handler->on_message(nostr::relay_event(sub, nostr::serialize_event(forged)));
  run();
  advance_time(1s);  // traffic report
  EXPECT_FALSE(store_->contains(forged.id));
  EXPECT_EQ(manager_state().figures.at(relay_).events_invalid, 1u);
}

TEST_F(SyncActorsTest, WithoutVerifiersTheConnectionChecksSignaturesItself) {
  connect_first_peer(std::vector<verifier_actor>{});
  auto [sub, filters] = peers_[0]->reqs().back();
  auto issue = signed_event(1621, {{"a", repo_}}, unix_now() - 10);
  auto forged = signed_event(1621, {{"a", repo_}}, unix_now() - 9);
  forged.sig[1] ^= 1;
  peers_[0]->handler->on_message(nostr::relay_event(sub, nostr::serialize_event(issue)));
  peers_[0]->handler->on_message(nostr::relay_event(sub, nostr::serialize_event(forged)));
  run();
  EXPECT_TRUE(store_->contains(issue.id));
  EXPECT_FALSE(store_->contains(forged.id));
}

TEST_F(SyncActorsTest, EoseWaitsForTheSignatureChecksOfTheEventsBeforeIt) {
  auto holding = spawn(test::holding_verifier);
  connect_first_peer(std::vector<verifier_actor>{holding});
  auto [sub, filters] = peers_[0]->reqs().back();
  const auto reqs_before = peers_[0]->reqs().size();
  auto newer = signed_event(1621, {{"a", repo_}}, unix_now() - 50);
  auto older = signed_event(1621, {{"a", repo_}}, unix_now() - 100);
  peers_[0]->handler->on_message(nostr::relay_event(sub, nostr::serialize_event(newer)));
  peers_[0]->handler->on_message(nostr::relay_event(sub, nostr::serialize_event(older)));
  peers_[0]->handler->on_message(nostr::relay_eose(sub));
  run();
  EXPECT_EQ(peers_[0]->reqs().size(), reqs_before) << "EOSE handled before its events";
  EXPECT_FALSE(store_->contains(newer.id));
  caf::anon_send(holding, VerifyEvent{nullptr});
  run();
  EXPECT_TRUE(store_->contains(newer.id));
  EXPECT_TRUE(store_->contains(older.id));
  // The events reached the pager before EOSE: it asks for the history older than the oldest.
  auto reqs = peers_[0]->reqs();
  ASSERT_EQ(reqs.size(), reqs_before + 1);
  EXPECT_EQ(reqs.back().first, sub + "~1");
  for (const auto& filter : reqs.back().second) {
    ASSERT_TRUE(filter.until);
    EXPECT_EQ(*filter.until, older.created_at);
  }
}

TEST_F(SyncActorsTest, EventsMatchingNoFilterAskedForAreDroppedUnchecked) {
  auto holding = spawn(test::holding_verifier);
  connect_first_peer(std::vector<verifier_actor>{holding});
  std::size_t sent = 0;
  // A hostile peer answers every subscription with valid events nobody asked for.
  for (const auto& [sub, filters] : peers_[0]->reqs())
    for (int i = 0; i < 20; ++i, ++sent)
      peers_[0]->handler->on_message(nostr::relay_event(
          sub, nostr::serialize_event(signed_event(1, {{"t", "spam"}}, unix_now() - i))));
  auto wanted = signed_event(1621, {{"a", repo_}}, unix_now() - 5);
  auto [sub, filters] = peers_[0]->reqs().back();
  peers_[0]->handler->on_message(nostr::relay_event(sub, nostr::serialize_event(wanted)));
  run();
  auto& held = state<test::HoldingVerifierState, verifier_actor::base>(holding).held;
  ASSERT_EQ(held.size(), 1u) << "only the event asked for reaches a signature check";
  EXPECT_EQ(held[0].second->id, wanted.id);
  caf::anon_send(holding, VerifyEvent{nullptr});
  run();
  EXPECT_TRUE(store_->contains(wanted.id));
  advance_time(1s);  // traffic report
  const auto& figures = manager_state().figures.at(relay_);
  EXPECT_EQ(figures.events_unrequested, sent);
  EXPECT_EQ(figures.events_received, sent + 1);
}

TEST_F(SyncActorsTest, QuickReconnectCatchesUpAndStaleReconnectStartsOver) {
  connect_first_peer();
  answer_all_with_eose(*peers_[0]);
  const auto disconnected_at = unix_now();
  peers_[0]->handler->on_close(true, "connection reset");
  run();
  EXPECT_EQ(relay_state(relay_).status, sync::ConnectionStatus::disconnected);
  // Backoff: no new dial before the base delay.
  advance_time(4s);
  EXPECT_EQ(peers_.size(), 1u);
  advance_time(1s);
  ASSERT_EQ(peers_.size(), 2u);
  peers_[1]->handler->on_open({});
  run();
  auto reqs = peers_[1]->reqs();
  ASSERT_FALSE(reqs.empty());
  for (const auto& [id, filters] : reqs)
    for (const auto& f : filters) EXPECT_EQ(f.since.value_or(0), disconnected_at - 900);
  EXPECT_TRUE(relay_state(relay_).pending.empty()) << "catch-up confirms nothing new";
  // Now a stale reconnect: down for more than the quick window.
  peers_[1]->handler->on_close(true, "gone");
  run();
  advance_time(std::chrono::seconds(901));
  ASSERT_GE(peers_.size(), 3u);
  peers_.back()->handler->on_open({});
  run();
  for (const auto& [id, filters] : peers_.back()->reqs())
    for (const auto& f : filters) EXPECT_FALSE(f.since);
  EXPECT_EQ(relay_state(relay_).pending.size(), 1u);
}

TEST_F(SyncActorsTest, FailedFirstDialIsRetriedAndBootstrapIsTrusted) {
  start_manager("ws://127.0.0.1:9");
  ASSERT_EQ(peers_.size(), 1u);
  EXPECT_TRUE(dials_[0].second) << "operator-configured relays may be private";
  peers_[0]->handler->on_close(false, "connection refused");
  run();
  advance_time(5s);
  ASSERT_EQ(peers_.size(), 2u);
  peers_[1]->handler->on_close(false, "connection refused");
  run();
  advance_time(9s);
  EXPECT_EQ(peers_.size(), 2u);
  advance_time(1s);
  EXPECT_EQ(peers_.size(), 3u) << "second backoff is 10 s";
}

TEST_F(SyncActorsTest, RateLimitedSubscriptionWaitsForCooldown) {
  connect_first_peer();
  auto before = peers_[0]->reqs().size();
  auto victim = peers_[0]->reqs().back().first;
  peers_[0]->handler->on_message(nostr::relay_closed(victim, "rate-limited: slow down"));
  run();
  advance_time(60s);
  EXPECT_EQ(peers_[0]->reqs().size(), before);
  advance_time(5s);
  EXPECT_EQ(peers_[0]->reqs().size(), before + 1) << "re-sent after the 65 s cooldown";
}

TEST_F(SyncActorsTest, DailyTickRunsAFreshSync) {
  connect_first_peer();
  answer_all_with_eose(*peers_[0]);
  ASSERT_EQ(relay_state(relay_).confirmed.repos.size(), 1u);
  auto sent_before = peers_[0]->sent.size();
  advance_time(std::chrono::hours(25));
  EXPECT_EQ(manager_state().plan->totals().daily_syncs, 1u);
  EXPECT_GT(peers_[0]->sent.size(), sent_before);
  EXPECT_EQ(relay_state(relay_).pending.size(), 1u) << "confirmed state cleared, re-fetched";
}

TEST_F(SyncActorsTest, SelfSubscriberLoadsStoreAndBatchesWithoutResettingTheWindow) {
  auto announcement = signed_event(
      30617, {{"d", "demo"}, {"relays", "wss://Peer.example/", "wss://u:p@bad.example"}},
      unix_now() - 100);
  auto issue = signed_event(1621, {{"a", nostr::address_of(announcement)}}, unix_now() - 50);
  store_->write_batch(
      std::vector<nostr::EventPtr>{std::make_shared<const nostr::Event>(announcement),
                                   std::make_shared<const nostr::Event>(issue)});

  std::vector<RepoDiscovery> received;
  // A strict mock of the sync manager: the self-subscriber only sends discoveries.
  auto recorder = spawn([&](sync_manager_actor::pointer) -> sync_manager_actor::behavior_type {
    return {[&](RepoDiscovery& d) { received.push_back(d); },
            [](RelayUp&) { unexpected_at_manager("RelayUp"); },
            [](RelayDown&) { unexpected_at_manager("RelayDown"); },
            [](RelaySubscriptionDone&) { unexpected_at_manager("RelaySubscriptionDone"); },
            [](RelaySubscriptionClosed&) { unexpected_at_manager("RelaySubscriptionClosed"); },
            [](RelayRateLimited&) { unexpected_at_manager("RelayRateLimited"); },
            [](RelayTraffic&) { unexpected_at_manager("RelayTraffic"); },
            [](RetryTimer&) { unexpected_at_manager("RetryTimer"); },
            [](DailyTick&) { unexpected_at_manager("DailyTick"); },
            [](atom::tick) { unexpected_at_manager("atom::tick"); },
            [](atom::publish) { unexpected_at_manager("atom::publish"); },
            [](atom::status) {
              unexpected_at_manager("atom::status");
              return std::string{};
            }};
  });
  auto subscriber = spawn(self_subscriber, std::shared_ptr<const store::EventStore>(store_),
                          recorder, std::chrono::milliseconds(5000));
  run();
  ASSERT_EQ(received.size(), 1u);
  ASSERT_EQ(received[0].repos.size(), 1u);
  const auto& repo = received[0].repos[0];
  EXPECT_EQ(repo.repo, nostr::address_of(announcement));
  EXPECT_EQ(*repo.relays, std::set<std::string>{"wss://peer.example"});
  EXPECT_EQ(repo.roots, std::set<nostr::EventId>{issue.id});

  auto committed = [&](const nostr::Event& ev) {
    anon_send(subscriber, StoreCommitted{std::make_shared<const nostr::Event>(ev), nullptr});
    run();
  };
  committed(signed_event(1617, {{"a", repo.repo}}, unix_now()));
  advance_time(4s);
  committed(signed_event(1618, {{"a", repo.repo}}, unix_now()));
  committed(signed_event(1, {{"e", "x"}}, unix_now()));  // unrelated
  EXPECT_EQ(received.size(), 1u);
  advance_time(1s);  // 5 s after the first event, despite the second one
  ASSERT_EQ(received.size(), 2u);
  EXPECT_EQ(received[1].repos[0].roots.size(), 2u);
  advance_time(10s);
  EXPECT_EQ(received.size(), 2u) << "no empty batches";
}

TEST(SelfSubscriberFacts, OnlyWellFormedRepositoryAddressesOfRootsAreCollected) {
  auto announcement = signed_event(30617, {{"d", "demo"}}, 100);
  auto repo = nostr::address_of(announcement);
  const std::string owner_hex(64, 'b');
  auto issue = signed_event(1621,
                            {{"a", repo},
                             {"a", "30617:zz:demo"},
                             {"a", "4294997913:" + owner_hex + ":demo"},
                             {"a", "30618:" + owner_hex + ":demo"},
                             {"a", "30617:" + owner_hex + ":a:b"}},
                            200);
  std::map<std::string, RepoDiscovery::Repo> pending;
  collect_repository_facts(issue, pending);
  std::set<std::string> repos;
  for (const auto& [key, facts] : pending) repos.insert(key);
  EXPECT_EQ(repos, (std::set<std::string>{repo, "30617:" + owner_hex + ":a:b"}));
  // A kind that is not a root contributes nothing, whatever it tags.
  pending.clear();
  collect_repository_facts(signed_event(1, {{"a", repo}}, 300), pending);
  EXPECT_TRUE(pending.empty());
}

}  // namespace
}  // namespace graspd
