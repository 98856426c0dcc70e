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
  peers_[0]->handler->on_open(req_only_peer());
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
  doc.Parse(status->c_str());
  ASSERT_TRUE(doc.IsObject() && doc.HasMember("relays") && doc["relays"].IsArray()) << *status;
  EXPECT_EQ(doc["relays"].Size(), 1u) << *status;
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
  peers_[1]->handler->on_open(req_only_peer());
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
  peers_.back()->handler->on_open(req_only_peer());
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

}  // namespace
}  // namespace graspd
