// Deterministic tests of the GRASP-03 Sync+ controller and its history workers, with the real
// sync manager, relay connections, self-subscriber and store under the test coordinator; remote
// relays are scripted peers (sync_fixture.hpp).
#include "actors/plus/sync_plus.hpp"

#include <gtest/gtest.h>

#include "actors/plus/history_worker.hpp"
#include "actors/sync/self_subscriber.hpp"
#include "tests/actors/sync_fixture.hpp"

namespace graspd {
namespace {

using namespace std::chrono_literals;
using sync_test::signed_event;

class SyncPlusTest : public sync_test::SyncFixture {
 protected:
  void store(const std::vector<nostr::Event>& events) {
    std::vector<nostr::EventPtr> batch;
    for (const auto& ev : events) batch.push_back(std::make_shared<const nostr::Event>(ev));
    store_->write_batch(batch);
  }

  void start_plus(SyncPlusConfig config = {}) {
    start_manager();
    config.unix_now = [this] { return unix_now(); };
    plus_ = spawn(sync_plus, config, manager_, nullptr);
    subscriber_ = spawn(self_subscriber_plus, std::shared_ptr<const store::EventStore>(store_),
                        manager_, std::chrono::milliseconds(100), plus_);
    anon_send(writer_, atom::feed_subscribe::value, caf::actor_cast<store_feed_actor>(subscriber_));
    run();
  }

  /// Answers every REQ with EOSE, the page REQs that follow included.
  void drain(sync_test::ScriptedPeer& peer) {
    std::size_t answered = 0;
    do {
      answered = answered_.size();
      answer_all_with_eose(peer);
    } while (answered_.size() != answered);
  }

  /// Opens every peer dialled since the last call and answers its REQs with EOSE (after `answer`
  /// looked at them).
  void open_new_peers(const std::function<void(const nostr::Filters&)>& answer = {}) {
    while (opened_ < peers_.size()) {
      auto& peer = *peers_[opened_++];
      peer.handler->on_open(req_only_peer(), false);
      run();
      if (answer)
        for (const auto& [id, filters] : peer.reqs()) answer(filters);
      drain(peer);
    }
  }

  SyncPlusState& plus_state() { return state<SyncPlusState, sync_plus_actor::base>(plus_); }

  /// Hosts dialled so far, in order.
  std::vector<std::string> dialled_hosts() const {
    std::vector<std::string> out;
    for (const auto& [host, trusted] : dials_) out.push_back(host);
    return out;
  }

  /// The peer dialled for `host` (the first one).
  sync_test::ScriptedPeer* peer_of(const std::string& host) {
    for (std::size_t i = 0; i < dials_.size(); ++i)
      if (dials_[i].first == host) return peers_[i].get();
    return nullptr;
  }

  /// Announcement by key 1, issue by key 3, comment by key 4.
  void thread() {
    announcement_ = signed_event(30617, {{"d", "demo"}}, unix_now() - 1000, 1);
    issue_ = signed_event(1621, {{"a", nostr::address_of(announcement_)}}, unix_now() - 900, 3);
    auto id = nostr::to_hex(issue_.id);
    comment_ = signed_event(1111, {{"E", id}, {"e", id}}, unix_now() - 800, 4);
    store({announcement_, issue_, comment_});
  }

  nostr::Event relay_list(std::uint8_t author, nostr::Tags tags, std::int64_t age = 500) {
    return signed_event(10002, std::move(tags), unix_now() - age, author);
  }

