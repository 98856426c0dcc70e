// The simulator's own tests: one seed replays event for event, hand-written scenarios parse and
// run, bad scenarios are refused with the entry named, and the oracle follows the GRASP-01 policy,
// the store's NIP-09 deletion rules and the relays a node can reach. The CI seed set itself runs as
// the sim_seeds_* ctest entries.
#include <gtest/gtest.h>

#include "runtime/ops/log.hpp"
#include "store/policy/acceptance_policy.hpp"
#include "tests/sim/git_host.hpp"
#include "tests/sim/network.hpp"
#include "tests/sim/oracle.hpp"
#include "tests/sim/world.hpp"
#include "tests/support/nostr_builders.hpp"

namespace graspd::sim {
namespace {

class Sim : public ::testing::Test {
 protected:
  Sim() { log::set_level(log::Level::warn); }
};

/// `count` relays holding what each action of a parsed scenario published to them (oracle tests).
std::vector<SimRelay> relays_holding(const std::vector<Action>& actions, std::size_t count) {
  std::vector<SimRelay> relays(count);
  for (std::size_t i = 0; i < relays.size(); ++i) relays[i].url = relay_url(i);
  for (const auto& a : actions)
    for (auto r : a.relays) relays[r].events[a.event->id] = {*a.event, ""};
  return relays;
}

std::string scenario_text() {
  return R"({"nodes": 2, "relays": 2, "seconds": 1200, "actions": [
    {"at": 0, "do": "announce", "repo": "demo", "nodes": [0, 1], "relays": [0, 1], "to": [0]},
    {"at": 5, "do": "push", "repo": "demo", "node": 0, "to": [0, 1]},
    {"at": 10, "do": "issue", "repo": "demo", "to": [1]},
    {"at": 20, "do": "comment", "on": 2, "to": [1]},
    {"at": 30, "do": "drop", "node": 0, "relay": 1},
    {"at": 31, "do": "comment", "on": 3, "to": [0, 1]},
    {"at": 40, "do": "restart", "node": 1},
    {"at": 50, "do": "rate_limit", "relay": 1, "value": 3},
    {"at": 60, "do": "garbage", "node": 0, "relay": 0, "value": 2},
    {"at": 61, "do": "issue", "repo": "demo", "to": [0]}
  ]})";
}

TEST_F(Sim, OneSeedReplaysEventForEvent) {
  SimOptions options;
  options.seed = 7;
  auto first = run(options, generate(options));
  auto second = run(options, generate(options));
  ASSERT_TRUE(first.ok()) << first.violations.front();
  EXPECT_GT(first.trace_lines, 100u);
  EXPECT_EQ(first.trace_hash, second.trace_hash);
  EXPECT_EQ(first.trace_lines, second.trace_lines);
  EXPECT_EQ(first.stored_events, second.stored_events);
  EXPECT_GT(first.stored_events, 0u);
  options.seed = 8;
  EXPECT_NE(run(options, generate(options)).trace_hash, first.trace_hash);
}

/// FNV-1a over the description of every action of a schedule.
std::uint64_t schedule_hash(const std::vector<Action>& schedule) {
  std::uint64_t hash = 0xcbf29ce484222325ull;
  for (const auto& action : schedule)
    for (unsigned char c : describe(action) + "\n") hash = (hash ^ c) * 0x100000001b3ull;
  return hash;
}

// A seed that fails under one preset must replay under the other: the schedule of seed 7 is the
// same in the g++ build and the clang (ASan) build. The figures are this generator's; a change
// to the generator changes them on purpose, and both presets must then agree on the new ones.
TEST_F(Sim, ASeedsScheduleIsTheSameInEveryBuild) {
  SimOptions options;
  options.seed = 7;
  auto schedule = generate(options);
  EXPECT_EQ(schedule.size(), 113u);
  EXPECT_EQ(schedule_hash(schedule), 7891090325188968343ull);
}

TEST_F(Sim, ScheduleOfASeedIsFixedAndSpansTheRun) {
  SimOptions options;
  options.seed = 3;
  auto a = generate(options);
  auto b = generate(options);
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(describe(a[i]), describe(b[i]));
    EXPECT_GE(a[i].at_ms, 0);
    EXPECT_LT(a[i].at_ms, options.seconds * 1000);
    if (i > 0) {
      EXPECT_LE(a[i - 1].at_ms, a[i].at_ms);
    }
  }
}

