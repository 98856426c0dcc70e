// The history worker against strict mocks of the Sync+ controller and the sync manager: it asks
// for a group, fetches it, reports the outcome with its next ask and quits when told it is done.
#include "actors/plus/history_worker.hpp"

#include <gtest/gtest.h>

#include "tests/support/actor_fixture.hpp"

namespace graspd {
namespace {

void unexpected(const char* who, const char* message_type) {
  ADD_FAILURE() << "the mock " << who << " received an unexpected " << message_type;
}

class HistoryWorkerTest : public test::ActorTest {
 protected:
  sync_plus_actor controller() {
    return spawn([this](sync_plus_actor::pointer) -> sync_plus_actor::behavior_type {
      return {
          [this](HistoryNext& next) { asks.push_back(next); },
          [](PlusInventoryUpdate&) { unexpected("controller", "PlusInventoryUpdate"); },
          [](atom::tick) { unexpected("controller", "atom::tick"); },
          [](atom::maintain) { unexpected("controller", "atom::maintain"); },
          [](atom::status) {
            unexpected("controller", "atom::status");
            return std::string{};
          },
          [](const PlusRepositoryRelays&) {
            unexpected("controller", "PlusRepositoryRelays");
            return std::vector<std::string>{};
          },
      };
    });
  }

  sync_manager_actor manager() {
    return spawn([this](sync_manager_actor::pointer) -> sync_manager_actor::behavior_type {
      auto no = [](const char* type) { return [type](auto&&...) { unexpected("manager", type); }; };
      return {
          [this](RelayFetch& fetch) {
            fetches.push_back(fetch);
            return FetchOutcome{fetch_ok, fetch_ok ? "" : "closed: no"};
          },
          [no](RepoDiscovery& x) { no("RepoDiscovery")(x); },
          [no](RelayUp& x) { no("RelayUp")(x); },
          [no](RelayDown& x) { no("RelayDown")(x); },
          [no](RelaySubscriptionDone& x) { no("RelaySubscriptionDone")(x); },
          [no](RelaySubscriptionClosed& x) { no("RelaySubscriptionClosed")(x); },
          [no](RelayRateLimited& x) { no("RelayRateLimited")(x); },
          [no](RelayNegentropy& x) { no("RelayNegentropy")(x); },
          [no](RelayTraffic& x) { no("RelayTraffic")(x); },
          [no](HeldForPeers& x) {
            no("HeldForPeers")(x);
            return false;
          },
          [no](RelayPublished& x) { no("RelayPublished")(x); },
          [no](PeerAckDue& x) { no("PeerAckDue")(x); },
          [no](RetryTimer& x) { no("RetryTimer")(x); },
          [no](DailyTick& x) { no("DailyTick")(x); },
          [no](atom::tick x) { no("atom::tick")(x); },
          [no](atom::publish x) { no("atom::publish")(x); },
          [](atom::status) {
            unexpected("manager", "atom::status");
            return std::string{};
          },
          [no](PlusCoverage& x) { no("PlusCoverage")(x); },
          [no](SyncPlusStatus& x) { no("SyncPlusStatus")(x); },
          [no](FetchTimeout& x) { no("FetchTimeout")(x); },
          [no](FetchIdle& x) { no("FetchIdle")(x); },
      };
    });
  }

  static HistoryGroup group(std::uint32_t kind) {
    nostr::Filter filter;
    filter.kinds = std::vector<std::uint32_t>{kind};
    return HistoryGroup{false, {filter}, true};
  }

  std::vector<HistoryNext> asks;
  std::vector<RelayFetch> fetches;
  bool fetch_ok = true;
};

TEST_F(HistoryWorkerTest, FetchesEachGroupReportsItsOutcomeAndQuitsWhenDone) {
  auto boss = controller();
  auto sync = manager();
  auto worker = spawn(history_worker, std::string("wss://mailbox.example"), boss, sync);
  run();
  ASSERT_EQ(asks.size(), 1u);
  EXPECT_EQ(asks[0].relay, "wss://mailbox.example");
  EXPECT_FALSE(asks[0].has_previous);

  anon_send(worker, group(1));
  run();
  ASSERT_EQ(fetches.size(), 1u);
  EXPECT_EQ(fetches[0].relay, "wss://mailbox.example");
  EXPECT_EQ(fetches[0].role, FetchRole::history);
  EXPECT_TRUE(fetches[0].trusted);
  ASSERT_EQ(asks.size(), 2u);
  EXPECT_TRUE(asks[1].has_previous && asks[1].previous_ok);

  fetch_ok = false;
  anon_send(worker, group(7));
  run();
  ASSERT_EQ(asks.size(), 3u);
  EXPECT_TRUE(asks[2].has_previous);
  EXPECT_FALSE(asks[2].previous_ok) << "a failed fetch is reported, not dropped";

  bool gone = false;
  caf::scoped_actor watcher{system()};
  watcher->monitor(worker);
  anon_send(worker, HistoryGroup{true, {}, false});
  run();
  watcher->receive([&](caf::down_msg&) { gone = true; },
                   caf::after(std::chrono::seconds(0)) >> [] {});
  EXPECT_TRUE(gone);
  EXPECT_EQ(fetches.size(), 2u);
}

}  // namespace
}  // namespace graspd