  sync_plus_actor plus_;
  self_subscriber_actor subscriber_;
  std::size_t opened_ = 0;
  nostr::Event announcement_, issue_, comment_;
};

TEST_F(SyncPlusTest, RestartRebuildsMailboxOwnershipFromTheStoreBeforeAnyNetwork) {
  thread();
  // An indirect reply naming only its parent, and a stranger's reply to a thread not hosted here.
  auto indirect = signed_event(1, {{"e", nostr::to_hex(comment_.id)}}, unix_now() - 700, 5);
  auto stranger = signed_event(1, {{"e", std::string(64, 'f')}}, unix_now() - 700, 6);
  store({indirect, stranger, relay_list(3, {{"r", "wss://inbox3.example", "read"}}),
         relay_list(4, {{"r", "wss://out4.example", "write"}})});
  start_plus();
  // Nothing answered on the network, yet coverage is served from the retained relay lists.
  const auto& coverage = manager_state().plan->plus_coverage();
  ASSERT_EQ(coverage.size(), 1u);
  EXPECT_EQ(coverage.at("wss://inbox3.example"), std::set<nostr::EventId>{issue_.id});
  EXPECT_TRUE(manager_state().plan->relays().count("wss://inbox3.example"))
      << "a root author's inbox joins ordinary GRASP-02 coverage";
  const auto& history = plus_state().history->relays();
  ASSERT_TRUE(history.count("wss://out4.example"));
  EXPECT_EQ(history.at("wss://out4.example").items.roots, std::set<nostr::EventId>{issue_.id});
  EXPECT_FALSE(manager_state().plan->relays().count("wss://out4.example"))
      << "a participant's mailbox is history-only";
  // Owner, root author, the comment's and the indirect reply's authors; not the stranger.
  EXPECT_EQ(plus_state().snapshot->eligible.size(), 4u);
  EXPECT_TRUE(plus_state().snapshot->eligible.count(indirect.pubkey));
  EXPECT_FALSE(plus_state().snapshot->eligible.count(stranger.pubkey));
  for (const auto& peer : peers_) EXPECT_TRUE(peer->sent.empty()) << "nothing asked yet";
  // The replication view's question: the inbox covering its thread live, the outbox probed.
  auto relays = request<std::vector<std::string>>(
      plus_, PlusRepositoryRelays{nostr::address_of(announcement_)});
  ASSERT_TRUE(relays);
  EXPECT_EQ(*relays, (std::vector<std::string>{"wss://inbox3.example", "wss://out4.example"}));
  relays = request<std::vector<std::string>>(
      plus_, PlusRepositoryRelays{"30617:" + std::string(64, 'e') + ":other"});
  ASSERT_TRUE(relays);
  EXPECT_TRUE(relays->empty());
}

TEST_F(SyncPlusTest, OwnersAndMaintainersInboxesGetRepositoryScopedHistoryProbesOnly) {
  const auto maintainer = nostr::to_hex(signed_event(1, {}, 0, 2).pubkey);
  announcement_ =
      signed_event(30617, {{"d", "demo"}, {"maintainers", maintainer}}, unix_now() - 1000, 1);
  issue_ = signed_event(1621, {{"a", nostr::address_of(announcement_)}}, unix_now() - 900, 3);
  store({announcement_, issue_, relay_list(1, {{"r", "wss://owner.example", "read"}}),
         relay_list(2, {{"r", "wss://maint.example"}})});
  start_plus();
  const auto& history = plus_state().history->relays();
  for (const char* relay : {"wss://owner.example", "wss://maint.example"}) {
    ASSERT_TRUE(history.count(relay)) << relay;
    EXPECT_EQ(history.at(relay).items.repos,
              std::set<std::string>{nostr::address_of(announcement_)});
    EXPECT_EQ(history.at(relay).items.roots, std::set<nostr::EventId>{issue_.id})
        << "every known root of the repository";
    EXPECT_FALSE(manager_state().plan->relays().count(relay))
        << "inboxes found through ownership never become live sources";
  }
  EXPECT_TRUE(manager_state().plan->plus_coverage().empty());
}

TEST_F(SyncPlusTest, InventoryFollowsTheChangeFeed) {
  thread();
  start_plus();
  EXPECT_EQ(plus_state().snapshot->eligible.size(), 3u);
  auto reply = signed_event(7, {{"e", nostr::to_hex(comment_.id)}}, unix_now(), 9);
  anon_send(subscriber_,
            StoreCommits::of({{std::make_shared<const nostr::Event>(reply), nullptr}}));
  run();
  EXPECT_EQ(plus_state().snapshot->eligible.size(), 3u) << "the batch window is still open";
  advance_time(100ms);
  EXPECT_EQ(plus_state().snapshot->eligible.size(), 4u);
  EXPECT_TRUE(plus_state().snapshot->threads_by_participant.count(reply.pubkey));
}

TEST_F(SyncPlusTest, DiscoveryAsks101AuthorsInTwoQueriesOneInFlightThenPromotesTheConnection) {
  auto announcement = signed_event(30617, {{"d", "demo"}}, unix_now() - 1000, 1);
  std::vector<nostr::Event> events{announcement};
  for (int i = 0; i < 100; ++i)
    events.push_back(signed_event(1621, {{"a", nostr::address_of(announcement)}},
                                  unix_now() - 900 + i, static_cast<std::uint8_t>(10 + i)));
  store(events);
  SyncPlusConfig config;
  config.user_index_relays = {"wss://index.example"};
  start_plus(config);
  ASSERT_EQ(dialled_hosts(), std::vector<std::string>{"index.example"});
  EXPECT_TRUE(dials_[0].second) << "an operator-configured index is trusted";
  auto* index = peers_[0].get();
  index->handler->on_open(req_only_peer(), false);
  run();
  auto reqs = index->reqs();
  ASSERT_EQ(reqs.size(), 1u) << "one batch in flight";
  ASSERT_EQ(reqs[0].second.size(), 1u);
  EXPECT_EQ(reqs[0].second[0].authors->size(), 100u);
  EXPECT_EQ(*reqs[0].second[0].kinds, (std::vector<std::uint32_t>{0, 10002}));
  answer_all_with_eose(*index);
  reqs = index->reqs();
  ASSERT_EQ(reqs.size(), 2u) << "the second batch follows on the same connection";
  EXPECT_EQ(reqs[1].second[0].authors->size(), 1u);
  answer_all_with_eose(*index);
  EXPECT_EQ(plus_state().counts.discovery_batches, 2u);
  EXPECT_FALSE(plus_state().discovery->in_flight());
  EXPECT_EQ(index->frames("CLOSE").size(), 2u) << "each fetch is closed once complete";

  // The index relay becomes a repository source: promoted, no second connection.
  anon_send(manager_, discovery(nostr::address_of(announcement), {"wss://index.example"}));
  run();
  EXPECT_EQ(dials_.size(), 1u);
  EXPECT_EQ(relay_state("wss://index.example").status, sync::ConnectionStatus::connected);
  EXPECT_EQ(manager_state().fetch_counts.promotions, 1u);
  EXPECT_TRUE(manager_state().control.empty());
  advance_time(10s);
  EXPECT_FALSE(index->closed) << "a repository source does not retire as idle";
}

TEST_F(SyncPlusTest, FoundAuthorsRefreshAfter24HoursAndMissingOnesAfter5Minutes) {
  thread();
  SyncPlusConfig config;
  config.user_index_relays = {"wss://index.example"};
  start_plus(config);
  auto* index = peers_[0].get();
  index->handler->on_open(req_only_peer(), false);
  run();
  // The index knows author 3's profile only.
  auto profile = signed_event(0, {}, unix_now() - 10, 3);
  index->handler->on_message(
      nostr::relay_event(index->reqs()[0].first, nostr::serialize_event(profile)));
  run();
  drain(*index);
  advance_time(100ms);  // the profile reaches the inventory
  ASSERT_TRUE(plus_state().snapshot->profiles.count(profile.pubkey));
  EXPECT_EQ(plus_state().discovery->due_authors(unix_now()), 0u);
  advance_time(10s);
  EXPECT_TRUE(index->closed) << "an exclusively discovery connection retires when idle";
  opened_ = peers_.size();
  const auto round_end = unix_now();
  // Every five minutes the two missing authors are asked again, never author 3, until 24 hours
  // after its round.
  std::optional<std::int64_t> refreshed_at;
  std::size_t retries = 0;
  for (int minute = 0; minute < 24 * 60 + 10 && !refreshed_at; ++minute) {
    advance_time(60s);
    open_new_peers([&](const nostr::Filters& filters) {
      const auto& authors = *filters[0].authors;
      if (std::count(authors.begin(), authors.end(), profile.pubkey))
        refreshed_at = unix_now();
      else if (authors.size() == 2)
        ++retries;
    });
  }
  ASSERT_TRUE(refreshed_at);
  EXPECT_GE(*refreshed_at, round_end + 86400);
  EXPECT_LE(*refreshed_at, round_end + 86400 + 60);
  // One retry per five-minute round (each round starts at the first pass after it is due).
  EXPECT_GE(retries, 24u * 60 / 6);
  EXPECT_LE(retries, 24u * 60 / 5);
}

// The reconciliation every hour: whatever happens below happens without it.
SyncPlusConfig hourly_reconciliation(std::vector<std::string> fallback = {}) {
  SyncPlusConfig config;
  config.user_index_relays = {"wss://index.example"};
  config.fallback_relays = std::move(fallback);
  config.reconcile_interval = 1h;
  return config;
}

TEST_F(SyncPlusTest, WhatTheStoreSaysStartsAtStartUp) {
  thread();
  store({relay_list(3, {{"r", "wss://inbox3.example", "read"}, {"r", "wss://out3.example"}})});
  start_plus(hourly_reconciliation());
  // No time passed: the start-up inventory reconciled and ran a maintenance pass.
  EXPECT_EQ(manager_state().plan->plus_coverage().at("wss://inbox3.example"),
            std::set<nostr::EventId>{issue_.id});
  const auto dialled = dialled_hosts();
  EXPECT_TRUE(std::count(dialled.begin(), dialled.end(), "inbox3.example"))
      << "the root author's inbox is dialled as a GRASP-02 relay";
  EXPECT_TRUE(std::count(dialled.begin(), dialled.end(), "index.example"))
      << "the authors without a relay list are asked for";
  EXPECT_EQ(plus_state().counts.discovery_batches, 1u);
  EXPECT_EQ(plus_state().workers.size(), 1u) << "the first history relay is admitted";
}

TEST_F(SyncPlusTest, ANewRootAuthorIsAskedForWhenTheInventoryArrivesNotAtTheReconciliation) {
  start_plus(hourly_reconciliation());
  advance_time(2s);
  EXPECT_TRUE(dials_.empty()) << "an empty store: nobody to ask for";
  EXPECT_FALSE(plus_state().maintenance_armed);
  announcement_ = signed_event(30617, {{"d", "demo"}}, unix_now() - 1000, 1);
  issue_ = signed_event(1621, {{"a", nostr::address_of(announcement_)}}, unix_now() - 900, 3);
  for (const auto& ev : {announcement_, issue_})
    anon_send(subscriber_, StoreCommits::of({{std::make_shared<const nostr::Event>(ev), nullptr}}));
  run();
  advance_time(100ms);  // the self-subscriber's batch window: the inventory arrives
  ASSERT_EQ(dialled_hosts(), std::vector<std::string>{"index.example"});
  EXPECT_EQ(plus_state().counts.discovery_batches, 1u);
  auto* index = peers_[0].get();
  index->handler->on_open(req_only_peer(), false);
  run();
  ASSERT_EQ(index->reqs().size(), 1u);
  EXPECT_EQ(index->reqs()[0].second[0].authors->size(), 2u) << "the owner and the root author";
}

// The index knows neither the root author (3) nor the participant (4): when it says so, the
// fallback relay becomes the root author's live inbox and the participant's history mailbox at
// once, with the next reconciliation an hour away.
TEST_F(SyncPlusTest, AnIndexAnswerPutsTheFallbackRelaysToWorkAtOnce) {
  thread();
  start_plus(hourly_reconciliation({"wss://fallback.example"}));
  ASSERT_EQ(dialled_hosts(), std::vector<std::string>{"index.example"});
  advance_time(2s);  // the maintenance timer ran dry: nothing else is due
  EXPECT_FALSE(plus_state().maintenance_armed);
  EXPECT_TRUE(manager_state().plan->plus_coverage().empty());
  EXPECT_TRUE(plus_state().workers.empty());
  auto* index = peers_[0].get();
  index->handler->on_open(req_only_peer(), false);
  run();
  answer_all_with_eose(*index);  // nothing known there
  EXPECT_EQ(plus_state().counts.discovery_batches, 1u);
  const auto& coverage = manager_state().plan->plus_coverage();
  ASSERT_EQ(coverage.size(), 1u);
  EXPECT_EQ(coverage.at("wss://fallback.example"), std::set<nostr::EventId>{issue_.id});
  EXPECT_TRUE(manager_state().plan->relays().count("wss://fallback.example"));
  EXPECT_EQ(dialled_hosts(), (std::vector<std::string>{"index.example", "fallback.example"}));
  EXPECT_TRUE(plus_state().workers.count("wss://fallback.example"))
      << "the participant's history probe starts with the same answer";
  EXPECT_EQ(plus_state().history->relays().at("wss://fallback.example").items.roots,
            std::set<nostr::EventId>{issue_.id});
}

// The index has the root author's relay list: once it reaches the inventory (the batch window),
// its inbox is covered live and its outbox asked for and probed at once.
TEST_F(SyncPlusTest, ARelayListFoundOnTheIndexIsUsedWhenItArrives) {
  thread();
  start_plus(hourly_reconciliation());
  advance_time(2s);
  auto* index = peers_[0].get();
  index->handler->on_open(req_only_peer(), false);
  run();
  auto list = relay_list(3, {{"r", "wss://inbox3.example", "read"}, {"r", "wss://out3.example"}});
  index->handler->on_message(
      nostr::relay_event(index->reqs()[0].first, nostr::serialize_event(list)));
  run();
  answer_all_with_eose(*index);
  ASSERT_TRUE(store_->contains(list.id));
  advance_time(100ms);  // the batch window: the relay list reaches the inventory
  EXPECT_EQ(manager_state().plan->plus_coverage().at("wss://inbox3.example"),
            std::set<nostr::EventId>{issue_.id});
  const auto dialled = dialled_hosts();
  EXPECT_TRUE(std::count(dialled.begin(), dialled.end(), "inbox3.example"));
  EXPECT_TRUE(std::count(dialled.begin(), dialled.end(), "out3.example"))
      << "the new outbox: discovery and history";
  EXPECT_EQ(plus_state().workers.size(), 1u);
  EXPECT_EQ(plus_state().counts.discovery_batches, 2u) << "the round goes on to the outbox";
}

TEST_F(SyncPlusTest, AHistoryWorkerDrainsItsRelayThroughTheFetchPathThenRetires) {
  thread();
  store({relay_list(4, {{"r", "wss://out4.example", "write"}})});
  auto elsewhere = signed_event(7, {{"e", nostr::to_hex(issue_.id)}}, unix_now() - 5, 4);
  start_plus();
  // The first pass: outbox discovery and the history worker share one connection.
  ASSERT_EQ(dialled_hosts(), std::vector<std::string>{"out4.example"});
  EXPECT_FALSE(dials_[0].second) << "a relay from a relay list is untrusted";
  EXPECT_EQ(plus_state().workers.size(), 1u);
  auto* out4 = peers_[0].get();
  out4->handler->on_open(req_only_peer(), false);
  run();
  ASSERT_EQ(out4->reqs().size(), 2u);
  // The reply exists only there: it arrives through the ordinary pipeline.
  for (const auto& [id, filters] : out4->reqs())
    if (nostr::matches_any(filters, elsewhere))
      out4->handler->on_message(nostr::relay_event(id, nostr::serialize_event(elsewhere)));
  run();
  drain(*out4);
  EXPECT_TRUE(store_->contains(elsewhere.id));
  EXPECT_EQ(plus_state().counts.history_groups, 1u);
  EXPECT_TRUE(plus_state().workers.empty()) << "one group: the rotation is complete";
  EXPECT_EQ(plus_state().history->relays().at("wss://out4.example").due, unix_now() + 86400);
  advance_time(10s);
  EXPECT_TRUE(out4->closed) << "a history-only connection retires when idle";
  EXPECT_TRUE(manager_state().connections.empty());
}

TEST_F(SyncPlusTest, HistoryRelaysJoinOnePerMaintenancePassNotOnePerReconciliation) {
  thread();
  store({relay_list(4, {{"r", "wss://h1.example", "write"},
                        {"r", "wss://h2.example", "write"},
                        {"r", "wss://h3.example", "write"}})});
  start_plus();  // reconciliation every 60 s, maintenance every second
  EXPECT_EQ(plus_state().counts.workers_started, 1u);
  advance_time(1s);
  EXPECT_EQ(plus_state().counts.workers_started, 2u);
  advance_time(1s);
  EXPECT_EQ(plus_state().counts.workers_started, 3u);
  advance_time(5s);
  EXPECT_EQ(plus_state().counts.workers_started, 3u) << "one worker per relay";
  EXPECT_FALSE(plus_state().maintenance_armed) << "nothing admissible: the timer stops";
}

TEST_F(SyncPlusTest, AFailedGroupReleasesTheWorkerAndRetriesAfter5Minutes) {
  thread();
  store({relay_list(4, {{"r", "wss://out4.example", "read"}})});  // a history mailbox only
  start_plus();
  ASSERT_EQ(plus_state().workers.size(), 1u);
  peers_[0]->handler->on_open(req_only_peer(), false);
  run();
  advance_time(30s);  // no EOSE: the fetch times out
  EXPECT_EQ(plus_state().counts.history_failures, 1u);
  EXPECT_TRUE(plus_state().workers.empty());
  const auto& relay = plus_state().history->relays().at("wss://out4.example");
  EXPECT_EQ(relay.groups_failed, 1u);
  EXPECT_EQ(relay.due, unix_now() + 300);
}

// Author 4 (a commenter) lists four history mailboxes that trickle: each answers its REQ with one
// requested event every 20 s, just inside the 30 s idle timeout, and never EOSE. Author 3 (the
// issue's author) lists one honest outbox. With two workers in all and one per author, the honest
// relay gets the second worker at the next pass and completes, while the trickling relay is cut
// at its 60 s budget (not the fetch path's 300 s) and backed off, and only then does the next of
// author 4's relays get a worker.
TEST_F(SyncPlusTest, ATricklingRelayIsCutAtItsBudgetWhileAnotherAuthorsWorkProceeds) {
  thread();
  store({relay_list(4, {{"r", "wss://a1.example", "read"},
                        {"r", "wss://a2.example", "read"},
                        {"r", "wss://a3.example", "read"},
                        {"r", "wss://a4.example", "read"}}),
         relay_list(3, {{"r", "wss://good.example", "write"}})});
  SyncPlusConfig config;
  config.history.max_workers = 2;
  config.history.author_workers = 1;
  config.history.relay_budget_seconds = 60;
  start_plus(config);
  const auto admitted_at = unix_now();
  auto* hostile = peer_of("a1.example");
  ASSERT_TRUE(hostile) << "the hostile relay sorts first and is admitted at the first pass";
  hostile->handler->on_open(req_only_peer(), false);
  run();
  ASSERT_EQ(hostile->reqs().size(), 1u);
  const auto hostile_sub = hostile->reqs()[0].first;
  int trickled = 0;
  auto trickle = [&] {
    auto drop =
        signed_event(1111, {{"e", nostr::to_hex(issue_.id)}}, unix_now() - 100 + trickled, 4);
    ++trickled;
    hostile->handler->on_message(nostr::relay_event(hostile_sub, nostr::serialize_event(drop)));
    run();
  };
  trickle();

  // The next pass: author 4 holds its share, so the honest relay gets the second worker.
  advance_time(1s);
  auto* good = peer_of("good.example");
  ASSERT_TRUE(good);
  good->handler->on_open(req_only_peer(), false);
  run();
  drain(*good);
  const auto& relays = plus_state().history->relays();
  EXPECT_EQ(relays.at("wss://good.example").groups_ok, 1u) << "the other author's work proceeds";
  EXPECT_EQ(peer_of("a2.example"), nullptr) << "author 4 holds at most one worker";
  EXPECT_EQ(plus_state().history->workers_of(comment_.pubkey), 1u);

  // The hostile relay trickles progress before every idle timeout...
  for (int i = 0; i < 2; ++i) {
    advance_time(19s);
    trickle();
    advance_time(1s);
  }
  EXPECT_EQ(plus_state().counts.history_failures, 0u) << "alive at 41 s: it progressed";
  EXPECT_EQ(peer_of("a2.example"), nullptr);
  // ...and is cut at its 60 s budget all the same, then backed off.
  advance_time(std::chrono::seconds(admitted_at + 60 - unix_now()));
  EXPECT_EQ(plus_state().counts.history_budget_spent, 1u);
  EXPECT_EQ(plus_state().counts.history_failures, 1u);
  const auto& cut = relays.at("wss://a1.example");
  EXPECT_FALSE(cut.worker);
  EXPECT_EQ(cut.spent, 1u);
  EXPECT_EQ(cut.due, unix_now() + 300) << "backed off by the retry cadence";
  EXPECT_EQ(hostile->frames("CLOSE").size(), 1u) << "its subscription is closed";
  advance_time(1s);
  EXPECT_NE(peer_of("a2.example"), nullptr) << "the freed share goes to author 4's next relay";
}

TEST_F(SyncPlusTest, AHostileRelayListDialsAtMostFourValidRelays) {
  thread();
  nostr::Tags tags;
  for (int i = 0; i < 100; ++i) tags.push_back({"r", "wss://10.0.0." + std::to_string(i)});
  for (int i = 0; i < 100; ++i) tags.push_back({"r", "https://x" + std::to_string(i) + ".ex"});
  for (int i = 0; i < 300; ++i)
    tags.push_back({"r", "wss://r" + std::to_string(i) + ".example", "write"});
  store({relay_list(4, tags)});
  start_plus();
  for (int pass = 0; pass < 20; ++pass) {
    open_new_peers();
    advance_time(60s);
  }
  const auto dialled = dialled_hosts();
  std::set<std::string> hosts(dialled.begin(), dialled.end());
  EXPECT_EQ(hosts, (std::set<std::string>{"r0.example", "r1.example", "r2.example", "r3.example"}));
  EXPECT_EQ(plus_state().refused_urls, 200u);
  EXPECT_EQ(plus_state().history->relays().size(), 4u);
}

TEST_F(SyncPlusTest, StatusSectionReachesApiSync) {
  thread();
  store({relay_list(4, {{"r", "wss://out4.example", "write"}})});
  start_plus();
  auto status = request<std::string>(manager_, atom::status::value);
  ASSERT_TRUE(status);
  rapidjson::Document doc;
  doc.Parse(status->c_str(), status->size());
  ASSERT_FALSE(doc.HasParseError()) << *status;
  ASSERT_TRUE(doc.HasMember("sync_plus")) << *status;
  const auto& plus = doc["sync_plus"];
  EXPECT_EQ(plus["eligible_authors"].GetUint64(), 3u);
  EXPECT_EQ(plus["desired_history_relays"].GetUint64(), 1u);
  EXPECT_EQ(plus["active_workers"].GetUint64(), 1u);
  ASSERT_EQ(plus["relays"].Size(), 1u);
  const auto& relay = plus["relays"][0];
  EXPECT_STREQ(relay["url"].GetString(), "wss://out4.example");
  EXPECT_EQ(relay["roles"].Size(), 2u);  // discovery and history
  EXPECT_EQ(relay["history_participants"].GetUint64(), 1u);
  ASSERT_EQ(doc["control_connections"].Size(), 1u);
  EXPECT_STREQ(doc["control_connections"][0]["url"].GetString(), "wss://out4.example");
}

}  // namespace
}  // namespace graspd
