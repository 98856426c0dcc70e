// Cluster peers end to end (NGIT_SYNC_PEERS, docs/sync.md "Cluster peers"): two real graspd nodes
// on loopback that name each other, with the GRASP-01 policy and purgatory on, and the real git
// client. What one node holds is held by the other before any push; a push to either is served by
// both; a node killed with SIGKILL and restarted gets what it missed, whatever its created_at, and
// gives back what only it had. The balancer in front of such nodes is tested by
// tests/cluster/cluster_fault_test.mjs.
#include <gtest/gtest.h>

#include <array>
#include <memory>
#include <string>
#include <vector>

#include "messages/nostr/nip19.hpp"
#include "tests/integration/relay_test_helpers.hpp"
#include "tests/integration/sync_test_support.hpp"
#include "tests/support/git_test_repos.hpp"
#include "tests/support/http_client.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/wait_until.hpp"

namespace graspd::test {
namespace {

using namespace std::chrono_literals;

constexpr std::uint8_t repository_owner_key = 9;

class ClusterE2E : public ::testing::Test {
 protected:
  /// Two nodes, each told of both (its own entry is ignored), standing for the service at
  /// `domain_` (a balancer's address: nothing listens there; announcements name it).
  void start_nodes(bool purgatory = true) {
    for (auto& port : ports_) port = free_port();
    std::string peers;
    for (auto port : ports_) peers += (peers.empty() ? "" : ",") + relay(port);
    for (std::size_t i = 0; i < nodes_.size(); ++i) {
      GraspdOptions options{{{"NGIT_SYNC_PEERS", peers},
                             {"NGIT_DOMAIN", domain_},
                             {"NGIT_SYNC_BASE_BACKOFF_SECS", "1"},
                             {"NGIT_SYNC_PLUS_ENABLED", "false"}},
                            {},
                            purgatory,
                            ports_[i]};
      nodes_[i] = std::make_unique<GraspdProcess>(options);
      ASSERT_TRUE(nodes_[i]->start()) << nodes_[i]->stderr_text();
    }
  }

  static std::string relay(std::uint16_t port) { return "ws://127.0.0.1:" + std::to_string(port); }
  std::string npub() const {
    return nostr::encode_npub(*nostr::pubkey_from_secret(secret_key(repository_owner_key)));
  }
  std::string repo_url(std::size_t node) const {
    return "http://127.0.0.1:" + std::to_string(ports_[node]) + "/" + npub() + "/repo.git";
  }

  nostr::Event announcement() const {
    return make_event(30617, "",
                      {{"d", "repo"},
                       {"clone", "http://" + domain_ + "/" + npub() + "/repo.git"},
                       {"relays", "ws://" + domain_}},
                      1700000000, repository_owner_key);
  }

  /// Publishes `ev` to `node` and expects `OK true`; the message it came with.
  std::string publish(std::size_t node, const nostr::Event& ev) {
    auto client = TestClient::connect(nodes_[node]->port());
    if (!client) return "no connection";
    auto ok = client->publish(ev);
    EXPECT_TRUE(ok && ok->accepted) << (ok ? ok->message : "no OK");
    return ok ? ok->message : "";
  }

  /// Whether `node` serves the event with `id`.
  bool serves(std::size_t node, const nostr::EventId& id) {
    auto client = TestClient::connect(nodes_[node]->port());
    if (!client) return false;
    auto found = client->query("q", "{\"ids\":[\"" + nostr::to_hex(id) + "\"]}");
    return found && found->size() == 1;
  }

  /// Purgatory's count of held events of `kind` on `node` ("announcement", "state").
  bool holds(std::size_t node, const std::string& kind) {
    auto metrics = http_get(nodes_[node]->port(), "/metrics").body;
    return metrics.find("graspd_purgatory_events{kind=\"" + kind + "\"} 1") != std::string::npos;
  }

  /// The id `node`'s repository has at refs/heads/main, empty when none.
  std::string main_on(std::size_t node) {
    auto listed = run_command("git ls-remote " + repo_url(node) + " refs/heads/main");
    return listed.exit_code == 0 ? listed.out.substr(0, 40) : "";
  }

