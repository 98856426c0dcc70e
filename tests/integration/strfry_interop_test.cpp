// graspd's NIP-77 server against a real strfry's `strfry sync` client (spec
// docs/spec/nip77-negentropy.md §10): the two relays hold overlapping sets of events that all share
// one created_at (so every bound needs an id prefix); `strfry sync --dir both` must leave both with
// the union, and a second run must find nothing to do. And graspd's sync as the NIP-77 client of a
// `strfry relay` (§10.9): it gets every event of a repository although strfry answers a REQ filter
// with at most 500. strfry is not a Debian package: the test finds it through GRASPD_STRFRY (or
// `strfry` on PATH) and skips, saying so, where it is absent.
#include <gtest/gtest.h>

#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "interop_support.hpp"
#include "messages/nostr/nip19.hpp"
#include "relay_test_helpers.hpp"
#include "sync_test_support.hpp"
#include "tests/store/store_test_util.hpp"
#include "tests/support/git_test_repos.hpp"
#include "tests/support/graspd_process.hpp"

namespace graspd::test {
namespace {

namespace fs = std::filesystem;

std::optional<std::string> strfry_binary() {
  if (const char* path = std::getenv("GRASPD_STRFRY"); path && fs::exists(path)) return path;
  int status = -1;
  auto found = run_command("command -v strfry", status);
  if (status != 0 || found.empty()) return std::nullopt;
  return found.substr(0, found.find('\n'));
}

/// True when a WebSocket handshake on `port` succeeds (no test failure when it does not).
bool accepts_websockets(std::uint16_t port) {
  auto ws = runtime::WsClient::connect("127.0.0.1", port, "/", {});
  if (ws) (*ws)->close();
  return ws.ok();
}

/// `strfry relay` in the background, killed with the test.
class StrfryRelay {
 public:
  StrfryRelay(const std::string& binary, const fs::path& config, const fs::path& log) {
    pid_ = ::fork();
    if (pid_ == 0) {
      std::freopen(log.c_str(), "w", stdout);
      std::freopen(log.c_str(), "a", stderr);
      const std::string config_arg = "--config=" + config.string();
      ::execl(binary.c_str(), binary.c_str(), config_arg.c_str(), "relay", nullptr);
      std::_Exit(127);
    }
  }
  /// True once the relay process has ended (e.g. it could not listen on its port).
  bool exited() {
    if (pid_ <= 0) return true;
    if (::waitpid(pid_, nullptr, WNOHANG) != pid_) return false;
    pid_ = -1;
    return true;
  }
  ~StrfryRelay() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  StrfryRelay(const StrfryRelay&) = delete;
  StrfryRelay& operator=(const StrfryRelay&) = delete;

 private:
  pid_t pid_ = -1;
};

class StrfryInterop : public ::testing::Test {
 protected:
  void SetUp() override {
    auto binary = strfry_binary();
    if (!binary) GTEST_SKIP() << "strfry not found: set GRASPD_STRFRY=/path/to/strfry to run";
    strfry_ = *binary;
    fs::create_directories(dir_.path() / "db");
    port_ = free_port();
    configure("");
  }

  /// Writes strfry.conf; `negentropy` is the body of its relay.negentropy block.
  void configure(const std::string& negentropy) {
    negentropy_ = negentropy;
    std::ofstream(dir_.path() / "strfry.conf")
        << "db = \"" << (dir_.path() / "db").string() << "/\"\n"
        << "events { rejectEventsOlderThanSeconds = 946080000 }\n"
        << "relay { bind = \"127.0.0.1\"\n port = " << port_ << "\n nofiles = 0\n"
        << " negentropy { " << negentropy << " } }\n";
  }

  std::string strfry_url() const {
    port_named_ = true;
    return "ws://127.0.0.1:" + std::to_string(port_);
  }

