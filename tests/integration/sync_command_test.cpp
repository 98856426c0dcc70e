// `graspd sync` (runtime/boot/sync_command.*) end to end: the real binary reconciles its data
// directory with another running graspd over NIP-77 on loopback. Down (through the GRASP-01
// policy, replies arriving before their issues), up, both with a filter, dry runs, the daemon
// running on the same data directory meanwhile, and the failures that end with exit code 1.
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "tests/integration/sync_test_support.hpp"

namespace graspd::test {
namespace {

using namespace std::chrono_literals;

/// A relay the tests sync with or into: GRASP-01 policy, no GRASP-02 sync of its own.
GraspdOptions node_options(std::vector<std::pair<std::string, std::string>> extra = {}) {
  GraspdOptions options;
  options.env = {{"NGIT_SYNC_ENABLED", "false"}};
  options.env.insert(options.env.end(), extra.begin(), extra.end());
  return options;
}

void publish_all(std::uint16_t port, const std::vector<nostr::Event>& events) {
  auto client = TestClient::connect(port);
  ASSERT_TRUE(client);
  for (const auto& ev : events) {
    auto ok = client->publish(ev);
    ASSERT_TRUE(ok && ok->accepted) << (ok ? ok->message : "no OK");
  }
}

/// `graspd sync <args>` on `local`'s data directory, with `local`'s domain for the policy.
GraspdExit sync(const GraspdProcess& local, std::vector<std::string> args,
                std::vector<std::pair<std::string, std::string>> env = {}) {
  args.insert(args.begin(), "sync");
  args.insert(args.end(), {"--data", local.data_dir()});
  env.emplace_back("NGIT_DOMAIN", "127.0.0.1:" + std::to_string(local.port()));
  return GraspdProcess::run_to_exit(args, env, 60s);
}

/// A number of the summary line ("... stored 12, ..."), -1 when absent.
std::int64_t figure(const std::string& text, const std::string& name) {
  std::smatch match;
  if (!std::regex_search(text, match, std::regex("[ (]" + name + " (\\d+)"))) return -1;
  return std::stoll(match[1].str());
}

/// Two relays sharing one repository: the announcement lists both and each holds it.
struct Pair {
  GraspdProcess peer{node_options()};
  GraspdProcess local{node_options()};
  nostr::Event announcement;
  std::string address;