  TempDir dir_{"graspd-cluster-e2e"};
  std::array<std::uint16_t, 2> ports_{};
  std::array<std::unique_ptr<GraspdProcess>, 2> nodes_;
  const std::string domain_ = "127.0.0.1:" + std::to_string(free_port());
};

TEST_F(ClusterE2E, WhatOneNodeHoldsTheOtherHoldsAndAPushToEitherIsServedByBoth) {
  start_nodes();
  ASSERT_FALSE(HasFatalFailure());
  auto repo = announcement();
  EXPECT_EQ(publish(0, repo).rfind("purgatory:", 0), 0u);
  // The repository exists on node 1 before any push: its announcement was sent on, held there.
  EXPECT_TRUE(wait_until([&] { return holds(1, "announcement"); }, 10s))
      << nodes_[1]->stderr_text();
  EXPECT_EQ(run_command("git ls-remote " + repo_url(1)).exit_code, 0);

  auto local = dir_.path() / "local.git";
  ASSERT_TRUE(init_bare(local));
  auto commit = make_commit(local, "one");
  ASSERT_FALSE(commit.empty());
  auto state = make_event(
      30618, "", {{"d", "repo"}, {"refs/heads/main", commit}, {"HEAD", "ref: refs/heads/main"}},
      1700000100, repository_owner_key);
  publish(0, state);
  ASSERT_TRUE(wait_until([&] { return holds(1, "state"); }, 10s)) << nodes_[1]->stderr_text();

  // The push reaches the node the state was not published to: the state node 0 holds authorises
  // it there, and node 0 gets the git data from node 1 (its peer, asked first).
  auto pushed = run_command("git --git-dir=" + shell_quote(local.string()) + " push " +
                            repo_url(1) + " " + commit + ":refs/heads/main 2>&1");
  ASSERT_EQ(pushed.exit_code, 0) << pushed.out;
  EXPECT_TRUE(wait_until([&] { return main_on(0) == commit; }, 20s)) << nodes_[0]->stderr_text();
  for (std::size_t node : {0u, 1u}) {
    EXPECT_TRUE(wait_until([&] { return serves(node, repo.id) && serves(node, state.id); }, 10s))
        << "node " << node << " serves the released announcement and state";
  }

  // An issue published to node 1 is served by node 0.
  auto issue = make_event(1621, "a bug", {{"a", "30617:" + nostr::to_hex(repo.pubkey) + ":repo"}},
                          1700000200, 11);
  publish(1, issue);
  EXPECT_TRUE(wait_until([&] { return serves(0, issue.id); }, 10s));
}

TEST_F(ClusterE2E, ANodeKilledAndRestartedGetsWhatItMissedAndGivesWhatOnlyItHad) {
  start_nodes(/*purgatory=*/false);
  ASSERT_FALSE(HasFatalFailure());
  auto repo = announcement();
  publish(0, repo);
  ASSERT_TRUE(wait_until([&] { return serves(1, repo.id); }, 10s));
  const auto address = "30617:" + nostr::to_hex(repo.pubkey) + ":repo";

  nodes_[1]->kill();
  // Published while node 1 is down, one of them dated a week back: a catch-up window would miss
  // it, a whole reconciliation does not.
  std::vector<nostr::Event> missed;
  for (int i = 0; i < 20; ++i)
    missed.push_back(make_event(1621, "issue " + std::to_string(i), {{"a", address}},
                                1700000300 + i - (i == 0 ? 7 * 86400 : 0), 11));
  for (const auto& ev : missed) publish(0, ev);
  // And one that only node 1 will have had: it is accepted while node 0 is down.
  ASSERT_TRUE(nodes_[1]->restart()) << nodes_[1]->stderr_text();
  nodes_[0]->kill();
  auto only_on_1 = make_event(1621, "only here", {{"a", address}}, 1700000400, 12);
  publish(1, only_on_1);
  ASSERT_TRUE(nodes_[0]->restart()) << nodes_[0]->stderr_text();

  EXPECT_TRUE(wait_until(
      [&] {
        for (const auto& ev : missed)
          if (!serves(1, ev.id)) return false;
        return true;
      },
      15s))
      << nodes_[1]->stderr_text();
  EXPECT_TRUE(wait_until([&] { return serves(0, only_on_1.id); }, 15s)) << nodes_[0]->stderr_text();
}

TEST_F(ClusterE2E, ANodeIgnoresItsOwnEntryAndAMalformedPeerStopsStartupNamingTheOption) {
  start_nodes(/*purgatory=*/false);
  ASSERT_FALSE(HasFatalFailure());
  EXPECT_NE(nodes_[0]->stderr_text().find("NGIT_SYNC_PEERS: " + relay(ports_[0]) +
                                          " is this node itself (ignored)"),
            std::string::npos)
      << nodes_[0]->stderr_text();
  auto sync = http_get(nodes_[0]->port(), "/api/sync").body;
  EXPECT_EQ(sync.find(relay(ports_[0])), std::string::npos) << "never dials itself: " << sync;
  EXPECT_NE(sync.find(relay(ports_[1])), std::string::npos) << sync;
  // Cluster peers are not offered compression: they share the operator's network.
  EXPECT_TRUE(wait_until([&] {
    return relay_text(nodes_[0]->port(), relay(ports_[1]), "status") == "connected";
  })) << http_get(nodes_[0]->port(), "/api/sync").body;
  EXPECT_EQ(relay_flag(nodes_[0]->port(), relay(ports_[1]), "compression"), false)
      << http_get(nodes_[0]->port(), "/api/sync").body;

  // A peer that is down is named with the option, each retry a log line rather than a busy loop.
  nodes_[1]->kill();
  EXPECT_TRUE(wait_until(
      [&] {
        return nodes_[0]->stderr_text().find("cannot connect to cluster peer " + relay(ports_[1]) +
                                             " (NGIT_SYNC_PEERS)") != std::string::npos;
      },
      15s))
      << nodes_[0]->stderr_text();

  auto refused = GraspdProcess::run_to_exit({"check-config"},
                                            {{"NGIT_SYNC_PEERS", "ws://127.0.0.1:1,not a url"}});
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_NE((refused.stdout_text + refused.stderr_text).find("NGIT_SYNC_PEERS"), std::string::npos)
      << refused.stderr_text;
}

}  // namespace
}  // namespace graspd::test