  /// A repository listing graspd and the strfry relay, with `issues` issues at `time_of(i)`.
  std::vector<nostr::Event> repository(const GraspdProcess& graspd, int issues,
                                       const std::function<std::int64_t(int)>& time_of) {
    const std::int64_t t = std::time(nullptr) - 50000;
    std::vector<nostr::Event> all{
        announcement_listing({graspd.relay_url(), strfry_url()}, "demo", t)};
    const auto address = nostr::address_of(all.front());
    for (int i = 0; i < issues; ++i) all.push_back(issue_for(address, i, time_of(i)));
    return all;
  }

  /// strfry relay holds `all`; graspd holds its first `graspd_holds` and syncs. Returns how many
  /// of `all` graspd stores within `deadline` (waiting until all or the deadline).
  std::size_t sync_from_strfry(GraspdProcess& graspd, const std::vector<nostr::Event>& all,
                               std::size_t graspd_holds, std::chrono::seconds deadline) {
    import_into_strfry(all);
    relay_ = start_relay();
    EXPECT_TRUE(relay_) << "strfry relay did not start";
    publish_all(graspd.port(), std::vector<nostr::Event>(all.begin(), all.begin() + graspd_holds));
    wait_until([&] { return stored_count(graspd.port(), all) == all.size(); }, deadline);
    return stored_count(graspd.port(), all);
  }

  /// Starts `strfry relay` on port_ and waits until it listens and accepts WebSocket connections.
  /// Should another process have taken port_ since it was chosen, strfry ends at once ("unable
  /// to listen"): the relay is started again on another port, up to three times, unless events
  /// already name its URL (strfry_url()), which would then point nowhere.
  std::unique_ptr<StrfryRelay> start_relay() {
    for (int attempt = 0; attempt < 3; ++attempt) {
      const auto log = dir_.path() / ("relay-" + std::to_string(attempt) + ".log");
      auto relay = std::make_unique<StrfryRelay>(strfry_, dir_.path() / "strfry.conf", log);
      const auto listening = "Started websocket server on 127.0.0.1:" + std::to_string(port_);
      wait_until(
          [&] { return relay->exited() || read_file(log).find(listening) != std::string::npos; },
          std::chrono::seconds(10));
      if (!relay->exited())
        return wait_until([&] { return accepts_websockets(port_); }, std::chrono::seconds(10))
                   ? std::move(relay)
                   : nullptr;
      if (port_named_) return nullptr;
      port_ = free_port();
      configure(negentropy_);
    }
    return nullptr;
  }

  void import_into_strfry(const std::vector<nostr::Event>& events) {
    {
      std::ofstream jsonl(dir_.path() / "events.jsonl");
      for (const auto& ev : events) jsonl << nostr::serialize_event(ev) << "\n";
    }
    int status = -1;
    auto imported = strfry("import < '" + (dir_.path() / "events.jsonl").string() + "'", status);
    ASSERT_EQ(status, 0) << imported;
  }

  std::string strfry(const std::string& args, int& status) {
    return run_command(
        "'" + strfry_ + "' --config='" + (dir_.path() / "strfry.conf").string() + "' " + args,
        status);
  }

  std::size_t strfry_count() {
    int status = -1;
    auto out = strfry("export", status);
    std::size_t lines = 0;
    for (char c : out) lines += c == '\n';
    // export prints events one per line on stdout and its log lines on stderr (merged here).
    std::size_t events = 0;
    std::size_t start = 0;
    for (std::size_t i = 0; i < lines; ++i) {
      auto end = out.find('\n', start);
      events += out.compare(start, 2, "{\"") == 0;
      start = end + 1;
    }
    return events;
  }