TEST_F(Sim, HandWrittenScenarioSyncsBothNodes) {
  SimOptions options;
  std::vector<Action> actions;
  ASSERT_FALSE(parse_scenario(scenario_text(), options, actions));
  EXPECT_EQ(options.nodes, 2u);
  EXPECT_EQ(options.seconds, 1200);
  ASSERT_EQ(actions.size(), 10u);
  auto result = run(options, actions);
  ASSERT_TRUE(result.ok()) << result.violations.front();
  // Both nodes hold the announcement, the state, two issues and two comments: node 0 took the
  // push, node 1 fetched the commit from node 0.
  EXPECT_EQ(result.stored_events, 2u * 6u);
  EXPECT_EQ(result.pushes, 1u);
  EXPECT_GE(result.git_fetches, 1u);
  EXPECT_EQ(result.restarts, 1u);
  EXPECT_EQ(result.faults, 3u);
  EXPECT_GT(result.negentropy_rounds, 0u)
      << "relay 1 speaks NIP-77: history came by reconciliation";
}

// Purgatory in the mesh: "pushed" is stored on both hosts once its commit is pushed to node 0 and
// node 1 fetched it (after node 0's git outage made the first fetches fail); "state_only" has a
// state whose commit never comes and "silent" has nothing: both are held, then expire, on both.
TEST_F(Sim, OnlyARepositoryWhoseCommitArrivesIsServedAndEveryHostFetchesIt) {
  SimOptions options;
  std::vector<Action> actions;
  ASSERT_FALSE(parse_scenario(R"({"nodes": 2, "relays": 1, "seconds": 1800, "actions": [
    {"at": 0, "do": "announce", "repo": "pushed", "nodes": [0, 1], "relays": [0], "to": [0]},
    {"at": 0, "do": "announce", "repo": "state_only", "nodes": [0, 1], "relays": [0], "to": [0]},
    {"at": 0, "do": "announce", "repo": "silent", "nodes": [0, 1], "relays": [0], "to": [0]},
    {"at": 10, "do": "git_outage", "node": 0, "for": 400},
    {"at": 20, "do": "push", "repo": "pushed", "node": 0, "to": [0]},
    {"at": 20, "do": "state", "repo": "state_only", "to": [0]},
    {"at": 30, "do": "issue", "repo": "pushed", "to": [0]},
    {"at": 30, "do": "issue", "repo": "state_only", "to": [0]},
    {"at": 40, "do": "restart", "node": 1}
  ]})",
                              options, actions));
  auto result = run(options, actions);
  ASSERT_TRUE(result.ok()) << result.violations.front();
  // Each node: "pushed"'s announcement, state and issue; nothing of the other two.
  EXPECT_EQ(result.stored_events, 2u * 3u);
  EXPECT_EQ(result.pushes, 1u);
  EXPECT_GE(result.git_fetches, 2u) << "node 1 fetched during node 0's outage, then after it";
}

// A cluster: one domain for three nodes that sync each other and serve each other as relays. The
// push reaches node 1 only (the balancer's choice); nodes 0 and 2 fetch its commit from their
// peers. Node 2 restarts mid-way and still ends with everything.
TEST_F(Sim, AClusterStoresOneSetOnEveryNodeAndFetchesGitDataFromItsPeers) {
  SimOptions options;
  std::vector<Action> actions;
  ASSERT_FALSE(parse_scenario(R"({"nodes": 3, "relays": 2, "seconds": 1800, "cluster": true,
    "actions": [
    {"at": 0, "do": "announce", "repo": "demo", "nodes": [0], "relays": [0, 1], "to": [0]},
    {"at": 5, "do": "push", "repo": "demo", "node": 1, "to": [1]},
    {"at": 10, "do": "issue", "repo": "demo", "to": [1]},
    {"at": 20, "do": "comment", "on": 2, "to": [0]},
    {"at": 30, "do": "restart", "node": 2},
    {"at": 40, "do": "refuse", "relay": 1, "for": 600},
    {"at": 50, "do": "issue", "repo": "demo", "to": [0]}
  ]})",
                              options, actions));
  EXPECT_TRUE(options.cluster);
  auto result = run(options, actions);
  ASSERT_TRUE(result.ok()) << result.violations.front();
  // Every node: the announcement, the state, two issues and the comment.
  EXPECT_EQ(result.stored_events, 3u * 5u);
  EXPECT_EQ(result.pushes, 1u);
  EXPECT_GE(result.git_fetches, 2u);
  EXPECT_GT(result.peer_frames, 0u) << "the nodes synced each other";
}

