// Deterministic tests of the sync manager under the test coordinator: discovery, confirmation
// after EOSE, reconnects with backoff, rate-limit cooldowns and the daily fresh sync, against a
// scripted peer (sync_fixture.hpp).
#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include "tests/actors/sync_fixture.hpp"

namespace graspd {
namespace {

using namespace std::chrono_literals;
using sync_test::signed_event;

class SyncManagerTest : public sync_test::SyncFixture {};

TEST_F(SyncManagerTest, InitialConnectConfirmsRepositoryAfterAllEose) {
  start_manager();
  anon_send(manager_, discovery(repo_, {relay_}));
  run();
  ASSERT_EQ(peers_.size(), 1u);
  EXPECT_EQ(dials_[0].first, "peer.example");
  EXPECT_FALSE(dials_[0].second) << "relays from events may not be private";
  peers_[0]->handler->on_open(req_only_peer(), false);
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
  doc.Parse(status->c_str(), status->size());
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

TEST_F(SyncManagerTest, WithNoRelaysTheManagerSleepsUntilSomethingChanges) {
  start_manager();
  ASSERT_TRUE(board_->get("sync")) << "the first status is published at start";
  for (int second = 0; second < 30; ++second)
    EXPECT_EQ(advance_time(1s), 0u) << "no timer fires every second while nothing is tracked";
  anon_send(manager_, discovery(repo_, {relay_}));
  run();
  EXPECT_GE(advance_time(1s), 1u) << "a change arms the status refresh again";
  auto status = board_->get("sync");
  ASSERT_TRUE(status);
  rapidjson::Document doc;
  doc.Parse(status->c_str(), status->size());
  ASSERT_TRUE(doc.IsObject() && doc.HasMember("relays") && doc["relays"].IsArray()) << *status;
  EXPECT_EQ(doc["relays"].Size(), 1u) << *status;
}

TEST_F(SyncManagerTest, ThePurgatorySectionFollowsTheHeldCounts) {
  purgatory_ = std::make_shared<policy::PurgatoryFigures>();
  purgatory_->held[static_cast<std::size_t>(policy::HeldKind::announcement)] = 2;
  start_manager();
  anon_send(manager_, discovery(repo_, {relay_}));  // a tracked relay keeps the refresh armed
  run();
  auto section = [&](const char* key) {
    advance_time(1s);
    auto status = board_->get("sync");
    rapidjson::Document doc;
    doc.Parse(status->c_str(), status->size());
    EXPECT_TRUE(doc.IsObject() && doc.HasMember("purgatory")) << *status;
    const auto& p = doc["purgatory"];
    if (std::string_view(key) == "released") return p["released"].GetUint64();
    return p["held"][key].GetUint64();
  };
  EXPECT_EQ(section("announcement"), 2u);
  EXPECT_EQ(section("state"), 0u);
  EXPECT_EQ(section("released"), 0u);
  purgatory_->held[static_cast<std::size_t>(policy::HeldKind::announcement)] = 1;
  purgatory_->released = 1;
  EXPECT_EQ(section("announcement"), 1u) << "a change alone republishes the status";
  EXPECT_EQ(section("released"), 1u);
}

TEST_F(SyncManagerTest, AStateOnlyRepositoryAsksItsRelayForStatesOnlyAndShowsItsLevel) {
  start_manager();
  auto held = discovery(repo_, {relay_});
  held.repos[0].level = SyncLevel::state_only;
  anon_send(manager_, held);
  run();
  ASSERT_EQ(peers_.size(), 1u);
  peers_[0]->handler->on_open(req_only_peer(), false);
  run();
  std::vector<nostr::Filter> items;  // every filter but layer 1's (kind 30617 only)
  for (const auto& [id, filters] : peers_[0]->reqs())
    for (const auto& f : filters)
      if (f.kinds != std::vector<std::uint32_t>{30617}) items.push_back(f);
  ASSERT_EQ(items.size(), 1u);
  EXPECT_EQ(items[0].kinds, std::vector<std::uint32_t>{30618});
  EXPECT_EQ(items[0].tags, (std::map<char, std::vector<std::string>>{{'d', {"demo"}}}));
  EXPECT_FALSE(items[0].authors);
  answer_all_with_eose(*peers_[0]);
  advance_time(1s);
  auto status = board_->get("sync");
  ASSERT_TRUE(status);
  rapidjson::Document doc;
  doc.Parse(status->c_str(), status->size());
  ASSERT_TRUE(doc.IsObject() && doc.HasMember("repository_levels")) << *status;
  EXPECT_EQ(doc["repository_levels"]["state_only"].GetUint64(), 1u) << *status;
  EXPECT_EQ(doc["repository_levels"]["full"].GetUint64(), 0u) << *status;
  EXPECT_EQ(doc["relays"][0]["states_confirmed"].GetUint64(), 1u) << *status;
  EXPECT_EQ(doc["relays"][0]["repos_confirmed"].GetUint64(), 0u) << *status;
}

TEST_F(SyncManagerTest, QuickReconnectCatchesUpAndStaleReconnectStartsOver) {
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
  peers_[1]->handler->on_open(req_only_peer(), false);
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
  peers_.back()->handler->on_open(req_only_peer(), false);
  run();
  for (const auto& [id, filters] : peers_.back()->reqs())
    for (const auto& f : filters) EXPECT_FALSE(f.since);
  EXPECT_EQ(relay_state(relay_).pending.size(), 1u);
}

TEST_F(SyncManagerTest, FailedFirstDialIsRetriedAndBootstrapIsTrusted) {
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

/// What a stand-in acceptance actor holds in purgatory and who follows its peer feed.
struct HeldHere {
  std::vector<nostr::EventPtr> held;
  std::vector<peer_feed_actor> followers;
};

/// The acceptance actor's interface over `here`: answers held_events with what it holds and keeps
/// its peer-feed followers; accepts every query.
acceptance_actor::behavior_type stand_in_acceptance(acceptance_actor::pointer,
                                                    std::shared_ptr<HeldHere> here) {
  return {
      [](AcceptanceQuery&) { return AcceptanceVerdict{}; },
      [](const StoreCommits&) {},
      [](GitDataArrived&) {},
      [](atom::feed_subscribe, held_feed_actor&) {},
      [here](atom::feed_subscribe, peer_feed_actor& follower) {
        here->followers.push_back(follower);
      },
      [here](atom::held_events) { return HeldForPeers{here->held}; },
      [](StoreModeration&) { return true; },
      [](atom::tick) {},
      [](StateAnswerDue&) {},
  };
}

nostr::EventPtr held_event(std::uint32_t kind, std::int64_t created_at) {
  return std::make_shared<const nostr::Event>(signed_event(kind, {{"d", "demo"}}, created_at));
}

/// The ids of the events published to `peer` (EVENT frames), in order.
std::vector<std::string> published_ids(const sync_test::ScriptedPeer& peer) {
  std::vector<std::string> out;
  for (const auto& frame : peer.frames("EVENT")) {
    rapidjson::Document doc;
    doc.Parse(frame.c_str(), frame.size());
    out.push_back(doc[1]["id"].GetString());
  }
  return out;
}

TEST_F(SyncManagerTest, AClusterPeerIsTrustedAskedForEverythingAndSentWhatIsHeldHere) {
  auto here = std::make_shared<HeldHere>();
  const auto announcement = held_event(30617, 1'700'000'000);
  here->held.push_back(announcement);
  acceptance_ = spawn(stand_in_acceptance, here);
  cluster_peers_ = {relay_};
  start_manager();
  ASSERT_EQ(peers_.size(), 1u) << "a peer is dialled with no repository listing it";
  EXPECT_TRUE(dials_[0].second) << "peers are operator input: private addresses allowed";
  ASSERT_EQ(here->followers.size(), 1u) << "the manager follows the peer feed";
  EXPECT_TRUE(relay_state(relay_).is_peer);
  // Held before the connection is up: nothing can be sent yet, and nothing is lost, since the
  // peer is sent everything held here once it connects.
  const auto early_state = held_event(30618, 1'700'000'001);
  here->held.push_back(early_state);
  anon_send(manager_, HeldForPeers{{early_state}});
  run();
  EXPECT_TRUE(peers_[0]->frames("EVENT").empty());
  peers_[0]->handler->on_open(req_only_peer(), false);
  run();
  EXPECT_EQ(published_ids(*peers_[0]), (std::vector<std::string>{nostr::to_hex(announcement->id),
                                                                 nostr::to_hex(early_state->id)}));
  auto reqs = peers_[0]->reqs();
  ASSERT_EQ(reqs.size(), 1u) << "one subscription: everything";
  ASSERT_EQ(reqs[0].second.size(), 1u);
  EXPECT_TRUE(reqs[0].second[0].tags.empty());
  EXPECT_FALSE(reqs[0].second[0].kinds);
  // A new hold goes to the connected peer as it is recorded, and the acceptance actor's reply
  // (its client's OK) waits for the peer's answer.
  const auto later = held_event(30618, 1'700'000'002);
  caf::scoped_actor acceptance{system()};
  auto answer = [&] {
    std::optional<bool> reply;
    acceptance->receive([&](bool all_held) { reply = all_held; }, caf::after(0s) >> [] {});
    return reply;
  };
  acceptance->send(manager_, HeldForPeers{{later}});
  run();
  auto ids = published_ids(*peers_[0]);
  ASSERT_EQ(ids.size(), 3u);
  EXPECT_EQ(ids[2], nostr::to_hex(later->id));
  EXPECT_FALSE(answer()) << "the peer has not answered yet";
  peers_[0]->handler->on_message(nostr::relay_ok(later->id, true, "purgatory: waiting"));
  run();
  EXPECT_EQ(answer(), true);
  // A peer that does not answer holds the reply up for the wait only, and it then says so.
  const auto unanswered = held_event(30618, 1'700'000'003);
  acceptance->send(manager_, HeldForPeers{{unanswered}});
  run();
  advance_time(1s);
  EXPECT_FALSE(answer());
  advance_time(1s);
  EXPECT_EQ(answer(), false);
  // After a drop, the peer is dialled again after the base backoff and sent everything again.
  peers_[0]->handler->on_close(true, "reset");
  run();
  advance_time(5s);
  ASSERT_EQ(peers_.size(), 2u);
  peers_[1]->handler->on_open(req_only_peer(), false);
  run();
  EXPECT_EQ(published_ids(*peers_[1]).size(), 2u);
}

TEST_F(SyncManagerTest, RateLimitedSubscriptionWaitsForCooldown) {
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

TEST_F(SyncManagerTest, DailyTickRunsAFreshSync) {
  connect_first_peer();
  answer_all_with_eose(*peers_[0]);
  ASSERT_EQ(relay_state(relay_).confirmed.repos.size(), 1u);
  auto sent_before = peers_[0]->sent.size();
  advance_time(std::chrono::hours(25));
  EXPECT_EQ(manager_state().plan->totals().daily_syncs, 1u);
  EXPECT_GT(peers_[0]->sent.size(), sent_before);
  EXPECT_EQ(relay_state(relay_).pending.size(), 1u) << "confirmed state cleared, re-fetched";
}

// -- GRASP-03 fetch path -------------------------------------------------------------------------

nostr::Filters kinds_filter() {
  nostr::Filter filter;
  filter.kinds = std::vector<std::uint32_t>{10002};
  return {filter};
}

TEST_F(SyncManagerTest, FetchesRefuseOurselvesAndRelaysWaitingForTheirReconnect) {
  start_manager();
  manager_state().config.plan.own_relays.insert("wss://self.example");
  auto own = request<FetchOutcome>(
      manager_, RelayFetch{"wss://self.example", kinds_filter(), false, FetchRole::discovery});
  ASSERT_TRUE(own);
  EXPECT_FALSE(own->ok);
  anon_send(manager_, discovery(repo_, {relay_}));
  run();
  peers_[0]->handler->on_close(false, "connection refused");  // the plan backs off
  run();
  auto waiting = request<FetchOutcome>(
      manager_, RelayFetch{relay_, kinds_filter(), false, FetchRole::history});
  ASSERT_TRUE(waiting);
  EXPECT_FALSE(waiting->ok);
  EXPECT_EQ(dials_.size(), 1u) << "the plan owns the reconnect timing";
}

TEST_F(SyncManagerTest, AFetchOnAControlConnectionFailsWhenItDropsAndATimeoutEndsASilentOne) {
  start_manager();
  caf::scoped_actor client{system()};
  std::vector<FetchOutcome> outcomes;
  client->send(manager_,
               RelayFetch{"wss://mailbox.example", kinds_filter(), false, FetchRole::history});
  run();
  ASSERT_EQ(dials_.size(), 1u);
  EXPECT_FALSE(dials_[0].second) << "untrusted: private addresses stay refused";
  EXPECT_EQ(manager_state().control.count("wss://mailbox.example"), 1u);
  EXPECT_FALSE(manager_state().plan->relays().count("wss://mailbox.example"))
      << "a control-plane connection starts no ordinary sync";
  peers_[0]->handler->on_close(false, "connection refused");
  run();
  client->receive([&](FetchOutcome& outcome) { outcomes.push_back(outcome); },
                  caf::after(std::chrono::seconds(0)) >> [] {});
  ASSERT_EQ(outcomes.size(), 1u);
  EXPECT_FALSE(outcomes[0].ok);
  EXPECT_TRUE(manager_state().control.empty());
  // A second fetch dials again; the peer opens and never answers: 30 s end it.
  client->send(manager_,
               RelayFetch{"wss://mailbox.example", kinds_filter(), false, FetchRole::history});
  run();
  ASSERT_EQ(dials_.size(), 2u);
  peers_[1]->handler->on_open(req_only_peer(), false);
  run();
  EXPECT_EQ(peers_[1]->reqs().size(), 1u);
  advance_time(30s);
  client->receive([&](FetchOutcome& outcome) { outcomes.push_back(outcome); },
                  caf::after(std::chrono::seconds(0)) >> [] {});
  ASSERT_EQ(outcomes.size(), 2u);
  EXPECT_EQ(outcomes[1].error, "timed out");
  EXPECT_EQ(peers_[1]->frames("CLOSE").size(), 1u);
  advance_time(10s);
  EXPECT_TRUE(peers_[1]->closed) << "idle control connections retire";
  EXPECT_EQ(manager_state().fetch_counts.control_retired, 1u);
}

TEST_F(SyncManagerTest, AFetchLivesOnWhileItsRelayProgressesAndEndsAtTheLongestDuration) {
  start_manager();
  caf::scoped_actor client{system()};
  std::optional<FetchOutcome> outcome;
  auto poll = [&] {
    client->receive([&](FetchOutcome& o) { outcome = o; },
                    caf::after(std::chrono::seconds(0)) >> [] {});
  };
  auto fetch = [&] {
    client->send(manager_,
                 RelayFetch{"wss://mailbox.example", kinds_filter(), false, FetchRole::history});
    run();
  };
  fetch();
  peers_.back()->handler->on_open(req_only_peer(), false);
  run();
  auto sub = peers_.back()->reqs().at(0).first;
  std::int64_t at = 1'700'000'000;
  auto requested_event = [&] {  // one event the fetch asked for, reported on the next tick
    peers_.back()->handler->on_message(
        nostr::relay_event(sub, nostr::serialize_event(sync_test::signed_event(10002, {}, at++))));
    run();
    advance_time(1s);
  };
  // Noise does not count: an event of another kind leaves the fetch to its 30 s.
  peers_.back()->handler->on_message(
      nostr::relay_event(sub, nostr::serialize_event(sync_test::signed_event(1, {}, at++))));
  run();
  advance_time(30s);
  poll();
  ASSERT_TRUE(outcome) << "unrequested events are no progress";
  EXPECT_EQ(outcome->error, "timed out");

  // Progress every 20 s keeps a fetch going past 30 s, up to its longest duration (300 s).
  outcome.reset();
  fetch();
  sub = peers_.back()->reqs().back().first;
  for (int i = 0; i < 14; ++i) {
    advance_time(19s);
    requested_event();
    poll();
    ASSERT_FALSE(outcome) << "still progressing at " << (i + 1) * 20 << " s";
  }
  advance_time(40s);
  poll();
  ASSERT_TRUE(outcome) << "ended at its longest duration, however it progresses";
  EXPECT_EQ(outcome->error, "timed out");
}

TEST_F(SyncManagerTest, AFetchIsPackedToThePeersLimitsAndEndsWhenEveryPartDid) {
  start_manager();
  nostr::Filters filters;
  for (std::uint32_t kind : {1u, 7u, 1111u}) {
    nostr::Filter filter;
    filter.kinds = std::vector<std::uint32_t>{kind};
    filters.push_back(filter);
  }
  caf::scoped_actor client{system()};
  client->send(manager_, RelayFetch{"wss://mailbox.example", filters, false, FetchRole::history});
  run();
  ASSERT_EQ(peers_.size(), 1u);
  auto limits = req_only_peer();
  limits.max_filters = 2;  // the peer's NIP-11 says: at most two filters per REQ
  peers_[0]->handler->on_open(limits, false);
  run();
  auto reqs = peers_[0]->reqs();
  ASSERT_EQ(reqs.size(), 2u);
  EXPECT_EQ(reqs[0].second.size() + reqs[1].second.size(), 3u);
  for (const auto& [id, sent] : reqs) EXPECT_LE(sent.size(), 2u);
  peers_[0]->handler->on_message(nostr::relay_eose(reqs[0].first));
  run();
  bool replied = false;
  client->receive([&](FetchOutcome&) { replied = true; },
                  caf::after(std::chrono::seconds(0)) >> [] {});
  EXPECT_FALSE(replied) << "one part is still open";
  peers_[0]->handler->on_message(nostr::relay_eose(reqs[1].first));
  run();
  std::optional<FetchOutcome> outcome;
  client->receive([&](FetchOutcome& o) { outcome = o; },
                  caf::after(std::chrono::seconds(0)) >> [] {});
  ASSERT_TRUE(outcome);
  EXPECT_TRUE(outcome->ok);
  EXPECT_EQ(peers_[0]->frames("CLOSE").size(), 2u);
  EXPECT_TRUE(manager_state().fetch_parts.empty());
}

}  // namespace
}  // namespace graspd