  store::test::TempDir dir_;
  std::string strfry_;
  std::string negentropy_;  ///< the body of strfry.conf's relay.negentropy block
  std::uint16_t port_ = 0;
  mutable bool port_named_ = false;  ///< strfry_url() was handed out: the port may not change
  std::unique_ptr<StrfryRelay> relay_;
};

TEST_F(StrfryInterop, StrfrySyncBothWaysLeavesBothRelaysWithTheUnion) {
  GraspdProcess graspd{relay_options()};
  ASSERT_TRUE(graspd.start()) << graspd.stderr_text();
  const std::int64_t t = std::time(nullptr) - 1000;
  std::vector<nostr::Event> all, graspd_side, strfry_side;
  for (int i = 0; i < 3000; ++i) {
    all.push_back(make_event(1, "s" + std::to_string(i), {{"t", "strfry-interop"}}, t));
    if (i % 10 != 1) graspd_side.push_back(all.back());
    if (i % 10 != 0) strfry_side.push_back(all.back());
  }
  auto client = TestClient::connect(graspd.port());
  ASSERT_TRUE(client);
  for (const auto& ev : graspd_side) client->send(event_frame(ev));
  for (std::size_t i = 0; i < graspd_side.size(); ++i)
    ASSERT_TRUE(client->next_as<nostr::RelayOk>()) << "OK " << i;
  import_into_strfry(strfry_side);
  ASSERT_EQ(strfry_count(), strfry_side.size());
  int status = -1;

  const std::string sync =
      "sync " + graspd.relay_url() + " --filter '{\"#t\":[\"strfry-interop\"]}'";
  auto first = strfry(sync + " --dir both", status);
  EXPECT_EQ(status, 0) << first;
  // strfry holds 300 events graspd lacks and lacks 300 graspd holds.
  EXPECT_NE(first.find("Have 300 need 300"), std::string::npos) << first;
  EXPECT_EQ(stored_count(graspd.port(), all), all.size()) << first;
  EXPECT_EQ(strfry_count(), all.size()) << first;
  auto second = strfry(sync + " --dir both", status);
  EXPECT_EQ(status, 0) << second;
  EXPECT_NE(second.find("Have 0 need 0"), std::string::npos) << second;
  EXPECT_EQ(graspd.stop(), 0) << graspd.stderr_text();
}

TEST_F(StrfryInterop, EveryNegentropyAnswerIsByteIdenticalToStrfrys) {
  // §10.8: graspd and a strfry relay hold the same events (set S: 3,000 on one created_at, set
  // M: 10,000 at T0 + i div 10); nostr-tools' reference client, holding all but every 7th of them
  // plus 50 events of its own, sends the same messages to both.
  GraspdProcess graspd{relay_options()};
  ASSERT_TRUE(graspd.start()) << graspd.stderr_text();
  const std::int64_t t0 = std::time(nullptr) - 100000;
  std::vector<nostr::Event> all;
  for (int i = 0; i < 3000; ++i)
    all.push_back(make_event(1, "s" + std::to_string(i), {{"t", "replay"}}, t0));
  for (int i = 0; i < 10000; ++i)
    all.push_back(make_event(1, "m" + std::to_string(i), {{"t", "replay"}}, t0 + 1 + i / 10));
  auto client = TestClient::connect(graspd.port());
  ASSERT_TRUE(client);
  for (const auto& ev : all) client->send(event_frame(ev));
  for (std::size_t i = 0; i < all.size(); ++i) {
    auto ok = client->next_as<nostr::RelayOk>();
    ASSERT_TRUE(ok && ok->accepted) << "OK " << i;
  }
  import_into_strfry(all);
  relay_ = start_relay();
  ASSERT_TRUE(relay_) << "strfry relay did not start";
  std::size_t dropped = 0;
  {
    std::ofstream items(dir_.path() / "client-items.txt");
    for (std::size_t i = 0; i < all.size(); ++i) {
      if (i % 7 == 0) {
        ++dropped;
        continue;
      }
      items << all[i].created_at << "," << nostr::to_hex(all[i].id) << "\n";
    }
    for (int i = 0; i < 50; ++i) {
      auto own = make_event(1, "own" + std::to_string(i), {{"t", "replay"}}, t0 + 500 + i);
      items << own.created_at << "," << nostr::to_hex(own.id) << "\n";
    }
  }
  int status = -1;
  auto output =
      run_command("cd '" + interop_dir().string() + "' && timeout 120 node negentropy_replay.mjs " +
                      graspd.relay_url() + " " + strfry_url() + " '{\"#t\":[\"replay\"]}' '" +
                      (dir_.path() / "client-items.txt").string() + "'",
                  status);
  ASSERT_EQ(status, 0) << output;
  std::smatch figures;
  ASSERT_TRUE(std::regex_search(output, figures,
                                std::regex(R"re("rounds":(\d+),"have":(\d+),"need":(\d+))re")))
      << output;
  EXPECT_GE(std::stoul(figures[1]), 2u) << "more than one round compared: " << output;
  EXPECT_EQ(std::stoul(figures[2]), 50u) << output;
  EXPECT_EQ(std::stoul(figures[3]), dropped) << output;
  EXPECT_EQ(graspd.stop(), 0) << graspd.stderr_text();
}

TEST_F(StrfryInterop, GraspdSyncsEveryEventFromAStrfryRelayPastItsFilterCap) {
  // 3,000 issues on one created_at: strfry answers a REQ filter with at most 500 events
  // (maxFilterLimit), so REQ pagination alone stops there; NIP-77 names the 2,700 graspd lacks.
  GraspdProcess graspd{GraspdOptions{fast_sync_env(), {}}};
  ASSERT_TRUE(graspd.start()) << graspd.stderr_text();
  const std::int64_t t = std::time(nullptr) - 5000;
  auto all = repository(graspd, 3000, [&](int) { return t; });
  EXPECT_EQ(sync_from_strfry(graspd, all, 301, std::chrono::seconds(90)), all.size())
      << sync_status(graspd.port()) << graspd.stderr_text();
  EXPECT_TRUE(wait_until([&] {
    return relay_history_method(graspd.port(), strfry_url()) == "negentropy" &&
           relay_figure(graspd.port(), strfry_url(), "ids_needed") >= 2700;
  })) << sync_status(graspd.port());
  // strfry agrees to the permessage-deflate graspd offers: everything above came compressed.
  EXPECT_EQ(relay_flag(graspd.port(), strfry_url(), "compression"), true)
      << sync_status(graspd.port());
  EXPECT_EQ(graspd.stop(), 0) << graspd.stderr_text();
}

TEST_F(StrfryInterop, AWindowStrfryBlocksIsSplitUntilItIsAccepted) {
  // strfry refuses a NEG-OPEN matching more than 1,000 events ("blocked: too many query
  // results"); 3,000 issues over 300 seconds are reconciled in halves of the time window.
  configure("maxSyncEvents = 1000");
  GraspdProcess graspd{GraspdOptions{fast_sync_env(), {}}};
  ASSERT_TRUE(graspd.start()) << graspd.stderr_text();
  const std::int64_t t = std::time(nullptr) - 5000;
  auto all = repository(graspd, 3000, [&](int i) { return t + i / 10; });
  // graspd holds one issue: a filter it holds nothing of would be paged, not reconciled.
  EXPECT_EQ(sync_from_strfry(graspd, all, 2, std::chrono::seconds(90)), all.size())
      << sync_status(graspd.port()) << graspd.stderr_text();
  EXPECT_TRUE(wait_until([&] {
    return relay_history_method(graspd.port(), strfry_url()) == "negentropy";
  })) << sync_status(graspd.port());
}

TEST_F(StrfryInterop, ABlockedSingleSecondFallsBackToPagesAndTerminates) {
  // 3,000 issues on one second cannot be split under maxSyncEvents = 1000: that window goes to
  // REQ pagination, which gets strfry's 500 per filter and stops; the relay is not blamed.
  configure("maxSyncEvents = 1000");
  GraspdProcess graspd{GraspdOptions{fast_sync_env(), {}}};
  ASSERT_TRUE(graspd.start()) << graspd.stderr_text();
  const std::int64_t t = std::time(nullptr) - 5000;
  auto all = repository(graspd, 3000, [&](int) { return t; });
  const auto stored = sync_from_strfry(graspd, all, 2, std::chrono::seconds(5));
  EXPECT_GE(stored, 501u);
  EXPECT_LT(stored, all.size());
  EXPECT_TRUE(wait_until([&] {
    return relay_figure(graspd.port(), strfry_url(), "pages") > 0 &&
           relay_history_method(graspd.port(), strfry_url()) == "negentropy";
  })) << sync_status(graspd.port());
  EXPECT_EQ(graspd.stop(), 0) << graspd.stderr_text();
}

TEST_F(StrfryInterop, AStrfryWithNegentropyDisabledIsPagedByReq) {
  // strfry answers NEG-OPEN with NOTICE "ERROR: bad msg: negentropy disabled".
  configure("enabled = false");
  GraspdProcess graspd{GraspdOptions{fast_sync_env(), {}}};
  ASSERT_TRUE(graspd.start()) << graspd.stderr_text();
  const std::int64_t t = std::time(nullptr) - 5000;
  auto all = repository(graspd, 2000, [&](int i) { return t + i; });
  // graspd holds one issue, so the issues filter is offered by NEG-OPEN, which strfry refuses.
  EXPECT_EQ(sync_from_strfry(graspd, all, 2, std::chrono::seconds(90)), all.size())
      << sync_status(graspd.port()) << graspd.stderr_text();
  EXPECT_TRUE(wait_until([&] {
    return relay_history_method(graspd.port(), strfry_url()) == "req";
  })) << sync_status(graspd.port());
}

TEST_F(StrfryInterop, PrintMissingNamesExactlyTheSetDifferences) {
  // 20,000 events, ten per second, split (only strfry, only graspd, both) = (1, 1, 98) %.
  GraspdProcess graspd{relay_options()};
  ASSERT_TRUE(graspd.start()) << graspd.stderr_text();
  const std::int64_t t = std::time(nullptr) - 5000;
  std::vector<nostr::Event> graspd_side, strfry_side;
  std::set<std::string> only_graspd, only_strfry;
  for (int i = 0; i < 20000; ++i) {
    auto ev = make_event(1, "m" + std::to_string(i), {{"t", "print-missing"}}, t + i / 10);
    if (i % 100 != 0) graspd_side.push_back(ev);
    if (i % 100 != 1) strfry_side.push_back(ev);
    if (i % 100 == 1) only_graspd.insert(nostr::to_hex(ev.id));
    if (i % 100 == 0) only_strfry.insert(nostr::to_hex(ev.id));
  }
  auto client = TestClient::connect(graspd.port());
  ASSERT_TRUE(client);
  for (const auto& ev : graspd_side) client->send(event_frame(ev));
  for (std::size_t i = 0; i < graspd_side.size(); ++i)
    ASSERT_TRUE(client->next_as<nostr::RelayOk>()) << "OK " << i;
  import_into_strfry(strfry_side);
  int status = -1;
  auto out = strfry(
      "sync " + graspd.relay_url() + " --filter '{\"#t\":[\"print-missing\"]}' --print-missing",
      status);
  ASSERT_EQ(status, 0) << out;
  // strfry's log lines share stdout with the id lines and may land inside one: drop them whole
  // (each ends with its own newline), which rejoins the line they split.
  out = std::regex_replace(
      out,
      std::regex(
          R"(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} \([^)]*\) \[[^\]]*\][A-Z0-9 ]*\|[^\n]*\n)"),
      "");
  std::set<std::string> have, need;
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("have,", 0) == 0) have.insert(line.substr(5));
    if (line.rfind("need,", 0) == 0) need.insert(line.substr(5));
  }
  // strfry's point of view: it "has" what graspd lacks and "needs" what only graspd holds.
  EXPECT_EQ(have.size(), only_strfry.size());
  EXPECT_EQ(need.size(), only_graspd.size());
  EXPECT_TRUE(have == only_strfry);
  EXPECT_TRUE(need == only_graspd);
}