  bool start() {
    if (!peer.start() || !local.start()) return false;
    announcement =
        announcement_listing({local.relay_url(), peer.relay_url()}, "demo", now_seconds() - 20000);
    address = nostr::address_of(announcement);
    publish_all(peer.port(), {announcement});
    publish_all(local.port(), {announcement});
    return true;
  }
  /// `count` issues with `comments` comments each, created from `t`.
  std::vector<nostr::Event> thread(int first, int count, int comments, std::int64_t t) const {
    std::vector<nostr::Event> events;
    for (int i = 0; i < count; ++i) {
      events.push_back(issue_for(address, first + i, t + i));
      for (int c = 0; c < comments; ++c)
        events.push_back(
            comment_on(events[events.size() - 1 - c], (first + i) * 100 + c, t + 1000 + c));
    }
    return events;
  }
};

TEST(SyncCommand, DownloadsWhatItLacksThroughThePolicyInAnyOrder) {
  Pair pair;
  ASSERT_TRUE(pair.start()) << pair.peer.stderr_text() << pair.local.stderr_text();
  // Comments are newer than their issues: the peer answers newest first, so most replies arrive
  // before what they reply to and wait for it.
  auto remote = pair.thread(0, 20, 2, now_seconds() - 10000);
  publish_all(pair.peer.port(), remote);
  ASSERT_EQ(pair.local.stop(), 0);

  auto run = sync(pair.local, {pair.peer.relay_url(), "--dir", "down", "--timeout", "20"});
  ASSERT_EQ(run.exit_code, 0) << run.stderr_text;
  EXPECT_NE(run.stderr_text.find("sync: done:"), std::string::npos) << run.stderr_text;
  EXPECT_EQ(figure(run.stderr_text, "need"), 60) << run.stderr_text;
  EXPECT_EQ(figure(run.stderr_text, "stored"), 60) << run.stderr_text;
  EXPECT_EQ(figure(run.stderr_text, "parked"), 0) << run.stderr_text;
  EXPECT_EQ(figure(run.stderr_text, "sent"), 0) << run.stderr_text;

  ASSERT_TRUE(pair.local.restart()) << pair.local.stderr_text();
  EXPECT_EQ(stored_count(pair.local.port(), remote), remote.size());
  // A second run finds nothing to do.
  ASSERT_EQ(pair.local.stop(), 0);
  auto again = sync(pair.local, {pair.peer.relay_url(), "--dir", "down"});
  ASSERT_EQ(again.exit_code, 0) << again.stderr_text;
  EXPECT_EQ(figure(again.stderr_text, "need"), 0) << again.stderr_text;
}

TEST(SyncCommand, UploadsWhatThePeerLacks) {
  Pair pair;
  ASSERT_TRUE(pair.start());
  auto ours = pair.thread(0, 5, 1, now_seconds() - 9000);
  publish_all(pair.local.port(), ours);
  ASSERT_EQ(pair.local.stop(), 0);

  auto run = sync(pair.local, {pair.peer.relay_url(), "--dir=up"});
  ASSERT_EQ(run.exit_code, 0) << run.stderr_text;
  EXPECT_EQ(figure(run.stderr_text, "have"), 10) << run.stderr_text;
  EXPECT_EQ(figure(run.stderr_text, "sent"), 10) << run.stderr_text;
  EXPECT_EQ(figure(run.stderr_text, "accepted"), 10) << run.stderr_text;
  EXPECT_EQ(figure(run.stderr_text, "received"), 0) << run.stderr_text;
  EXPECT_EQ(stored_count(pair.peer.port(), ours), ours.size());
}

TEST(SyncCommand, BothDirectionsWithAFilterAndDryRuns) {
  Pair pair;
  ASSERT_TRUE(pair.start());
  auto t = now_seconds() - 8000;
  auto remote = pair.thread(0, 4, 1, t);  // 4 issues + 4 comments
  auto ours = pair.thread(10, 3, 1, t);   // 3 issues + 3 comments
  publish_all(pair.peer.port(), remote);
  publish_all(pair.local.port(), ours);
  ASSERT_EQ(pair.local.stop(), 0);
  const std::string issues = R"({"kinds":[1621]})";

  auto dry = sync(pair.local, {pair.peer.relay_url(), "--filter", issues, "--print-missing"});
  ASSERT_EQ(dry.exit_code, 0) << dry.stderr_text;
  std::set<std::string> expected, printed;
  for (const auto& ev : remote)
    if (ev.kind == 1621) expected.insert("need," + nostr::to_hex(ev.id));
  for (const auto& ev : ours)
    if (ev.kind == 1621) expected.insert("have," + nostr::to_hex(ev.id));
  std::istringstream lines(dry.stdout_text);
  for (std::string line; std::getline(lines, line);) printed.insert(line);
  EXPECT_EQ(printed, expected) << dry.stdout_text;
  EXPECT_EQ(figure(dry.stderr_text, "have"), 3) << dry.stderr_text;
  EXPECT_EQ(figure(dry.stderr_text, "need"), 4) << dry.stderr_text;
  EXPECT_EQ(figure(dry.stderr_text, "stored"), 0) << dry.stderr_text;
  EXPECT_EQ(figure(dry.stderr_text, "sent"), 0) << dry.stderr_text;

  auto run = sync(pair.local, {pair.peer.relay_url(), "--filter", issues});  // --dir both
  ASSERT_EQ(run.exit_code, 0) << run.stderr_text;
  EXPECT_EQ(figure(run.stderr_text, "stored"), 4) << run.stderr_text;
  EXPECT_EQ(figure(run.stderr_text, "accepted"), 3) << run.stderr_text;

  // Only the issues moved: the comments stay where they were.
  auto after = sync(pair.local, {pair.peer.relay_url(), "--dry-run"});
  ASSERT_EQ(after.exit_code, 0) << after.stderr_text;
  EXPECT_EQ(figure(after.stderr_text, "have"), 3) << after.stderr_text;
  EXPECT_EQ(figure(after.stderr_text, "need"), 4) << after.stderr_text;
  EXPECT_TRUE(after.stdout_text.empty()) << after.stdout_text;
}

TEST(SyncCommand, WorksWhileTheDaemonRunsOnTheSameDataDirectory) {
  Pair pair;
  ASSERT_TRUE(pair.start());
  auto remote = pair.thread(0, 30, 3, now_seconds() - 7000);
  publish_all(pair.peer.port(), remote);
  // A live subscriber of the daemon; clients keep publishing to it while the sync writes into
  // its store.
  auto subscriber = TestClient::connect(pair.local.port());
  ASSERT_TRUE(subscriber);
  subscriber->send(R"(["REQ","live",{"kinds":[1621,1111],"limit":0}])");
  ASSERT_TRUE(subscriber->next_as<nostr::RelayEose>());
  auto live = pair.thread(100, 20, 0, now_seconds() - 6000);
  std::thread publisher([&] { publish_all(pair.local.port(), live); });
  auto run = sync(pair.local, {pair.peer.relay_url(), "--dir", "down"});
  publisher.join();
  ASSERT_EQ(run.exit_code, 0) << run.stderr_text;
  EXPECT_EQ(figure(run.stderr_text, "stored"), 120) << run.stderr_text;
  // The daemon's queries read the same LMDB store: the synced events are served at once.
  EXPECT_EQ(stored_count(pair.local.port(), remote), remote.size());
  EXPECT_EQ(stored_count(pair.local.port(), live), live.size());
  // The daemon notices what another process wrote and publishes it on its change feed: the live
  // subscriber gets every synced event.
  std::set<nostr::EventId> expected, delivered;
  for (const auto& ev : remote) expected.insert(ev.id);
  const auto until = std::chrono::steady_clock::now() + 20s;
  while (delivered.size() < expected.size() && std::chrono::steady_clock::now() < until) {
    auto msg = subscriber->next(1s);
    if (auto* ev = msg ? std::get_if<nostr::RelayEvent>(&*msg) : nullptr)
      if (expected.count(ev->event.id)) delivered.insert(ev->event.id);
  }
  EXPECT_EQ(delivered.size(), expected.size());
  // and it goes on accepting: a reply to a synced issue (its policy asks the store).
  publish_all(pair.local.port(), {comment_on(remote[0], 999, now_seconds())});
  EXPECT_EQ(pair.local.stop(), 0) << pair.local.stderr_text();
}

TEST(SyncCommand, FailuresExitNonZeroNamingTheCause) {
  GraspdProcess peer{node_options({{"NGIT_NEGENTROPY_MAX_SYNC_EVENTS", "1"}})};
  GraspdProcess local{node_options()};
  ASSERT_TRUE(peer.start() && local.start());
  auto announcement =
      announcement_listing({local.relay_url(), peer.relay_url()}, "demo", now_seconds() - 100);
  publish_all(peer.port(),
              {announcement, issue_for(nostr::address_of(announcement), 1, now_seconds() - 50)});
  ASSERT_EQ(local.stop(), 0);

  auto blocked = sync(local, {peer.relay_url()});
  EXPECT_EQ(blocked.exit_code, 1) << blocked.stderr_text;
  EXPECT_NE(blocked.stderr_text.find("failed: the relay answered NEG-ERR: blocked: too many"),
            std::string::npos)
      << blocked.stderr_text;

  auto unreachable = sync(local, {"ws://127.0.0.1:1", "--timeout", "5"});
  EXPECT_EQ(unreachable.exit_code, 1) << unreachable.stderr_text;
  EXPECT_NE(unreachable.stderr_text.find("failed: cannot connect"), std::string::npos)
      << unreachable.stderr_text;

  auto usage = sync(local, {peer.relay_url(), "--dir", "sideways"});
  EXPECT_EQ(usage.exit_code, 2) << usage.stderr_text;
  auto help = GraspdProcess::run_to_exit({"sync", "--help"});
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_NE(help.stdout_text.find("usage: graspd sync"), std::string::npos);
}

}  // namespace
}  // namespace graspd::test
