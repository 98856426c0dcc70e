// Deterministic tests of the self-subscriber under the test coordinator: the repositories it
// loads from a real LMDB store, the batching window for committed events, which addresses count
// as repository facts, and the levels of repositories held in purgatory (from a real acceptance
// actor's held feed).
#include <gtest/gtest.h>

#include "actors/policy/acceptance.hpp"
#include "actors/store/store_writer.hpp"
#include "actors/sync/self_subscriber.hpp"
#include "tests/support/actor_fixture.hpp"
#include "tests/support/nostr_builders.hpp"
#include "tests/support/recording_git_host.hpp"
#include "tests/support/temp_dir.hpp"

namespace graspd {
namespace {

using namespace std::chrono_literals;

using test::signed_event;

/// Fails the test: a mock received a message the test does not expect.
void unexpected_at_manager(const char* message_type) {
  ADD_FAILURE() << "the mock sync manager received an unexpected " << message_type;
}

/// A strict mock of the sync manager: the self-subscriber only sends discoveries, recorded in
/// `received`.
sync_manager_actor::behavior_type recording_manager(sync_manager_actor::pointer,
                                                    std::vector<RepoDiscovery>* received) {
  return {[received](RepoDiscovery& d) { received->push_back(d); },
          [](RelayUp&) { unexpected_at_manager("RelayUp"); },
          [](RelayDown&) { unexpected_at_manager("RelayDown"); },
          [](RelaySubscriptionDone&) { unexpected_at_manager("RelaySubscriptionDone"); },
          [](RelaySubscriptionClosed&) { unexpected_at_manager("RelaySubscriptionClosed"); },
          [](RelayRateLimited&) { unexpected_at_manager("RelayRateLimited"); },
          [](RelayNegentropy&) { unexpected_at_manager("RelayNegentropy"); },
          [](RelayTraffic&) { unexpected_at_manager("RelayTraffic"); },
          [](HeldForPeers&) {
            unexpected_at_manager("HeldForPeers");
            return false;
          },
          [](RelayPublished&) { unexpected_at_manager("RelayPublished"); },
          [](PeerAckDue&) { unexpected_at_manager("PeerAckDue"); },
          [](RetryTimer&) { unexpected_at_manager("RetryTimer"); },
          [](DailyTick&) { unexpected_at_manager("DailyTick"); },
          [](atom::tick) { unexpected_at_manager("atom::tick"); },
          [](atom::publish) { unexpected_at_manager("atom::publish"); },
          [](atom::status) {
            unexpected_at_manager("atom::status");
            return std::string{};
          },
          [](RelayFetch&) {
            unexpected_at_manager("RelayFetch");
            return FetchOutcome{};
          },
          [](PlusCoverage&) { unexpected_at_manager("PlusCoverage"); },
          [](SyncPlusStatus&) { unexpected_at_manager("SyncPlusStatus"); },
          [](FetchTimeout&) { unexpected_at_manager("FetchTimeout"); },
          [](FetchIdle&) { unexpected_at_manager("FetchIdle"); }};
}

class SelfSubscriberTest : public test::ActorTest {
 protected:
  SelfSubscriberTest() {
    store::StoreOptions options;
    options.path = dir_.path();
    store_ = std::make_shared<store::EventStore>(options);
  }

  std::int64_t unix_now() {
    return 1'700'000'000 +
           std::chrono::duration_cast<std::chrono::seconds>(now().time_since_epoch()).count();
  }