// `graspd sync` (the one-shot NIP-77 client) against a strfry relay (the server), on events that
// all share one created_at: both directions, then nothing left to do.
TEST_F(StrfryInterop, GraspdSyncCommandBothWaysAgainstAStrfryRelay) {
  const std::int64_t t = std::time(nullptr) - 1000;
  std::vector<nostr::Event> all, strfry_side;
  std::ofstream graspd_side(dir_.path() / "graspd.jsonl");
  for (int i = 0; i < 3000; ++i) {
    all.push_back(make_event(1, "g" + std::to_string(i), {{"t", "graspd-sync"}}, t));
    if (i % 10 != 1) graspd_side << nostr::serialize_event(all.back()) << "\n";
    if (i % 10 != 0) strfry_side.push_back(all.back());
  }
  graspd_side.close();
  const auto data = (dir_.path() / "graspd").string();
  const auto graspd = "'" + GraspdProcess::binary() + "' ";
  int status = -1;
  auto imported = run_command(
      graspd + "import --data '" + data + "' < '" + (dir_.path() / "graspd.jsonl").string() + "'",
      status);
  ASSERT_EQ(status, 0) << imported;
  import_into_strfry(strfry_side);
  auto relay = start_relay();
  ASSERT_TRUE(relay) << "strfry relay did not start";

  const std::string sync = graspd + "sync " + strfry_url() + " --data '" + data +
                           "' --policy open --filter '{\"#t\":[\"graspd-sync\"]}'";
  auto first = run_command(sync, status);
  ASSERT_EQ(status, 0) << first;
  EXPECT_NE(first.find("have 300, need 300, sent 300 (accepted 300, rejected 0), received 300, "
                       "stored 300,"),
            std::string::npos)
      << first;
  EXPECT_EQ(strfry_count(), all.size());
  auto exported = run_command(graspd + "export --data '" + data + "' 2>/dev/null | wc -l", status);
  EXPECT_EQ(std::stoul(exported), all.size()) << exported;
  auto second = run_command(sync, status);
  EXPECT_EQ(status, 0) << second;
  EXPECT_NE(second.find("have 0, need 0, sent 0"), std::string::npos) << second;
}