TEST_F(Sim, OracleStoresNothingOfARepositoryWhoseGitDataNeverArrives) {
  SimOptions options;
  std::vector<Action> actions;
  // "held" is never pushed but names relay 1, where "found" is announced: a held announcement
  // makes the node dial its relays too.
  ASSERT_FALSE(parse_scenario(R"({"nodes": 1, "relays": 2, "actions": [
    {"at": 0, "do": "announce", "repo": "held", "nodes": [0], "relays": [1], "to": [0]},
    {"at": 1, "do": "state", "repo": "held", "to": [0]},
    {"at": 2, "do": "issue", "repo": "held", "to": [0]},
    {"at": 3, "do": "announce", "repo": "found", "nodes": [0], "relays": [1], "to": [1]},
    {"at": 4, "do": "push", "repo": "found", "node": 0, "to": [1]},
    {"at": 5, "do": "issue", "repo": "found", "to": [1]}
  ]})",
                              options, actions));
  auto relays = relays_holding(actions, 2);
  std::vector<const SimRelay*> view{&relays[0], &relays[1]};
  policy::PolicyConfig config;
  config.service = HostPort{node_host(0), std::nullopt};
  const auto& found_state = *actions[4].event;
  Released released;
  released.commits[state_repository(found_state)] = state_tips(found_state).front();
  EXPECT_EQ(expected_events(config, view, 0, &released),
            (std::set<nostr::EventId>{actions[3].event->id, found_state.id, actions[5].event->id}));
  // Without purgatory all six are stored; both repositories are accepted either way.
  EXPECT_EQ(expected_events(config, view, 0).size(), 6u);
  EXPECT_EQ(accepted_repositories(config, view, 0).size(), 2u);
  // A state naming another commit than the one pushed stays out too.
  released.commits[state_repository(found_state)] = commit_id(1, 2);
  EXPECT_EQ(expected_events(config, view, 0, &released),
            (std::set<nostr::EventId>{actions[3].event->id, actions[5].event->id}));
}

TEST_F(Sim, BadScenariosNameTheEntry) {
  auto error_of = [](const std::string& text) {
    SimOptions options;
    std::vector<Action> actions;
    auto error = parse_scenario(text, options, actions);
    return error ? error->message : std::string();
  };
  EXPECT_EQ(error_of("[1]"), "not a JSON object");
  EXPECT_EQ(error_of(R"({"actions": 3})"), "needs an \"actions\" array");
  EXPECT_EQ(error_of(R"({"actions": [{"at": 1, "do": "explode"}]})"),
            "actions[0]: unknown \"do\": explode");
  EXPECT_EQ(error_of(R"({"actions": [{"at": 1, "do": "issue", "repo": "x", "to": [0]}]})"),
            "actions[0]: issue names a repo not announced before");
  EXPECT_EQ(error_of(R"({"relays": 1, "actions": [{"at": 1, "do": "drop", "relay": 4}]})"),
            "actions[0]: node or relay out of range");
  EXPECT_EQ(error_of(R"({"actions": [{"do": "restart"}]})"),
            "actions[0]: needs \"at\" (seconds, a non-negative integer)");
}