  test::TempDir dir_{"graspd-self-subscriber"};
  std::shared_ptr<store::EventStore> store_;
};

TEST_F(SelfSubscriberTest, SelfSubscriberLoadsStoreAndBatchesWithoutResettingTheWindow) {
  auto announcement = signed_event(
      30617, {{"d", "demo"}, {"relays", "wss://Peer.example/", "wss://u:p@bad.example"}},
      unix_now() - 100);
  auto issue = signed_event(1621, {{"a", nostr::address_of(announcement)}}, unix_now() - 50);
  store_->write_batch(
      std::vector<nostr::EventPtr>{std::make_shared<const nostr::Event>(announcement),
                                   std::make_shared<const nostr::Event>(issue)});

  std::vector<RepoDiscovery> received;
  auto recorder = spawn(recording_manager, &received);
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
    anon_send(subscriber, StoreCommits::of({{std::make_shared<const nostr::Event>(ev), nullptr}}));
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

// ------------------------------------------ purgatory: StateOnly while held, then Full or dropped

/// A strict mock of the Sync+ controller recording the inventories it is sent.
sync_plus_actor::behavior_type recording_plus(
    sync_plus_actor::pointer, std::vector<std::shared_ptr<const sync::PlusSnapshot>>* received) {
  auto unexpected = [](const char* what) { ADD_FAILURE() << "the mock Sync+ received " << what; };
  return {[received](PlusInventoryUpdate& update) { received->push_back(update.snapshot); },
          [=](HistoryNext&) { unexpected("HistoryNext"); },
          [=](atom::tick) { unexpected("atom::tick"); },
          [=](atom::maintain) { unexpected("atom::maintain"); },
          [=](atom::status) {
            unexpected("atom::status");
            return std::string{};
          },
          [=](const PlusRepositoryRelays&) {
            unexpected("PlusRepositoryRelays");
            return std::vector<std::string>{};
          }};
}

/// The self-subscriber between a real acceptance actor (purgatory on, over a real store writer)
/// and a recording sync manager and Sync+ controller, wired as boot wires them.
class HeldRepositoriesTest : public SelfSubscriberTest {
 protected:
  static constexpr std::int64_t hold_seconds = 1800;
  static constexpr auto window = std::chrono::seconds(5);

  HeldRepositoriesTest() {
    writer_ = spawn(store_writer, store_, StoreWriterConfig{});
    git_host_ = spawn(test::recording_git_host, &git_);
    acceptance_ = start_acceptance();
    subscriber_ = start_subscriber(acceptance_, discoveries_);
  }

  /// An acceptance actor on the store (and its `held` database), subscribed to the change feed.
  acceptance_actor start_acceptance() {
    AcceptanceConfig config;
    config.policy.service = *parse_host_port("relay.example.com");
    config.unix_now = [this] { return unix_now(); };
    config.purgatory_enabled = true;
    config.purgatory.hold_seconds = hold_seconds;
    config.git = git_host_;
    auto handle = spawn(acceptance, config, std::shared_ptr<const store::EventStore>(store_),
                        writer_, nullptr);
    anon_send(writer_, atom::feed_subscribe::value, caf::actor_cast<store_feed_actor>(handle));
    run();
    return handle;
  }

  /// A self-subscriber with Sync+ following `acceptance`'s held feed and the change feed.
  self_subscriber_actor start_subscriber(acceptance_actor acceptance,
                                         std::vector<RepoDiscovery>& discoveries) {
    auto manager = spawn(recording_manager, &discoveries);
    auto plus = spawn(recording_plus, &inventories_);
    auto subscriber = spawn(self_subscriber_plus, std::shared_ptr<const store::EventStore>(store_),
                            manager, std::chrono::milliseconds(window), plus);
    anon_send(writer_, atom::feed_subscribe::value, caf::actor_cast<store_feed_actor>(subscriber));
    anon_send(acceptance, atom::feed_subscribe::value,
              caf::actor_cast<held_feed_actor>(subscriber));
    run();
    return subscriber;
  }

  /// An announcement of `d` by key 1 listing this service and wss://peer.example.
  nostr::EventPtr announcement(const std::string& d) {
    return std::make_shared<const nostr::Event>(
        signed_event(30617,
                     {{"d", d},
                      {"clone", "https://relay.example.com/" + d + ".git"},
                      {"relays", "wss://relay.example.com", "wss://peer.example"}},
                     unix_now(), 1));
  }

  void submit(const nostr::EventPtr& ev) {
    anon_send(acceptance_, AcceptanceQuery{ev, "ip:a"});
    run();
  }

  /// The repository facts of the discovery sent when the batch window closes.
  RepoDiscovery::Repo next_discovery(std::vector<RepoDiscovery>& discoveries) {
    auto before = discoveries.size();
    advance_time(window);
    EXPECT_EQ(discoveries.size(), before + 1);
    if (discoveries.size() != before + 1 || discoveries.back().repos.size() != 1) {
      ADD_FAILURE() << "expected one repository in one discovery";
      return {};
    }
    return discoveries.back().repos[0];
  }

  /// Whether the latest Sync+ inventory counts `repo` as Full (its owner's).
  bool full_in_inventory(const std::string& repo) {
    if (inventories_.empty()) return false;
    for (const auto& [member, repos] : inventories_.back()->repos_by_member)
      if (repos.count(repo)) return true;
    return false;
  }

  store_writer_actor writer_;
  acceptance_actor acceptance_;
  self_subscriber_actor subscriber_;
  std::vector<RepoDiscovery> discoveries_;
  std::vector<std::shared_ptr<const sync::PlusSnapshot>> inventories_;
  test::GitHostRecord git_;
  git_host_actor git_host_;
};

TEST_F(HeldRepositoriesTest, AHeldRepositoryIsStateOnlyUntilItsGitDataArrivesThenFull) {
  auto repo = announcement("demo");
  const auto address = nostr::address_of(*repo);
  submit(repo);
  auto held = next_discovery(discoveries_);
  EXPECT_EQ(held.repo, address);
  EXPECT_EQ(held.level, SyncLevel::state_only);
  EXPECT_FALSE(held.removed);
  ASSERT_TRUE(held.relays);
  EXPECT_EQ(held.relays->count("wss://peer.example"), 1u) << "the relays its announcement names";
  EXPECT_FALSE(full_in_inventory(address)) << "Sync+ keeps a held repository inert";

  // Its state arrives (from sync, in the daemon), is held, then its objects arrive: promotion.
  auto state = std::make_shared<const nostr::Event>(signed_event(
      30618, {{"d", "demo"}, {"refs/heads/main", std::string(40, 'a')}}, unix_now(), 1));
  submit(state);
  anon_send(acceptance_, GitDataArrived{{repo->pubkey, "demo"}, {state->id}, {}, {}, {}});
  run();
  ASSERT_TRUE(store_->contains(repo->id));
  auto promoted = next_discovery(discoveries_);
  EXPECT_EQ(promoted.repo, address);
  EXPECT_EQ(promoted.level, SyncLevel::full);
  EXPECT_TRUE(full_in_inventory(address));
}

TEST_F(HeldRepositoriesTest, AHoldThatExpiresDropsTheRepository) {
  auto repo = announcement("demo");
  submit(repo);
  EXPECT_EQ(next_discovery(discoveries_).level, SyncLevel::state_only);
  advance_time(std::chrono::seconds(hold_seconds + 30));  // the acceptance actor's expiry tick
  auto dropped = next_discovery(discoveries_);
  EXPECT_EQ(dropped.repo, nostr::address_of(*repo));
  EXPECT_TRUE(dropped.removed);
  EXPECT_FALSE(dropped.relays);
  EXPECT_FALSE(full_in_inventory(dropped.repo));
}

TEST_F(HeldRepositoriesTest, AfterARestartHeldRepositoriesAreStateOnlyAgainFromTheHeldDatabase) {
  auto repo = announcement("demo");
  submit(repo);
  next_discovery(discoveries_);
  // A second acceptance actor and self-subscriber on the same store, as after a restart.
  std::vector<RepoDiscovery> after_restart;
  start_subscriber(start_acceptance(), after_restart);
  auto restored = next_discovery(after_restart);
  EXPECT_EQ(restored.repo, nostr::address_of(*repo));
  EXPECT_EQ(restored.level, SyncLevel::state_only);
  ASSERT_TRUE(restored.relays);
  EXPECT_EQ(restored.relays->count("wss://peer.example"), 1u);
}

}  // namespace
}  // namespace graspd