/// The replication view compares a real strfry relay by NIP-77: the ids each side lacks, nothing
/// downloaded (docs/replication.md).
TEST_F(StrfryInterop, TheReplicationViewCountsWhatAStrfryRelayLacksAndHolds) {
  GraspdProcess graspd{GraspdOptions{
      {{"NGIT_SYNC_ENABLED", "false"}, {"NGIT_SYNC_ALLOW_PRIVATE_ADDRESSES", "true"}}, {}}};
  ASSERT_TRUE(graspd.start()) << graspd.stderr_text();
  const std::int64_t t = std::time(nullptr) - 50000;
  auto ours = repository(graspd, 20, [&](int i) { return t + i; });
  const auto address = nostr::address_of(ours.front());
  // strfry lacks the last three issues and holds two graspd lacks.
  std::vector<nostr::Event> theirs(ours.begin(), ours.end() - 3);
  for (int i = 0; i < 2; ++i) theirs.push_back(issue_for(address, 100 + i, t + 100 + i));
  import_into_strfry(theirs);
  relay_ = start_relay();
  ASSERT_TRUE(relay_) << "strfry relay did not start";
  publish_all(graspd.port(), ours);

  const auto path =
      "/api/repositories/" + nostr::encode_npub(ours.front().pubkey) + "/demo/replication";
  std::string body;
  ASSERT_TRUE(wait_until(
      [&] {
        body = http_request(graspd.port(), "GET", path, {}, std::chrono::seconds(20)).body;
        return body.find("\"only_here\"") != std::string::npos &&
               body.find("\"pending\":true") == std::string::npos;
      },
      std::chrono::seconds(60)))
      << body;
  rapidjson::Document view;
  view.Parse(body.c_str(), body.size());
  ASSERT_FALSE(view.HasParseError()) << body;
  ASSERT_EQ(view["relays"].Size(), 1u) << "strfry only; graspd is not compared with itself";
  const auto& strfry_entry = view["relays"][0];
  EXPECT_EQ(std::string(strfry_entry["url"].GetString()), strfry_url());
  ASSERT_TRUE(strfry_entry["only_here"].IsUint64()) << body;
  EXPECT_EQ(strfry_entry["only_here"].GetUint64(), 3u) << body;
  EXPECT_EQ(strfry_entry["only_there"].GetUint64(), 2u) << body;
  EXPECT_FALSE(strfry_entry["complete"].GetBool());
}

}  // namespace
}  // namespace graspd::test
