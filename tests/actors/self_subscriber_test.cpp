// Deterministic tests of the self-subscriber under the test coordinator: the repositories it
// loads from a real LMDB store, the batching window for committed events, and which addresses
// count as repository facts.
#include <gtest/gtest.h>

#include "actors/self_subscriber.hpp"
#include "tests/support/actor_fixture.hpp"
#include "tests/support/nostr_builders.hpp"
#include "tests/support/temp_dir.hpp"

namespace graspd {
namespace {

using namespace std::chrono_literals;

/// A kind-`kind` event with content "hello", signed by `secret_key(author)`.
nostr::Event signed_event(std::uint32_t kind, nostr::Tags tags, std::int64_t created_at,
                          std::uint8_t author = 7) {
  return test::signed_event(kind, std::move(tags), created_at, "hello", author);
}

/// Fails the test: a mock received a message the test does not expect.
void unexpected_at_manager(const char* message_type) {
  ADD_FAILURE() << "the mock sync manager received an unexpected " << message_type;
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
  // A strict mock of the sync manager: the self-subscriber only sends discoveries.
  auto recorder = spawn([&](sync_manager_actor::pointer) -> sync_manager_actor::behavior_type {
    return {[&](RepoDiscovery& d) { received.push_back(d); },
            [](RelayUp&) { unexpected_at_manager("RelayUp"); },
            [](RelayDown&) { unexpected_at_manager("RelayDown"); },
            [](RelaySubscriptionDone&) { unexpected_at_manager("RelaySubscriptionDone"); },
            [](RelaySubscriptionClosed&) { unexpected_at_manager("RelaySubscriptionClosed"); },
            [](RelayRateLimited&) { unexpected_at_manager("RelayRateLimited"); },
            [](RelayNegentropy&) { unexpected_at_manager("RelayNegentropy"); },
            [](RelayTraffic&) { unexpected_at_manager("RelayTraffic"); },
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