TEST_F(Sim, OracleFollowsThePolicyAndTheReachableRelays) {
  SimOptions options;
  std::vector<Action> actions;
  // Node 0 is listed by "demo" (on relay 0, naming relay 1); "other" lists nobody.
  ASSERT_FALSE(parse_scenario(R"({"nodes": 1, "relays": 3, "actions": [
    {"at": 0, "do": "announce", "repo": "demo", "nodes": [0], "relays": [1], "to": [0]},
    {"at": 1, "do": "issue", "repo": "demo", "to": [1]},
    {"at": 2, "do": "comment", "on": 1, "to": [1]},
    {"at": 3, "do": "issue", "repo": "demo", "to": [2]},
    {"at": 4, "do": "announce", "repo": "other", "nodes": [], "relays": [0], "to": [0]},
    {"at": 5, "do": "issue", "repo": "other", "to": [0]}
  ]})",
                              options, actions));
  auto relays = relays_holding(actions, 3);
  std::vector<const SimRelay*> view{&relays[0], &relays[1], &relays[2]};
  policy::PolicyConfig config;
  config.service = HostPort{node_host(0), std::nullopt};
  auto expected = expected_events(config, view, 0);
  // The announcement, the issue and comment on relay 1; not the issue on relay 2 (not named), not
  // "other" (does not list node 0) nor its issue.
  EXPECT_EQ(expected, (std::set<nostr::EventId>{actions[0].event->id, actions[1].event->id,
                                                actions[2].event->id}));
  // Behind the URL guard, relay 1's contents are out of reach.
  relays[1].private_address = true;
  EXPECT_EQ(expected_events(config, view, 0), std::set<nostr::EventId>{actions[0].event->id});
}

TEST_F(Sim, OracleRemovesWhatItsAuthorDeletesAndKeepsWhatAStrangerDeletes) {
  SimOptions options;
  std::vector<Action> actions;
  ASSERT_FALSE(parse_scenario(R"({"nodes": 1, "relays": 1, "actions": [
    {"at": 0, "do": "announce", "repo": "demo", "nodes": [0], "relays": [0], "to": [0]},
    {"at": 1, "do": "issue", "repo": "demo", "to": [0]},
    {"at": 2, "do": "issue", "repo": "demo", "to": [0]},
    {"at": 3, "do": "comment", "on": 1, "to": [0]},
    {"at": 4, "do": "delete", "on": 2, "to": [0]},
    {"at": 5, "do": "delete", "on": 3, "by": "stranger", "to": [0]}
  ]})",
                              options, actions));
  ASSERT_EQ(actions[4].event->kind, 5u);
  SimRelay relay;
  relay.url = relay_url(0);
  for (const auto& a : actions) relay.events[a.event->id] = {*a.event, ""};
  policy::PolicyConfig config;
  config.service = HostPort{node_host(0), std::nullopt};
  // The author's deletion is kept and its issue is gone, though the relay still offers it; the
  // stranger's deletion names nothing of theirs, so it is refused and the comment stays.
  EXPECT_EQ(expected_events(config, {&relay}, 0),
            (std::set<nostr::EventId>{actions[0].event->id, actions[1].event->id,
                                      actions[3].event->id, actions[4].event->id}));
  // A stranger's deletion naming an issue of their own as well is accepted: it removes that issue
  // and still not the comment.
  auto address = "30617:" + nostr::to_hex(actions[0].event->pubkey) + ":demo";
  auto own = test::signed_event(1621, {{"a", address}}, kEpoch + 6, "mine", 101);
  auto both = test::signed_event(
      5, {{"e", nostr::to_hex(actions[3].event->id)}, {"e", nostr::to_hex(own.id)}}, kEpoch + 7, "",
      101);
  relay.events[own.id] = {own, ""};
  relay.events[both.id] = {both, ""};
  EXPECT_EQ(expected_events(config, {&relay}, 0),
            (std::set<nostr::EventId>{actions[0].event->id, actions[1].event->id,
                                      actions[3].event->id, actions[4].event->id, both.id}));
}

TEST_F(Sim, ScenarioDeletionsAreChecked) {
  SimOptions options;
  std::vector<Action> actions;
  auto error = parse_scenario(R"({"actions": [
    {"at": 0, "do": "announce", "repo": "demo", "nodes": [0], "relays": [0], "to": [0]},
    {"at": 1, "do": "issue", "repo": "demo", "to": [0]},
    {"at": 2, "do": "delete", "on": 1, "by": "nobody", "to": [0]}
  ]})",
                              options, actions);
  ASSERT_TRUE(error);
  EXPECT_EQ(error->message, "actions[2]: \"by\" must be \"author\" or \"stranger\"");
}

}  // namespace
}  // namespace graspd::sim
