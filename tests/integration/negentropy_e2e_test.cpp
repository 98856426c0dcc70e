// NIP-77 served by the real graspd binary to a real third-party client: nostr-tools' NegentropySync
// (tests/interop/negentropy_client.mjs) reconciles, downloads and uploads, and checks NEG-ERR
// answers. Fails (never skips) when node or node_modules is missing.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "interop_support.hpp"
#include "messages/nostr/negentropy.hpp"
#include "relay_test_helpers.hpp"
#include "tests/support/graspd_process.hpp"
#include "tests/support/http_client.hpp"
#include "tests/support/wait_until.hpp"

namespace graspd::test {
namespace {

namespace fs = std::filesystem;

TEST(NegentropyE2E, NostrToolsSyncsDownAndUpAndGetsNip77Errors) {
  ASSERT_TRUE(fs::exists(interop_dir() / "node_modules" / "nostr-tools" / "package.json"))
      << interop_dir() << "/node_modules: run deploy/install-deps.sh";
  ASSERT_EQ(std::system("node --version > /dev/null 2>&1"), 0) << "node is not on PATH";
  // 220 tagged events end up stored and 40 others: a cap of 250 lets the tag filter through but
  // blocks the whole-store filter.
  const std::string cap = "250";
  GraspdProcess graspd{relay_options({{"NGIT_NEGENTROPY_MAX_SYNC_EVENTS", cap}})};
  ASSERT_TRUE(graspd.start()) << graspd.stderr_text();
  int status = -1;
  auto output =
      run_command("cd '" + interop_dir().string() + "' && timeout 60 node negentropy_client.mjs " +
                      graspd.relay_url() + " " + cap,
                  status);
  EXPECT_EQ(status, 0) << output;
  EXPECT_EQ(output.find("fail"), std::string::npos) << output;
  EXPECT_NE(output.find("ok after down+up nothing differs"), std::string::npos) << output;
  EXPECT_NE(output.find("ok more than the cap"), std::string::npos) << output;
  EXPECT_EQ(graspd.stop(), 0) << graspd.stderr_text();
}

using namespace std::chrono_literals;

/// ["NEG-OPEN",<subid>,{},<initial message of an empty client>]
std::string neg_open(const std::string& subid) {
  nostr::negentropy::Storage empty;
  auto engine = nostr::negentropy::Negentropy::create(empty, 0);
  return "[\"NEG-OPEN\",\"" + subid + "\",{},\"" +
         nostr::negentropy::message_to_hex(engine->initiate()) + "\"]";
}

double scraped(std::uint16_t port, const std::string& sample) {
  return std::max(0.0, metric_value(http_get(port, "/metrics").body, sample));
}

// The attacker (127.0.0.2) opens idle NEG-OPEN {} sessions on many connections; it holds at most
// its address's share, the victim (127.0.0.1) is still answered at once, and the idle sessions
// are closed with NEG-ERR "closed:".
TEST(NegentropyE2E, OneAddressCannotTakeTheBudgetAndIdleSessionsExpire) {
  // 300 records per session; the process budget is 4 x 1,000 records, one address's share 1,000:
  // three sessions.
  GraspdProcess graspd{relay_options({{"NGIT_NEGENTROPY_MAX_SYNC_EVENTS", "1000"},
                                      {"NGIT_NEGENTROPY_IDLE_SECS", "3"},
                                      {"NGIT_NEGENTROPY_ADDRESS_SCAN_RATE", "0"}})};
  ASSERT_TRUE(graspd.start()) << graspd.stderr_text();
  auto publisher = TestClient::connect(graspd.port());
  ASSERT_TRUE(publisher);
  for (int i = 0; i < 300; ++i)
    publisher->send(event_frame(make_event(1, "e", {}, 1700000000 + i)));
  for (int i = 0; i < 300; ++i) ASSERT_TRUE(publisher->next_as<nostr::RelayOk>());

  std::vector<std::unique_ptr<TestClient>> attackers;
  int held = 0, refused = 0;
  for (int c = 0; c < 16; ++c) {
    auto attacker = TestClient::connect(graspd.port(), false, "127.0.0.2");
    ASSERT_TRUE(attacker);
    for (int s = 0; s < 4; ++s) {
      attacker->send(neg_open("a" + std::to_string(s)));
      auto reply = attacker->next();
      ASSERT_TRUE(reply);
      if (std::holds_alternative<nostr::RelayNegMsg>(*reply)) ++held;
      if (auto* err = std::get_if<nostr::RelayNegErr>(&*reply)) {
        EXPECT_EQ(err->reason.rfind("rate-limited:", 0), 0u) << err->reason;
        ++refused;
      }
    }
    attackers.push_back(std::move(attacker));
  }
  EXPECT_EQ(held, 3) << "one address holds at most a quarter of the budget";
  EXPECT_EQ(refused, 64 - 3);

  auto victim = TestClient::connect(graspd.port());
  ASSERT_TRUE(victim);
  const auto asked = std::chrono::steady_clock::now();
  victim->send(neg_open("v"));
  auto answer = victim->next(10s);
  ASSERT_TRUE(answer);
  EXPECT_TRUE(std::holds_alternative<nostr::RelayNegMsg>(*answer)) << victim->last_text();
  const auto latency = std::chrono::steady_clock::now() - asked;
  EXPECT_LT(latency, 5s);
  std::cout << "victim NEG-OPEN answered in "
            << std::chrono::duration_cast<std::chrono::milliseconds>(latency).count() << " ms\n";

  // Nobody sends a NEG-MSG: every session is closed after 3 s.
  auto victim_closed = victim->next(30s);
  ASSERT_TRUE(victim_closed);
  auto* err = std::get_if<nostr::RelayNegErr>(&*victim_closed);
  ASSERT_TRUE(err) << victim->last_text();
  EXPECT_EQ(err->reason.rfind("closed:", 0), 0u) << err->reason;
  EXPECT_TRUE(
      wait_until([&] { return scraped(graspd.port(), "graspd_negentropy_sessions") == 0; }, 30s));
  EXPECT_EQ(scraped(graspd.port(), "graspd_negentropy_errors_total{reason=\"idle\"}"), 4);
  // The freed share can be taken again (the first connection's own expiry notices come first).
  attackers[0]->send(neg_open("again"));
  int expired_here = 0;
  std::optional<nostr::RelayMessage> again;
  while ((again = attackers[0]->next(10s))) {
    auto* closed = std::get_if<nostr::RelayNegErr>(&*again);
    if (!closed || closed->subscription_id == "again") break;
    EXPECT_EQ(closed->reason.rfind("closed:", 0), 0u) << closed->reason;
    ++expired_here;
  }
  EXPECT_EQ(expired_here, 3);
  ASSERT_TRUE(again);
  EXPECT_TRUE(std::holds_alternative<nostr::RelayNegMsg>(*again)) << attackers[0]->last_text();
  EXPECT_EQ(graspd.stop(), 0) << graspd.stderr_text();
}

// The attacker (127.0.0.2) loops NEG-OPEN {} over 3,000 events on four connections, with the scan
// budget and the NEG-OPEN rate off so nothing but the scan threads holds it back. The scans run on
// the scanner's threads, not the scheduler threads: the victim's (127.0.0.1) REQs are still
// answered promptly. Before, each scan ran on a scheduler thread and the victim's latency grew by
// about 25 ms per looping connection.
TEST(NegentropyE2E, LoopingNegOpensDoNotDelayAnotherClientsReq) {
  GraspdProcess graspd{relay_options(
      {{"NGIT_NEGENTROPY_ADDRESS_SCAN_RATE", "0"}, {"NGIT_NEGENTROPY_OPEN_RATE", "0"}})};
  ASSERT_TRUE(graspd.start()) << graspd.stderr_text();
  auto publisher = TestClient::connect(graspd.port());
  ASSERT_TRUE(publisher);
  constexpr int stored = 3000;
  for (int i = 0; i < stored; ++i)
    publisher->send(event_frame(make_event(1, "n" + std::to_string(i), {}, 1700000000 + i)));
  for (int i = 0; i < stored; ++i) ASSERT_TRUE(publisher->next_as<nostr::RelayOk>());

  std::atomic<bool> stop{false};
  std::atomic<int> answered{0};
  std::vector<std::thread> attackers;
  for (int c = 0; c < 4; ++c) {
    attackers.emplace_back([&] {
      auto attacker = TestClient::connect(graspd.port(), false, "127.0.0.2");
      if (!attacker) return;
      while (!stop) {
        attacker->send(neg_open("loop"));  // the same id: each replaces the last
        auto reply = attacker->next(10s);
        if (!reply) return;
        if (std::holds_alternative<nostr::RelayNegMsg>(*reply)) ++answered;
      }
    });
  }
  ASSERT_TRUE(wait_until([&] { return answered >= 20; }, 30s)) << "the attacker is looping";

  auto victim = TestClient::connect(graspd.port());
  ASSERT_TRUE(victim);
  std::vector<double> latencies;
  for (int q = 0; q < 40; ++q) {
    const auto subid = "v" + std::to_string(q);
    const auto asked = std::chrono::steady_clock::now();
    victim->send("[\"REQ\",\"" + subid + "\",{\"kinds\":[1],\"limit\":5}]");
    std::optional<nostr::RelayMessage> reply;
    while ((reply = victim->next(10s)) && !std::holds_alternative<nostr::RelayEose>(*reply)) {
    }
    ASSERT_TRUE(reply) << "the victim's REQ " << q << " was answered";
    latencies.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - asked)
            .count());
    victim->send("[\"CLOSE\",\"" + subid + "\"]");
  }
  const int during = answered;
  stop = true;
  for (auto& attacker : attackers) attacker.join();
  std::sort(latencies.begin(), latencies.end());
  const double median = latencies[latencies.size() / 2];
  const double p99 = latencies[latencies.size() * 99 / 100];
  std::cout << "victim REQ latency with 4 looping NEG-OPEN connections: median " << median
            << " ms, p99 " << p99 << " ms; attacker NEG-OPENs answered: " << during << "\n";
  EXPECT_LT(p99, 2000.0) << "generous: a loaded CI machine";
  EXPECT_GT(during, 20) << "the attacker is served too, on the scan threads";
  EXPECT_EQ(graspd.stop(), 0) << graspd.stderr_text();
}

}  // namespace
}  // namespace graspd::test
