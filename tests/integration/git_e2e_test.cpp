// Git hosting end to end (docs/spec/git-hosting.md §11): the real git client (and curl) against the
// real graspd binary on loopback. Announce → ls-remote; state then push → accepted; clone; a push
// the state does not name → `[remote rejected]` with the reason, nothing changed; a push over 10
// MiB; partial clone; git data sync between two nodes, beside a stalling and a refusing host; pull
// requests in purgatory (held until their commit is pushed or fetched, refs/nostr placeholders
// deleted when no PR event comes); and hostile input (traversal, oversized and gzip-bomb bodies, a
// slow client, many concurrent advertisements while a WebSocket client keeps being answered).
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <rapidjson/document.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <future>
#include <iostream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "messages/nostr/nip19.hpp"
#include "tests/integration/relay_test_helpers.hpp"
#include "tests/support/git_objects.hpp"
#include "tests/support/http_client.hpp"
#include "tests/support/raw_socket.hpp"
#include "tests/support/shell.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/wait_until.hpp"

namespace graspd::test {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

constexpr std::uint8_t owner_key = 7;

using Shell = ShellResult;

std::string trim(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' '))
    text.pop_back();
  return text;
}

/// Sends a git POST header promising 1000 bytes of body and only `body` of them; returns the
/// socket.
int partial_post(std::uint16_t port, const std::string& path, const std::string& service,
                 const std::string& body, const char* from = "127.0.0.1") {
  int fd = connect_from(port, from);
  if (fd < 0) return -1;
  std::string head = "POST " + path + "/" + service +
                     " HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-" + service +
                     "-request\r\nContent-Length: 100000\r\n\r\n" + body;
  if (!send_all(fd, head)) return ::close(fd), -1;
  return fd;
}

/// An upload-pack request whose body stops after two bytes: a slow client.
int slow_post(std::uint16_t port, const std::string& path, const char* from = "127.0.0.1") {
  return partial_post(port, path, "git-upload-pack", "00", from);
}

std::string pkt(const std::string& payload) {
  char length[5];
  std::snprintf(length, sizeof length, "%04zx", payload.size() + 4);
  return length + payload;
}

/// A push that anyone may make (a refs/nostr/<id> ref) with its whole command list and the start
/// of a pack that never ends: it holds a git process (receive-pack reading the pack).
int held_push(std::uint16_t port, const std::string& path, const char* from = "127.0.0.1") {
  auto command = std::string(40, '0') + " " + std::string(40, 'a') + " refs/nostr/" +
                 std::string(64, 'b') + '\0' + "report-status\n";
  return partial_post(port, path, "git-receive-pack", pkt(command) + "0000PACK", from);
}

/// Waits until the peer closes one of `fds` (reads and drops what comes), within `deadline`.
bool one_closed_within(const std::vector<int>& fds, std::chrono::seconds deadline) {
  std::vector<pollfd> polled;
  for (int fd : fds) polled.push_back({fd, POLLIN, 0});
  auto until = std::chrono::steady_clock::now() + deadline;
  while (std::chrono::steady_clock::now() < until) {
    if (::poll(polled.data(), polled.size(), 100) <= 0) continue;
    for (auto& entry : polled) {
      if (entry.revents == 0) continue;
      char buffer[512];
      auto got = ::recv(entry.fd, buffer, sizeof buffer, MSG_DONTWAIT);
      if (got == 0 || (got < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) return true;
    }
  }
  return false;
}

/// Waits until the peer closes `fd` (reads and drops what comes), within `deadline`.
bool closed_within(int fd, std::chrono::seconds deadline) {
  auto closed = std::async(std::launch::async, [fd] {
    char c;
    while (::read(fd, &c, 1) > 0) {
    }
    return true;
  });
  bool ok = closed.wait_for(deadline) == std::future_status::ready;
  ::shutdown(fd, SHUT_RDWR);
  closed.wait();
  ::close(fd);
  return ok;
}

class GitE2E : public ::testing::Test {
 protected:
  /// Starts graspd with sync off and git data in the test's directory unless `extra` says
  /// otherwise.
  void start(std::vector<std::pair<std::string, std::string>> extra = {}) {
    auto env = extra;
    for (const auto& fallback : {std::pair<std::string, std::string>{"NGIT_SYNC_ENABLED", "false"},
                                 {"NGIT_GIT_DATA_PATH", (dir_.path() / "git").string()}})
      if (std::none_of(extra.begin(), extra.end(),
                       [&](const auto& e) { return e.first == fallback.first; }))
        env.push_back(fallback);
    // Purgatory on, as deployed: announcements and states wait for their git data.
    graspd_ = std::make_unique<GraspdProcess>(GraspdOptions{env, {}, true});
    ASSERT_TRUE(graspd_->start()) << graspd_->stderr_text();
    client_ = TestClient::connect(graspd_->port());
    ASSERT_TRUE(client_);
    fs::create_directories(home());
    fs::create_directories(work());
  }

  /// A second graspd ("B") beside the test's own, with its git data in `git-b` and purgatory on.
  struct NodeB {
    std::unique_ptr<GraspdProcess> process;
    std::unique_ptr<TestClient> client;
    std::string host;  ///< 127.0.0.1:<port>
  };
  NodeB start_node_b(std::vector<std::pair<std::string, std::string>> env) {
    env.push_back({"NGIT_GIT_DATA_PATH", (dir_.path() / "git-b").string()});
    NodeB b;
    b.process = std::make_unique<GraspdProcess>(GraspdOptions{env, {}, true});
    if (!b.process->start()) {
      ADD_FAILURE() << b.process->stderr_text();
      return b;
    }
    b.client = TestClient::connect(b.process->port());
    b.host = "127.0.0.1:" + std::to_string(b.process->port());
    return b;
  }

  /// This node and B (not syncing: what B holds came from its clients or a git fetch)
  /// both serve owner_key's "repo": one announcement listing both, published to both.
  struct Pair {
    NodeB b;
    std::string b_url;
    nostr::Event announcement;
  };
  Pair start_pair() { return start_pair_with({}); }
  /// start_pair with `extra` options on both nodes (B never syncs).
  Pair start_pair_with(std::vector<std::pair<std::string, std::string>> extra) {
    auto env = extra;
    env.push_back({"NGIT_GIT_FETCH_DELAY_SECS", "0"});
    env.push_back({"NGIT_SYNC_ALLOW_PRIVATE_ADDRESSES", "true"});
    start(env);
    if (HasFatalFailure()) return {};
    auto b_env = env;
    std::erase_if(b_env, [](const auto& option) { return option.first == "NGIT_SYNC_ENABLED"; });
    b_env.push_back({"NGIT_SYNC_ENABLED", "false"});
    Pair pair{start_node_b(b_env), {}, {}};
    if (!pair.b.client) return pair;
    pair.b_url = "http://" + pair.b.host + path();
    pair.announcement = make_event(30617, "",
                                   {{"d", "repo"},
                                    {"clone", url(), pair.b_url},
                                    {"relays", "ws://" + host(), "ws://" + pair.b.host}},
                                   1700000000, owner_key);
    EXPECT_TRUE(client_->publish(pair.announcement)->accepted);
    EXPECT_TRUE(pair.b.client->publish(pair.announcement)->accepted);
    return pair;
  }

  /// A state naming a new `main` published to both nodes of `pair`, and `main` pushed to both;
  /// returns its commit.
  std::string push_to_both(const Pair& pair) {
    auto main_id = commit("one");
    auto state = make_event(
        30618, "", {{"d", "repo"}, {"refs/heads/main", main_id}, {"HEAD", "ref: refs/heads/main"}},
        1700000100, owner_key);
    EXPECT_TRUE(client_->publish(state));
    EXPECT_TRUE(pair.b.client->publish(state));
    EXPECT_EQ(git("push -q " + url() + " main", work() + "/local").exit_code, 0);
    EXPECT_EQ(git("push -q " + pair.b_url + " main", work() + "/local").exit_code, 0);
    return main_id;
  }

  void TearDown() override {
    client_.reset();
    if (graspd_ && graspd_->running()) {
      EXPECT_EQ(graspd_->stop(), 0) << graspd_->stderr_text();
    }
  }

  std::string home() const { return (dir_.path() / "home").string(); }
  std::string work() const { return (dir_.path() / "work").string(); }
  std::string host() const { return "127.0.0.1:" + std::to_string(graspd_->port()); }
  std::string npub(std::uint8_t key = owner_key) const {
    return nostr::encode_npub(*nostr::pubkey_from_secret(secret_key(key)));
  }
  std::string path(const std::string& d = "repo", std::uint8_t key = owner_key) const {
    return "/" + npub(key) + "/" + d + ".git";
  }
  std::string url(const std::string& d = "repo") const { return "http://" + host() + path(d); }

  /// git with a private HOME and no system or global configuration.
  Shell git(const std::string& args, const std::string& in = "") {
    return run_shell(in.empty() ? work() : in,
                     "env -i PATH=/usr/bin:/bin HOME='" + home() +
                         "' GIT_CONFIG_NOSYSTEM=1 GIT_TERMINAL_PROMPT=0 "
                         "GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@t GIT_COMMITTER_NAME=t "
                         "GIT_COMMITTER_EMAIL=t@t git " +
                         args);
  }

  void announce(const std::string& d = "repo", std::uint8_t key = owner_key,
                nostr::Tags extra = {}) {
    nostr::Tags tags{
        {"d", d}, {"clone", "http://" + host() + path(d, key)}, {"relays", "ws://" + host()}};
    tags.insert(tags.end(), extra.begin(), extra.end());
    auto ok = client_->publish(make_event(30617, "", tags, 1700000000, key));
    ASSERT_TRUE(ok);
    ASSERT_TRUE(ok->accepted) << ok->message;
  }

  void publish_state(const std::vector<std::pair<std::string, std::string>>& refs,
                     std::int64_t created_at, const std::string& d = "repo",
                     std::uint8_t key = owner_key) {
    nostr::Tags tags{{"d", d}, {"HEAD", "ref: refs/heads/main"}};
    for (const auto& [ref, id] : refs) tags.push_back({ref, id});
    auto ok = client_->publish(make_event(30618, "", tags, created_at, key));
    ASSERT_TRUE(ok);
    ASSERT_TRUE(ok->accepted) << ok->message;
  }

  /// A local repository `local` with one more commit; returns its id.
  std::string commit(const std::string& message, const std::string& local = "local") {
    auto dir = work() + "/" + local;
    if (!fs::exists(dir)) {
      EXPECT_EQ(git("init -q -b main " + local).exit_code, 0);
    }
    EXPECT_EQ(git("commit -q --allow-empty -m '" + message + "'", dir).exit_code, 0);
    return trim(git("rev-parse HEAD", dir).output);
  }

  std::string remote_refs(const std::string& d = "repo") {
    return git("ls-remote " + url(d)).output;
  }

  /// Ids of the events a REQ for `kind` returns (a client of its own: no subscription lingers).
  static std::vector<nostr::EventId> served(std::uint16_t port, std::uint32_t kind) {
    auto reader = TestClient::connect(port);
    std::vector<nostr::EventId> ids;
    if (!reader) return ids;
    auto events = reader->query("q", "{\"kinds\":[" + std::to_string(kind) + "]}");
    if (events)
      for (const auto& ev : *events) ids.push_back(ev.id);
    return ids;
  }
  std::vector<nostr::EventId> served(std::uint32_t kind) { return served(graspd_->port(), kind); }

  TempDir dir_{"graspd-git-e2e"};
  std::unique_ptr<GraspdProcess> graspd_;
  std::unique_ptr<TestClient> client_;
};

TEST_F(GitE2E, AnnouncePushCloneAndRefusal) {
  start();
  announce();
  // The repository exists before the OK: ls-remote works at once, on an empty repository.
  auto listed = git("ls-remote " + url());
  EXPECT_EQ(listed.exit_code, 0) << listed.output;
  EXPECT_EQ(trim(listed.output), "");

  auto first = commit("one");
  publish_state({{"refs/heads/main", first}}, 1700000100);
  auto pushed = git("push " + url() + " main", work() + "/local");
  ASSERT_EQ(pushed.exit_code, 0) << pushed.output;
  EXPECT_NE(pushed.output.find("[new branch]"), std::string::npos) << pushed.output;
  EXPECT_NE(remote_refs().find(first + "\trefs/heads/main"), std::string::npos);

  auto cloned = git("clone -q " + url() + " copy");
  ASSERT_EQ(cloned.exit_code, 0) << cloned.output;
  EXPECT_EQ(trim(git("rev-parse HEAD", work() + "/copy").output), first);

  // A commit the state does not name: refused as a hook would be, with the ids in the reason.
  auto second = commit("two");
  auto refused = git("push " + url() + " main", work() + "/local");
  EXPECT_EQ(refused.exit_code, 1) << refused.output;
  EXPECT_NE(refused.output.find("[remote rejected] main -> main"), std::string::npos)
      << refused.output;
  EXPECT_NE(refused.output.find("pushed " + second.substr(0, 12)), std::string::npos)
      << refused.output;
  EXPECT_NE(refused.output.find("wants " + first.substr(0, 12)), std::string::npos)
      << refused.output;
  EXPECT_EQ(refused.output.find("bad band"), std::string::npos) << refused.output;
  EXPECT_NE(remote_refs().find(first + "\trefs/heads/main"), std::string::npos) << "unchanged";

  // A tag the state omits, and a branch it omits: refused, nothing changes.
  EXPECT_EQ(git("tag v1", work() + "/local").exit_code, 0);
  auto tag = git("push " + url() + " v1", work() + "/local");
  EXPECT_EQ(tag.exit_code, 1) << tag.output;
  EXPECT_NE(tag.output.find("[remote rejected] v1 -> v1"), std::string::npos) << tag.output;
  auto branch = git("push " + url() + " main:other", work() + "/local");
  EXPECT_EQ(branch.exit_code, 1) << branch.output;
  auto after = remote_refs();
  EXPECT_EQ(after.find("refs/tags/v1"), std::string::npos) << after;
  EXPECT_EQ(after.find("refs/heads/other"), std::string::npos) << after;

  // Once the state names the new commit, the same push is accepted (a fast-forward).
  publish_state({{"refs/heads/main", second}}, 1700000200);
  auto forward = git("push " + url() + " main", work() + "/local");
  EXPECT_EQ(forward.exit_code, 0) << forward.output;
  EXPECT_NE(remote_refs().find(second + "\trefs/heads/main"), std::string::npos);

  // A reachable commit that is no longer a tip can be fetched by id (§3.7); an unknown id is
  // git's own error.
  ASSERT_EQ(git("init -q byid").exit_code, 0);
  auto by_id = git("fetch -q " + url() + " " + first, work() + "/byid");
  EXPECT_EQ(by_id.exit_code, 0) << by_id.output;
  auto unknown = git("fetch -q " + url() + " " + std::string(40, 'b'), work() + "/byid");
  EXPECT_NE(unknown.exit_code, 0);
  EXPECT_NE(unknown.output.find("not our ref"), std::string::npos) << unknown.output;

  // A fetch with many local commits: the negotiation body is gzipped by git (§3.5).
  auto copy = work() + "/copy";
  // 300 commits made by one git fast-import rather than 600 git processes, dated after the
  // server's commits so that the negotiation walks them all.
  ASSERT_EQ(run_shell(copy,
                      "head=$(git rev-parse HEAD); for i in $(seq 1 300); do "
                      "printf 'commit refs/heads/main\\ncommitter t <t@t> %d +0000\\ndata 4\\n"
                      "c%03d\\n' $((2000000000 + i)) $i; "
                      "[ $i = 1 ] && printf 'from %s\\n' $head; "
                      "printf 'M 644 inline f\\ndata %d\\n%d\\n\\n' $((${#i} + 1)) $i; "
                      "done | git fast-import --quiet")
                .exit_code,
            0);
  auto traced = run_shell(copy, "env -i PATH=/usr/bin:/bin HOME='" + home() +
                                    "' GIT_TRACE_CURL=1 GIT_TRACE_CURL_NO_DATA=1 git fetch " +
                                    url() + " main");
  EXPECT_EQ(traced.exit_code, 0) << traced.output;
  EXPECT_NE(traced.output.find("Content-Encoding: gzip"), std::string::npos)
      << "the test needs git to gzip its request";

  // The repository page and HEAD of info/refs.
  auto page = http_get(graspd_->port(), path());
  EXPECT_EQ(page.status, 200);
  EXPECT_NE(page.body.find("nostr://" + npub()), std::string::npos) << page.body;
  auto nip11 = http_get(graspd_->port(), path(), {{"Accept", "application/nostr+json"}});
  EXPECT_EQ(nip11.header("Content-Type"), "application/nostr+json");
  EXPECT_NE(nip11.body.find("\"supported_grasps\""), std::string::npos) << nip11.body;
  auto head = http_request(graspd_->port(), "HEAD", path() + "/info/refs?service=git-upload-pack");
  EXPECT_EQ(head.status, 200);
  EXPECT_EQ(head.header("Content-Type"), "application/x-git-upload-pack-advertisement");
  EXPECT_EQ(head.header("Access-Control-Allow-Origin"), "*");
}

TEST_F(GitE2E, MaintainersStateAuthorisesAndRefsNostrNeedsNoState) {
  start();
  const std::uint8_t maintainer = 8;
  auto maintainer_hex = nostr::to_hex(*nostr::pubkey_from_secret(secret_key(maintainer)));
  announce("repo", owner_key, {{"maintainers", maintainer_hex}});
  auto id = commit("by the maintainer");
  publish_state({{"refs/heads/main", id}}, 1700000100, "repo", maintainer);
  auto pushed = git("push " + url() + " main", work() + "/local");
  EXPECT_EQ(pushed.exit_code, 0) << pushed.output;

  // A stranger who announces the same identifier (and so may publish states for it) authorises
  // nothing in the owner's repository, even with a newer state.
  const std::uint8_t stranger = 9;
  announce("repo", stranger);
  auto foreign = commit("by a stranger", "foreign");
  publish_state({{"refs/heads/main", foreign}}, 1700000500, "repo", stranger);
  auto hijack = git("push --force " + url() + " HEAD:main", work() + "/foreign");
  EXPECT_EQ(hijack.exit_code, 1) << hijack.output;
  EXPECT_NE(hijack.output.find("[remote rejected]"), std::string::npos) << hijack.output;
  EXPECT_NE(remote_refs().find(id + "\trefs/heads/main"), std::string::npos);

  // refs/nostr/<event-id>: anyone, no state needed; another name under refs/nostr is refused.
  auto pr = commit("a pull request", "pr");
  std::string event_id(64, 'a');
  auto nostr_ref = git("push " + url() + " HEAD:refs/nostr/" + event_id, work() + "/pr");
  EXPECT_EQ(nostr_ref.exit_code, 0) << nostr_ref.output;
  auto bad = git("push " + url() + " HEAD:refs/nostr/short", work() + "/pr");
  EXPECT_EQ(bad.exit_code, 1) << bad.output;
  EXPECT_NE(bad.output.find("[remote rejected]"), std::string::npos) << bad.output;
}

TEST_F(GitE2E, LargePushStreamsAndPartialCloneWorks) {
  start();
  announce();
  auto dir = work() + "/local";
  ASSERT_EQ(git("init -q -b main local").exit_code, 0);
  {
    // 12 MiB that does not compress: the push is chunked after git's 0000 probe.
    std::ofstream blob(dir + "/blob.bin", std::ios::binary);
    std::mt19937_64 random(42);
    for (int i = 0; i < 12 * 1024 * 1024 / 8; ++i) {
      auto v = random();
      blob.write(reinterpret_cast<const char*>(&v), sizeof v);
    }
  }
  ASSERT_EQ(git("add blob.bin", dir).exit_code, 0);
  ASSERT_EQ(git("commit -q -m big", dir).exit_code, 0);
  auto id = trim(git("rev-parse HEAD", dir).output);
  publish_state({{"refs/heads/main", id}}, 1700000100);
  auto pushed = git("push " + url() + " main", dir);
  ASSERT_EQ(pushed.exit_code, 0) << pushed.output;

  auto partial = git("clone -q --filter=blob:none " + url() + " partial");
  ASSERT_EQ(partial.exit_code, 0) << partial.output;
  EXPECT_EQ(trim(git("rev-parse HEAD", work() + "/partial").output), id);
  EXPECT_EQ(fs::file_size(work() + "/partial/blob.bin"), 12u * 1024 * 1024);

  // The v0 advertisement offers fetching by id and filters (§3.7).
  auto advertised = git("-c protocol.version=0 ls-remote " + url());
  EXPECT_EQ(advertised.exit_code, 0);
  auto trace =
      run_shell(work(), "env -i PATH=/usr/bin:/bin HOME='" + home() +
                            "' GIT_TRACE_PACKET=1 git -c protocol.version=0 ls-remote " + url());
  EXPECT_NE(trace.output.find("allow-tip-sha1-in-want allow-reachable-sha1-in-want"),
            std::string::npos)
      << trace.output;
  EXPECT_NE(trace.output.find(" filter"), std::string::npos) << trace.output;
}

TEST_F(GitE2E, StatesAreAppliedFromObjectsHereOrFetchedFromAnotherCloneUrl) {
  auto pair = start_pair();
  ASSERT_TRUE(pair.b.client);
  auto& b = *pair.b.process;
  auto& b_client = pair.b.client;
  const auto& b_url = pair.b_url;
  const auto& announcement = pair.announcement;

  auto first = commit("one");
  auto state = make_event(
      30618, "", {{"d", "repo"}, {"refs/heads/main", first}, {"HEAD", "ref: refs/heads/main"}},
      1700000100, owner_key);
  ASSERT_TRUE(client_->publish(state)->accepted);
  auto pushed = git("push " + url() + " main", work() + "/local");
  ASSERT_EQ(pushed.exit_code, 0) << pushed.output;

  // B holds the announcement and the state (no git data there) and serves neither yet.
  EXPECT_TRUE(served(b.port(), 30617).empty());

  // B gets the state but not the push: it fetches the commit from A's clone URL and sets main.
  ASSERT_TRUE(b_client->publish(state)->accepted);
  EXPECT_TRUE(wait_until(
      [&] {
        return git("ls-remote " + b_url).output.find(first + "\trefs/heads/main") !=
               std::string::npos;
      },
      20s))
      << b.stderr_text();
  auto cloned = git("clone -q " + b_url + " from-b");
  EXPECT_EQ(cloned.exit_code, 0) << cloned.output;
  EXPECT_EQ(trim(git("rev-parse HEAD", work() + "/from-b").output), first);
  // Complete through git data sync: B now serves the repository's events.
  EXPECT_TRUE(wait_until(
      [&] {
        return served(b.port(), 30617) == std::vector<nostr::EventId>{announcement.id} &&
               served(b.port(), 30618) == std::vector<nostr::EventId>{state.id};
      },
      10s));

  // On A: a newer state naming a commit that is already here (a rewind) applies on arrival.
  auto second = commit("two");
  publish_state({{"refs/heads/main", second}}, 1700000200);
  ASSERT_EQ(git("push " + url() + " main", work() + "/local").exit_code, 0);
  publish_state({{"refs/heads/main", first}}, 1700000300);
  EXPECT_TRUE(wait_until(
      [&] { return remote_refs().find(first + "\trefs/heads/main") != std::string::npos; }, 20s))
      << remote_refs();
  auto b_metrics = http_get(b.port(), "/metrics").body;
  EXPECT_NE(b_metrics.find("graspd_git_states_total{result=\"fetched\"} 1"), std::string::npos)
      << b_metrics;
  EXPECT_NE(b_metrics.find("graspd_git_states_total{result=\"applied\"} 1"), std::string::npos)
      << b_metrics;
  b_client.reset();
  EXPECT_EQ(b.stop(), 0) << b.stderr_text();
}

/// A loopback TCP port that accepts connections into its backlog and never answers: a git peer that
/// stalls. Closed with the object.
/// A loopback port held for the test's life: listening, it accepts and never answers (a stalling
/// host); not listening, every connection is refused (a bound port that does not listen answers a
/// SYN with a reset), and no other process can take the port meanwhile, as one could take a port
/// that was bound and closed again.
struct StallingPeer {
  explicit StallingPeer(bool listens = true) {
    fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t size = sizeof address;
    if (::bind(fd, reinterpret_cast<sockaddr*>(&address), size) != 0 ||
        (listens && ::listen(fd, 16) != 0) ||
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &size) != 0)
      return;
    port = ntohs(address.sin_port);
  }
  ~StallingPeer() { ::close(fd); }
  int fd = -1;
  std::uint16_t port = 0;
};

TEST_F(GitE2E, AStallingOrRefusingHostDoesNotHoldUpAFetchFromAGoodOne) {
  const std::vector<std::pair<std::string, std::string>> env{
      {"NGIT_GIT_FETCH_DELAY_SECS", "0"}, {"NGIT_SYNC_ALLOW_PRIVATE_ADDRESSES", "true"}};
  start(env);
  auto node_b = start_node_b(env);
  ASSERT_TRUE(node_b.client);
  auto& b = *node_b.process;
  auto& b_client = node_b.client;
  const std::string b_host = node_b.host;
  auto b_url = [&](const std::string& d) { return "http://" + b_host + path(d); };
  auto publish_to_b = [&](const nostr::Event& event) {
    auto ok = b_client->publish(event);
    ASSERT_TRUE(ok && ok->accepted) << (ok ? ok->message : "no answer");
  };
  auto state_of = [](const std::string& d, const std::string& id) {
    return make_event(30618, "", {{"d", d}, {"refs/heads/main", id}}, 1700000100, owner_key);
  };
  StallingPeer stalling;
  StallingPeer refusing{false};
  ASSERT_NE(stalling.port, 0);
  ASSERT_NE(refusing.port, 0);
  const std::string stalling_url = "http://127.0.0.1:" + std::to_string(stalling.port) + path("s");
  const std::string refusing_url = "http://127.0.0.1:" + std::to_string(refusing.port) + path("r");
  const std::string nowhere(40, 'e');  // a commit no host has

  // On B: one repository whose only other clone URL refuses connections, one whose stalls.
  for (auto [d, source] : {std::pair{"refused", refusing_url}, {"stalled", stalling_url}}) {
    publish_to_b(make_event(30617, "",
                            {{"d", d}, {"clone", source, b_url(d)}, {"relays", "ws://" + b_host}},
                            1700000000, owner_key));
    publish_to_b(state_of(d, nowhere));
  }
  auto b_metric = [&](const std::string& sample) {
    return metric_value(http_get(b.port(), "/metrics").body, sample);
  };
  EXPECT_TRUE(wait_until([&] { return b_metric("graspd_git_fetches_running") == 1; }, 10s))
      << "the fetch from the stalling host is running";

  // A repository with its data on A: B fetches it from A while the stalled fetch still runs.
  auto announcement = make_event(30617, "",
                                 {{"d", "good"},
                                  {"clone", url("good"), b_url("good")},
                                  {"relays", "ws://" + host(), "ws://" + b_host}},
                                 1700000000, owner_key);
  ASSERT_TRUE(client_->publish(announcement)->accepted);
  publish_to_b(announcement);
  auto id = commit("good");
  auto state = state_of("good", id);
  ASSERT_TRUE(client_->publish(state)->accepted);
  auto pushed = git("push " + url("good") + " main", work() + "/local");
  ASSERT_EQ(pushed.exit_code, 0) << pushed.output;
  publish_to_b(state);
  EXPECT_TRUE(wait_until(
      [&] {
        return git("ls-remote " + b_url("good")).output.find(id + "\trefs/heads/main") !=
               std::string::npos;
      },
      20s))
      << b.stderr_text();

  // The refusing host is skipped, its request waits in backoff; the stalled fetch still runs. Its
  // attempt is independent of the good fetch and may come after it: waited for, not assumed (30 s:
  // longer than one 20 s backoff; it failed once in a clean-clone run with none counted in 10 s,
  // and B's log, which says how each attempt ended, is printed if it does again).
  EXPECT_TRUE(wait_until(
      [&] {
        return b_metric("graspd_git_fetches_total{outcome=\"unreachable\"}") == 1 &&
               b_metric("graspd_git_fetch_hosts_skipped") == 1;
      },
      30s))
      << b.stderr_text();
  auto metrics = http_get(b.port(), "/metrics").body;
  EXPECT_EQ(metric_value(metrics, "graspd_git_fetches_total{outcome=\"complete\"}"), 1) << metrics;
  EXPECT_EQ(metric_value(metrics, "graspd_git_fetches_total{outcome=\"unreachable\"}"), 1);
  EXPECT_GE(metric_value(metrics, "graspd_git_fetches_total{outcome=\"backoff\"}"), 1);
  EXPECT_EQ(metric_value(metrics, "graspd_git_fetch_hosts_skipped"), 1);
  EXPECT_EQ(metric_value(metrics, "graspd_git_fetches_running"), 1);
  EXPECT_EQ(metric_value(metrics, "graspd_git_fetch_requests"), 2);
  EXPECT_EQ(metric_value(metrics, "graspd_git_states_total{result=\"fetched\"}"), 1);
}

// Issue 29 item 7: strangers announcing the victim's identifier with tarpit clone URLs (a host that
// accepts and never answers) do not hold up the fetch of the victim's repository: its owner's own
// clone URLs are tried first, and each stranger adds at most NGIT_GIT_FETCH_URLS_PER_OTHER_OWNER.
TEST_F(GitE2E, StrangersTarpitCloneUrlsUnderAnIdentifierDoNotCrowdOutTheOwnersOwn) {
  auto node_a = start_node_b({{"NGIT_SYNC_ENABLED", "false"}});
  ASSERT_TRUE(node_a.client);
  auto& a = *node_a.process;
  start({{"NGIT_SYNC_ALLOW_PRIVATE_ADDRESSES", "true"}, {"NGIT_GIT_FETCH_PUSH_WINDOW_SECS", "0"}});
  StallingPeer tarpit;
  ASSERT_NE(tarpit.port, 0);
  // 20 keys from another address, newer than the owner's announcement, 3 tarpit URLs each (before
  // this service's own, which makes the announcement acceptable here).
  auto attacker = TestClient::connect(graspd_->port(), false, "127.0.0.2");
  ASSERT_TRUE(attacker);
  for (std::uint8_t key = 100; key < 120; ++key) {
    nostr::Tags tags{{"d", "repo"}, {"relays", "ws://" + host()}};
    nostr::Tag clone{"clone"};
    for (int i = 0; i < 3; ++i)
      clone.push_back("http://127.0.0.1:" + std::to_string(tarpit.port) + "/t" +
                      std::to_string(key) + "-" + std::to_string(i) + ".git");
    clone.push_back("http://" + host() + path("repo", key));  // this service: accepted here
    tags.push_back(clone);
    auto ok = attacker->publish(make_event(30617, "", tags, 1700000050, key));
    ASSERT_TRUE(ok && ok->accepted) << (ok ? ok->message : "no answer");
  }
  const std::string a_url = "http://" + node_a.host + path();
  auto announcement = make_event(
      30617, "",
      {{"d", "repo"}, {"clone", a_url, url()}, {"relays", "ws://" + node_a.host, "ws://" + host()}},
      1700000000, owner_key);
  auto first = commit("one");
  auto state = make_event(
      30618, "", {{"d", "repo"}, {"refs/heads/main", first}, {"HEAD", "ref: refs/heads/main"}},
      1700000100, owner_key);
  ASSERT_TRUE(node_a.client->publish(announcement)->accepted);
  ASSERT_TRUE(node_a.client->publish(state)->accepted);
  auto pushed = git("push " + a_url + " main", work() + "/local");
  ASSERT_EQ(pushed.exit_code, 0) << pushed.output;
  ASSERT_TRUE(client_->publish(announcement)->accepted);
  auto sent_at = std::chrono::steady_clock::now();
  ASSERT_TRUE(client_->publish(state)->accepted);
  EXPECT_TRUE(wait_until(
      [&] { return remote_refs().find(first + "\trefs/heads/main") != std::string::npos; }, 10s))
      << remote_refs() << graspd_->stderr_text();
  std::cout << "the victim's repository complete "
            << std::chrono::duration_cast<std::chrono::milliseconds>(
                   std::chrono::steady_clock::now() - sent_at)
                   .count()
            << " ms after its state, beside 60 tarpit clone URLs\n";
  auto metrics = http_get(graspd_->port(), "/metrics").body;
  EXPECT_EQ(metric_value(metrics, "graspd_git_fetches_total{outcome=\"complete\"}"), 1) << metrics;
  EXPECT_EQ(metric_value(metrics, "graspd_git_fetches_total{outcome=\"failed\"}"), 0)
      << "no tarpit was tried before the owner's own clone URL";
  node_a.client.reset();
  EXPECT_EQ(a.stop(), 0) << a.stderr_text();
}

// docs/spec/git-hosting.md §1.4: an announcement that reaches A by sync is held there (no git data
// yet); GRASP-02 then syncs that repository StateOnly from the relay the announcement names, the
// state it brings is fetched from the other clone URL, and the repository is promoted and served.
TEST_F(GitE2E, AHeldAnnouncementFromSyncGetsItsStateByStateOnlySyncAndIsPromoted) {
  auto node_b = start_node_b({{"NGIT_SYNC_ENABLED", "false"}});
  ASSERT_TRUE(node_b.client);
  auto& b = *node_b.process;
  start({{"NGIT_SYNC_ENABLED", "true"},
         {"NGIT_SYNC_BOOTSTRAP_RELAY_URL", b.relay_url()},
         {"NGIT_SYNC_ALLOW_PRIVATE_ADDRESSES", "true"},
         {"NGIT_SYNC_BATCH_WINDOW_MS", "100"},
         {"NGIT_GIT_FETCH_DELAY_SECS", "0"}});
  auto& b_client = node_b.client;
  const std::string b_host = node_b.host;
  const std::string b_url = "http://" + b_host + path();

  // The repository is pushed to B only; its announcement lists both servers and both relays.
  auto announcement = make_event(
      30617, "",
      {{"d", "repo"}, {"clone", url(), b_url}, {"relays", "ws://" + host(), "ws://" + b_host}},
      1700000000, owner_key);
  auto first = commit("one");
  auto state = make_event(
      30618, "", {{"d", "repo"}, {"refs/heads/main", first}, {"HEAD", "ref: refs/heads/main"}},
      1700000100, owner_key);
  ASSERT_TRUE(b_client->publish(announcement)->accepted);
  ASSERT_TRUE(b_client->publish(state)->accepted);
  auto pushed = git("push " + b_url + " main", work() + "/local");
  ASSERT_EQ(pushed.exit_code, 0) << pushed.output;

  // A gets the announcement from B's layer 1 and holds it; the state only reaches A through the
  // StateOnly subscription on B (layer 1 asks for announcements alone).
  EXPECT_TRUE(wait_until(
      [&] {
        return served(30617) == std::vector<nostr::EventId>{announcement.id} &&
               served(30618) == std::vector<nostr::EventId>{state.id};
      },
      30s))
      << graspd_->stderr_text();
  EXPECT_NE(remote_refs().find(first + "\trefs/heads/main"), std::string::npos) << remote_refs();
  // Promoted: synced in full from now on.
  auto levels = [&](const char* level) -> std::int64_t {
    rapidjson::Document doc;
    const auto body = http_get(graspd_->port(), "/api/sync").body;
    doc.Parse(body.c_str(), body.size());
    if (!doc.IsObject() || !doc.HasMember("repository_levels")) return -1;
    const auto& counts = doc["repository_levels"];
    if (!counts.IsObject() || !counts.HasMember(level) || !counts[level].IsUint64()) return -1;
    return static_cast<std::int64_t>(counts[level].GetUint64());
  };
  EXPECT_TRUE(wait_until([&] { return levels("full") == 1 && levels("state_only") == 0; }, 10s))
      << http_get(graspd_->port(), "/api/sync").body;
  b_client.reset();
  EXPECT_EQ(b.stop(), 0) << b.stderr_text();
}

// Issue 29 item 13: a repository announced on two servers and pushed to one is complete on the
// other within seconds, not after NGIT_GIT_FETCH_DELAY_SECS (60 s by default, kept here). The
// client sends the announcement and the state to both (as ngit does) and pushes to A; B holds the
// state waiting for a push that goes to A, until A's copy of the state, released by the push,
// reaches B by sync: B's fetch from A's clone URL starts then.
TEST_F(GitE2E, ARepositoryPushedToOneServerIsCompleteOnTheOtherWithinSecondsByTheSync) {
  auto node_a = start_node_b({{"NGIT_SYNC_ENABLED", "false"}});
  ASSERT_TRUE(node_a.client);
  auto& a = *node_a.process;
  start({{"NGIT_SYNC_ENABLED", "true"},
         {"NGIT_SYNC_BOOTSTRAP_RELAY_URL", a.relay_url()},
         {"NGIT_SYNC_ALLOW_PRIVATE_ADDRESSES", "true"},
         {"NGIT_SYNC_BATCH_WINDOW_MS", "100"},
         {"NGIT_GIT_FETCH_PUSH_WINDOW_SECS", "60"}});  // no help from the push window here
  const std::string a_url = "http://" + node_a.host + path();
  auto announcement = make_event(
      30617, "",
      {{"d", "repo"}, {"clone", a_url, url()}, {"relays", "ws://" + node_a.host, "ws://" + host()}},
      1700000000, owner_key);
  auto first = commit("one");
  auto state = make_event(
      30618, "", {{"d", "repo"}, {"refs/heads/main", first}, {"HEAD", "ref: refs/heads/main"}},
      1700000100, owner_key);
  for (auto* client : {node_a.client.get(), client_.get()})
    for (const auto* event : {&announcement, &state}) {
      auto ok = client->publish(*event);
      ASSERT_TRUE(ok && ok->accepted) << (ok ? ok->message : "no answer");
    }
  auto pushed = git("push " + a_url + " main", work() + "/local");
  ASSERT_EQ(pushed.exit_code, 0) << pushed.output;
  auto pushed_at = std::chrono::steady_clock::now();
  EXPECT_TRUE(wait_until(
      [&] { return remote_refs().find(first + "\trefs/heads/main") != std::string::npos; }, 10s))
      << remote_refs() << graspd_->stderr_text();
  auto took = std::chrono::steady_clock::now() - pushed_at;
  std::cout << "complete on the second server "
            << std::chrono::duration_cast<std::chrono::milliseconds>(took).count()
            << " ms after the push\n";
  auto cloned = git("clone -q " + url() + " from-second");
  EXPECT_EQ(cloned.exit_code, 0) << cloned.output;
  EXPECT_TRUE(wait_until([&] { return served(30618) == std::vector<nostr::EventId>{state.id}; }));
  node_a.client.reset();
  EXPECT_EQ(a.stop(), 0) << a.stderr_text();
}

// The periodic re-check (NGIT_GIT_RECHECK_INTERVAL_SECS): a repository that lost its objects behind
// graspd's back gets them again from its other clone URL, without a new state or push.
TEST_F(GitE2E, ThePeriodicRecheckFetchesWhatARepositoryLost) {
  auto pair = start_pair_with({{"NGIT_GIT_RECHECK_INTERVAL_SECS", "1"}});
  ASSERT_TRUE(pair.b.client);
  auto main_id = push_to_both(pair);
  ASSERT_FALSE(HasFatalFailure());
  const auto repository = (dir_.path() / "git" / npub() / "repo.git").string();
  delete_git_objects(repository);
  auto has_commit = [&] {
    return run_shell(work(), "git --git-dir='" + repository + "' cat-file -e " + main_id)
               .exit_code == 0;
  };
  ASSERT_FALSE(has_commit());
  EXPECT_TRUE(wait_until(has_commit, 30s)) << graspd_->stderr_text();
  EXPECT_EQ(git("clone -q " + url() + " again").exit_code, 0);
  pair.b.client.reset();
  EXPECT_EQ(pair.b.process->stop(), 0) << pair.b.process->stderr_text();
}

TEST_F(GitE2E, PurgatoryHoldsAnnouncementAndStateUntilThePushThenServesThem) {
  start();
  auto announcement =
      make_event(30617, "", {{"d", "repo"}, {"clone", url()}, {"relays", "ws://" + host()}},
                 1700000000, owner_key);
  auto held = client_->publish(announcement);
  ASSERT_TRUE(held);
  EXPECT_TRUE(held->accepted);
  EXPECT_EQ(held->message, "purgatory: won't be served until git data arrives");
  EXPECT_EQ(client_->publish(announcement)->message, "duplicate: in purgatory");
  EXPECT_TRUE(served(30617).empty());
  EXPECT_EQ(git("ls-remote " + url()).exit_code, 0) << "held repositories are served to git";

  // A state whose commit is not here is held too.
  auto id = commit("one");
  auto state = make_event(
      30618, "", {{"d", "repo"}, {"refs/heads/main", id}, {"HEAD", "ref: refs/heads/main"}},
      1700000100, owner_key);
  auto state_ok = client_->publish(state);
  ASSERT_TRUE(state_ok);
  EXPECT_TRUE(state_ok->accepted);
  EXPECT_EQ(state_ok->message.rfind("purgatory:", 0), 0u) << state_ok->message;
  EXPECT_TRUE(served(30618).empty());

  // Held events survive a restart.
  client_.reset();
  ASSERT_EQ(graspd_->stop(), 0);
  ASSERT_TRUE(graspd_->start()) << graspd_->stderr_text();
  client_ = TestClient::connect(graspd_->port());
  ASSERT_TRUE(client_);
  EXPECT_EQ(client_->publish(announcement)->message, "duplicate: in purgatory");
  EXPECT_TRUE(served(30617).empty());
  auto metrics = http_get(graspd_->port(), "/metrics").body;
  EXPECT_NE(metrics.find("graspd_purgatory_events{kind=\"state\"} 1"), std::string::npos)
      << metrics;

  // The push (authorised by the held state) releases both: stored, then served.
  auto pushed = git("push " + url() + " main", work() + "/local");
  ASSERT_EQ(pushed.exit_code, 0) << pushed.output;
  EXPECT_TRUE(wait_until(
      [&] {
        return served(30617) == std::vector<nostr::EventId>{announcement.id} &&
               served(30618) == std::vector<nostr::EventId>{state.id};
      },
      10s));
  EXPECT_EQ(client_->publish(announcement)->message, "duplicate: already have this event");
  metrics = http_get(graspd_->port(), "/metrics").body;
  EXPECT_NE(metrics.find("graspd_purgatory_total{outcome=\"released\"} 2"), std::string::npos)
      << metrics;

  // A newer state whose objects are already here is released without a push.
  auto rewind = make_event(
      30618, "", {{"d", "repo"}, {"refs/heads/main", id}, {"HEAD", "ref: refs/heads/main"}},
      1700000200, owner_key);
  EXPECT_TRUE(client_->publish(rewind)->accepted);
  EXPECT_TRUE(
      wait_until([&] { return served(30618) == std::vector<nostr::EventId>{rewind.id}; }, 10s));
}

TEST_F(GitE2E, PurgatoryOffStoresAnnouncementsAtOnce) {
  start({{"NGIT_PURGATORY_ENABLED", "false"}});
  auto announcement =
      make_event(30617, "", {{"d", "repo"}, {"clone", url()}, {"relays", "ws://" + host()}},
                 1700000000, owner_key);
  auto ok = client_->publish(announcement);
  ASSERT_TRUE(ok);
  EXPECT_TRUE(ok->accepted);
  EXPECT_EQ(ok->message, "");
  EXPECT_EQ(served(30617), std::vector<nostr::EventId>{announcement.id});
  EXPECT_EQ(git("ls-remote " + url()).exit_code, 0);
}

TEST_F(GitE2E, APushReachesTheMaintainersRepositoryHereToo) {
  start();
  const std::uint8_t maintainer = 8;
  auto owner_hex = nostr::to_hex(*nostr::pubkey_from_secret(secret_key(owner_key)));
  auto maintainer_hex = nostr::to_hex(*nostr::pubkey_from_secret(secret_key(maintainer)));
  announce("repo", owner_key, {{"maintainers", maintainer_hex}});
  announce("repo", maintainer, {{"maintainers", owner_hex}});
  const std::string maintainer_url = "http://" + host() + path("repo", maintainer);
  EXPECT_EQ(git("ls-remote " + maintainer_url).exit_code, 0) << "both repositories exist";

  auto id = commit("one");
  publish_state({{"refs/heads/main", id}}, 1700000100);
  ASSERT_EQ(git("push " + url() + " main", work() + "/local").exit_code, 0);
  // Pushes right after one another are not turned away while the state is applied after the first.
  publish_state({{"refs/heads/main", id}, {"refs/tags/v1", id}}, 1700000200);
  ASSERT_EQ(git("tag v1", work() + "/local").exit_code, 0);
  auto tag = git("push " + url() + " v1", work() + "/local");
  EXPECT_EQ(tag.exit_code, 0) << tag.output;
  // §5.9: the objects are copied into the maintainer's repository here and its refs follow the
  // state, without a push there.
  EXPECT_TRUE(wait_until(
      [&] {
        return git("ls-remote " + maintainer_url).output.find(id + "\trefs/heads/main") !=
               std::string::npos;
      },
      20s))
      << graspd_->stderr_text();
}

TEST_F(GitE2E, HostileRequests) {
  // The relay keeps answering REQs for the announcement meanwhile: served at once, no push.
  start({{"NGIT_GIT_MAX_BODY_BYTES", "1048576"},
         {"NGIT_GIT_IDLE_TIMEOUT_SECS", "2"},
         {"NGIT_PURGATORY_ENABLED", "false"}});
  announce();
  const auto port = graspd_->port();
  // Unknown repositories and traversal forms: 4xx, never file content.
  for (const auto& target :
       {path("nothere") + "/info/refs?service=git-upload-pack",
        "/" + npub() + "/..%2F..%2Frelay.git/info/refs?service=git-upload-pack",
        "/" + npub() + "/%2e%2e.git/info/refs?service=git-upload-pack",
        "/" + npub() + "/../repo.git/info/refs?service=git-upload-pack",
        std::string("/npub1notakey/repo.git/info/refs?service=git-upload-pack"),
        path() + "/info/refs", path() + "/HEAD", path() + "/objects/info/packs", path() + "/config",
        path() + "/info/refs?service=git-upload-archive", "/" + npub() + "/%zz.git"}) {
    auto reply = http_get(port, target);
    EXPECT_GE(reply.status, 400) << target;
    EXPECT_LT(reply.status, 500) << target;
    EXPECT_EQ(reply.body.find("[core]"), std::string::npos) << target;
    EXPECT_EQ(reply.body.find("ref: refs/"), std::string::npos) << target;
    EXPECT_EQ(reply.header("Access-Control-Allow-Origin"), "*") << target;
  }
  // A wrong content type.
  auto wrong = http_request(port, "POST", path() + "/git-upload-pack",
                            {{"Content-Type", "text/plain"}, {"Content-Length", "0"}});
  EXPECT_EQ(wrong.status, 415);

  auto curl = [&](const std::string& args) {
    return trim(run_shell(work(), "curl -s -o /dev/null -w '%{http_code}' --max-time 20 " + args +
                                      " 'http://" + host() + path() + "/git-upload-pack'")
                    .output);
  };
  // A body over the limit, sent as it is and chunked.
  run_shell(work(),
            "head -c 3000000 /dev/zero > big.bin && gzip -c big.bin > big.gz && "
            "head -c 50000000 /dev/zero | gzip -c > bomb.gz");
  const std::string type = "-H 'Content-Type: application/x-git-upload-pack-request' ";
  EXPECT_EQ(curl(type + "--data-binary @big.bin"), "413");
  EXPECT_EQ(curl(type + "-H 'Transfer-Encoding: chunked' --data-binary @big.bin"), "413");
  // A gzip bomb: small on the wire, over the limit decoded.
  EXPECT_EQ(curl(type + "-H 'Content-Encoding: gzip' --data-binary @bomb.gz"), "413");
  // Undecodable gzip.
  EXPECT_EQ(curl(type + "-H 'Content-Encoding: gzip' --data-binary 'not gzip at all'"), "400");

  // A slow client: headers promise a body that never comes; the connection is closed after the
  // idle timeout, and the process slot comes back.
  int fd = slow_post(port, path());
  ASSERT_GE(fd, 0);
  EXPECT_TRUE(closed_within(fd, 10s)) << "slow client not disconnected";

  // Many concurrent advertisements while a WebSocket client keeps being answered.
  std::atomic<int> ok{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 10; ++i) {
        auto r = git("ls-remote " + url());
        if (r.exit_code == 0) ++ok;
      }
    });
  }
  int answered = 0;
  for (int i = 0; i < 20; ++i) {
    auto events = client_->query("q" + std::to_string(i), R"({"kinds":[30617]})");
    if (events && events->size() == 1) ++answered;
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(answered, 20);
  EXPECT_GE(ok.load(), 30) << "a few may get 503 under the process cap";
  auto metrics = http_get(port, "/metrics");
  EXPECT_NE(metrics.body.find("graspd_git_refused_total{reason=\"too_large\"} 3"),
            std::string::npos)
      << metrics.body;
  EXPECT_NE(metrics.body.find("graspd_git_processes 0"), std::string::npos) << metrics.body;
}

TEST_F(GitE2E, ARequestBeyondTheProcessCapWaitsInLineInsteadOf503) {
  start({{"NGIT_GIT_MAX_PROCESSES", "1"},
         {"NGIT_GIT_TIMEOUT_SECS", "2"},
         {"NGIT_GIT_IDLE_TIMEOUT_SECS", "60"},
         {"NGIT_GIT_QUEUE_SECS", "30"}});
  announce();
  // A push whose pack never comes holds the only git process until the wall-clock limit...
  int fd = held_push(graspd_->port(), path());
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(wait_until(
      [&] {
        return http_get(graspd_->port(), "/metrics").body.find("graspd_git_processes 1") !=
               std::string::npos;
      },
      5s));
  // ...and a clone's first request waits for it, then succeeds: git itself never retries a 503.
  auto listed = git("ls-remote " + url());
  EXPECT_EQ(listed.exit_code, 0) << listed.output;
  EXPECT_TRUE(closed_within(fd, 10s));
  auto metrics = http_get(graspd_->port(), "/metrics").body;
  EXPECT_NE(metrics.find("graspd_git_refused_total{reason=\"busy\"} 0"), std::string::npos)
      << metrics;
}

TEST_F(GitE2E, ProcessCapAndWallClockLimit) {
  start({{"NGIT_GIT_MAX_PROCESSES", "1"},
         {"NGIT_GIT_TIMEOUT_SECS", "1"},
         {"NGIT_GIT_IDLE_TIMEOUT_SECS", "60"},
         {"NGIT_GIT_QUEUE_SECS", "0"}});
  announce();
  // A push whose pack never comes holds the only git process...
  int fd = held_push(graspd_->port(), path());
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(wait_until(
      [&] {
        return http_get(graspd_->port(), "/metrics").body.find("graspd_git_processes 1") !=
               std::string::npos;
      },
      5s));
  // ...so, with no line, another request is turned away with 503 and Retry-After, not hung.
  auto busy = http_get(graspd_->port(), path() + "/info/refs?service=git-upload-pack");
  EXPECT_EQ(busy.status, 503);
  EXPECT_EQ(busy.header("Retry-After"), "5");
  // The wall-clock limit (1 s, far below the idle timeout) kills it and closes the connection.
  EXPECT_TRUE(closed_within(fd, 10s));
  auto metrics = http_get(graspd_->port(), "/metrics").body;
  EXPECT_NE(metrics.find("graspd_git_refused_total{reason=\"timeout\"} 1"), std::string::npos)
      << metrics;
  EXPECT_NE(metrics.find("graspd_git_refused_total{reason=\"busy\"} 1"), std::string::npos)
      << metrics;
  // The slot is free again.
  EXPECT_TRUE(wait_until([&] { return git("ls-remote " + url()).exit_code == 0; }, 5s));
}

// ---------------------------------------------------------------- bounds per client (issue 29)

/// The value of one Prometheus sample line (`name{labels}`), -1 when absent.
double metric(std::uint16_t port, const std::string& sample) {
  auto body = http_get(port, "/metrics").body;
  auto at = body.find("\n" + sample + " ");
  if (at == std::string::npos) return -1;
  return std::stod(body.substr(at + sample.size() + 2));
}

TEST_F(GitE2E, SlowUploadsFromOneAddressHoldNoProcessAndMeetItsConnectionCap) {
  start({{"NGIT_GIT_MAX_PROCESSES", "2"},
         {"NGIT_GIT_QUEUE_SECS", "5"},
         {"NGIT_GIT_MAX_CONNECTIONS_PER_IP", "8"}});
  announce();
  auto id = commit("one");
  publish_state({{"refs/heads/main", id}}, 1700000100);
  ASSERT_EQ(git("push " + url() + " main", work() + "/local").exit_code, 0);
  // The attacker fills its connection share with uploads that send two bytes and stop.
  std::vector<int> held;
  for (int i = 0; i < 8; ++i) {
    held.push_back(slow_post(graspd_->port(), path(), "127.0.0.2"));
    ASSERT_GE(held.back(), 0);
  }
  // A ninth from that address is turned away at once; no git process serves any of them. The
  // server counts a connection once its request head is read, in whatever order the nine heads
  // are parsed, so the one refused may be any of them.
  held.push_back(slow_post(graspd_->port(), path(), "127.0.0.2"));
  ASSERT_GE(held.back(), 0);
  EXPECT_TRUE(one_closed_within(held, 10s)) << "the connection over the per-address cap stays open";
  EXPECT_TRUE(wait_until(
      [&] {
        return metric(graspd_->port(), "graspd_git_refused_total{reason=\"connections\"}") == 1;
      },
      5s));
  EXPECT_EQ(metric(graspd_->port(), "graspd_git_processes"), 0);
  // The victim's clone is served while all of them are held (before: 503 after the queue wait).
  auto cloned = git("clone -q " + url() + " copy");
  EXPECT_EQ(cloned.exit_code, 0) << cloned.output;
  EXPECT_EQ(metric(graspd_->port(), "graspd_git_refused_total{reason=\"busy\"}"), 0);
  for (int fd : held) ::close(fd);
}

TEST_F(GitE2E, OneAddressHoldsAtMostItsShareOfGitProcesses) {
  start({{"NGIT_GIT_MAX_PROCESSES", "2"},
         {"NGIT_GIT_MAX_PROCESSES_PER_IP", "1"},
         {"NGIT_GIT_QUEUE_SECS", "30"}});
  announce();
  // Two pushes whose packs never end, from one address: one runs, the other waits in line.
  int first = held_push(graspd_->port(), path(), "127.0.0.2");
  int second = held_push(graspd_->port(), path(), "127.0.0.2");
  ASSERT_GE(first, 0);
  ASSERT_GE(second, 0);
  ASSERT_TRUE(wait_until([&] { return metric(graspd_->port(), "graspd_git_processes") == 1; }, 5s));
  // The victim gets the free process at once (before: both were the attacker's).
  auto listed = git("ls-remote " + url());
  EXPECT_EQ(listed.exit_code, 0) << listed.output;
  EXPECT_EQ(metric(graspd_->port(), "graspd_git_refused_total{reason=\"busy\"}"), 0);
  ::close(first);
  ::close(second);
}

TEST_F(GitE2E, AStrangersUnfinishedPushDoesNotHoldUpTheMaintainers) {
  start();
  announce();
  auto id = commit("one");
  // A stranger's push that sent 4 bytes, and one whose refs/nostr pack never ends.
  int partial = partial_post(graspd_->port(), path(), "git-receive-pack", "0067", "127.0.0.2");
  int pending = held_push(graspd_->port(), path(), "127.0.0.2");
  ASSERT_GE(partial, 0);
  ASSERT_GE(pending, 0);
  ASSERT_TRUE(wait_until([&] { return metric(graspd_->port(), "graspd_git_processes") == 1; }, 5s));
  // The maintainer's state-matching push goes through (before: 503 after 5 s, state dropped).
  publish_state({{"refs/heads/main", id}}, 1700000100);
  auto pushed = git("push " + url() + " main", work() + "/local");
  EXPECT_EQ(pushed.exit_code, 0) << pushed.output;
  EXPECT_NE(remote_refs().find(id + "\trefs/heads/main"), std::string::npos);
  ::close(partial);
  ::close(pending);
}

TEST_F(GitE2E, ABodyTrickledBelowTheMinimumRateIsClosed) {
  start({{"NGIT_GIT_IDLE_TIMEOUT_SECS", "2"}, {"NGIT_GIT_MIN_BODY_RATE", "1024"}});
  announce();
  int fd = held_push(graspd_->port(), path(), "127.0.0.2");
  ASSERT_GE(fd, 0);
  // One byte a second keeps within the idle timeout but far below 1 KiB/s.
  std::atomic<bool> stop{false};
  std::thread trickle([&] {
    while (!stop && send_all(fd, "x")) std::this_thread::sleep_for(500ms);
  });
  EXPECT_TRUE(wait_until(
      [&] { return metric(graspd_->port(), "graspd_git_refused_total{reason=\"slow\"}") == 1; },
      30s));
  EXPECT_TRUE(wait_until([&] { return metric(graspd_->port(), "graspd_git_processes") == 0; }, 5s));
  stop = true;
  trickle.join();
  ::close(fd);
}

TEST_F(GitE2E, DeletingABranchTheStateAlreadyRemovedSucceeds) {
  start();
  announce();
  auto id = commit("one");
  ASSERT_EQ(git("branch b", work() + "/local").exit_code, 0);
  publish_state({{"refs/heads/main", id}, {"refs/heads/b", id}}, 1700000100);
  ASSERT_EQ(git("push " + url() + " main b", work() + "/local").exit_code, 0);
  // The state without b is applied on arrival (its objects are here): b is gone before the push.
  publish_state({{"refs/heads/main", id}}, 1700000200);
  ASSERT_TRUE(
      wait_until([&] { return remote_refs().find("refs/heads/b") == std::string::npos; }, 10s));
  // The client's deletion of b comes as both ids zero (libgit2 sends that when its view of the ref
  // is gone; the git CLI gives up on its own side): accepted as git's receive-pack would.
  auto line = pkt(std::string(40, '0') + " " + std::string(40, '0') + " refs/heads/b" + '\0' +
                  "report-status\n") +
              "0000";
  std::ofstream(work() + "/delete.body", std::ios::binary) << line;
  auto answer = run_shell(work(),
                          "curl -s -w ' HTTP%{http_code}' -H 'Content-Type: "
                          "application/x-git-receive-pack-request' --data-binary @delete.body " +
                              url() + "/git-receive-pack");
  EXPECT_NE(answer.output.find("ok refs/heads/b"), std::string::npos) << answer.output;
  EXPECT_NE(answer.output.find(" HTTP200"), std::string::npos) << answer.output;
}

/// The packs of a bare repository (objects/pack/*.pack).
std::size_t packs(const fs::path& repository) {
  std::size_t count = 0;
  for (const auto& entry : fs::directory_iterator(repository / "objects" / "pack"))
    if (entry.path().extension() == ".pack") ++count;
  return count;
}

// Issue 29 item 8: receive-pack ran `git gc --auto`, which detaches, so gc ran outside graspd's
// process tree, process cap and time limit. A repository whose own config keeps every push as a
// pack and asks for gc past one pack, detached, still gets no gc from a push: repacking is the
// maintenance's, under graspd's process cap (tests/runtime/git_maintenance_test.cpp).
TEST_F(GitE2E, APushStartsNoGitGcEvenWhenTheRepositorysConfigAsksForOne) {
  start({{"NGIT_PURGATORY_ENABLED", "false"}});
  announce();
  fs::path repository;
  for (const auto& entry : fs::recursive_directory_iterator(dir_.path() / "git"))
    if (entry.is_directory() && entry.path().filename() == "repo.git") repository = entry.path();
  ASSERT_FALSE(repository.empty());
  {
    std::ofstream config(repository / "config", std::ios::app);
    config << "[receive]\n\tunpackLimit = 1\n\tautogc = true\n"
              "[gc]\n\tautoPackLimit = 1\n\tautoDetach = true\n";
  }
  for (int i = 0; i < 3; ++i) {
    auto id = commit("push " + std::to_string(i));
    publish_state({{"refs/heads/main", id}}, 1700000100 + i);
    auto pushed = git("push " + url() + " main", work() + "/local");
    ASSERT_EQ(pushed.exit_code, 0) << pushed.output;
  }
  // A detached gc would have repacked the three packs into one and left gc.pid or gc.log.
  EXPECT_FALSE(wait_until(
      [&] {
        return packs(repository) < 3 || fs::exists(repository / "gc.pid") ||
               fs::exists(repository / "gc.log");
      },
      2s))
      << "git gc ran after a push";
  EXPECT_EQ(packs(repository), 3u) << "one pack per push, none repacked";
}

TEST_F(GitE2E, AnInvalidPushIsRefusedInGitsOwnReport) {
  start();
  announce();
  auto id = commit("one");
  publish_state({{"refs/heads/main", id}}, 1700000100);
  ASSERT_EQ(git("push " + url() + " main", work() + "/local").exit_code, 0);
  // A shallow clone's push sends `shallow` lines, which graspd does not take.
  ASSERT_EQ(git("clone -q --depth 1 file://" + work() + "/local shallow").exit_code, 0);
  auto next = work() + "/shallow";
  ASSERT_EQ(git("commit -q --allow-empty -m two", next).exit_code, 0);
  auto pushed = git("push " + url() + " HEAD:main", next);
  EXPECT_NE(pushed.exit_code, 0);
  EXPECT_NE(pushed.output.find("[remote rejected]"), std::string::npos) << pushed.output;
  EXPECT_NE(pushed.output.find("shallow pushes are not supported"), std::string::npos)
      << pushed.output;
  EXPECT_EQ(pushed.output.find("HTTP 400"), std::string::npos) << pushed.output;
}

// ---------------------------------------------------------------- pull requests (§6.1–6.2, §7)

TEST_F(GitE2E, PullRequestEventsWaitForTheirCommitAndRefsNostrPlaceholdersExpire) {
  // A short hold: expiry is checked every second.
  start({{"NGIT_PURGATORY_HOLD_SECS", "4"}});
  announce();
  auto main_id = commit("one");
  publish_state({{"refs/heads/main", main_id}}, 1700000100);
  ASSERT_EQ(git("push " + url() + " main", work() + "/local").exit_code, 0);
  ASSERT_TRUE(wait_until([&] { return !served(30617).empty(); }, 10s));
  const std::string address =
      "30617:" + nostr::to_hex(*nostr::pubkey_from_secret(secret_key(owner_key))) + ":repo";
  const std::uint8_t contributor = 9;
  auto pr_event = [&](const std::string& commit_id, std::int64_t created_at) {
    return make_event(1618, "", {{"a", address}, {"c", commit_id}, {"subject", "a change"}},
                      created_at, contributor);
  };
  auto ref_of = [](const nostr::Event& ev) { return "refs/nostr/" + nostr::to_hex(ev.id); };
  auto remote_has = [&](const std::string& ref) {
    return remote_refs().find("\t" + ref + "\n") != std::string::npos;
  };

  // 1. A PR event whose commit is not here is held, not served.
  auto pr_commit = commit("the change", "pr");
  auto other_commit = commit("something else", "pr");
  ASSERT_NE(pr_commit, other_commit);
  auto pr = pr_event(pr_commit, 1700000200);
  auto held = client_->publish(pr);
  ASSERT_TRUE(held);
  EXPECT_TRUE(held->accepted);
  EXPECT_EQ(held->message,
            "purgatory: PR event stored, waiting for git push with commit " + pr_commit);
  EXPECT_TRUE(served(1618).empty());
  // The held event counts for §7.2: its ref naming another commit is refused.
  auto wrong = git("push " + url() + " " + other_commit + ":" + ref_of(pr), work() + "/pr");
  EXPECT_EQ(wrong.exit_code, 1) << wrong.output;
  EXPECT_NE(wrong.output.find("[remote rejected]"), std::string::npos) << wrong.output;
  // Its ref with its commit releases it: stored and served.
  auto right = git("push " + url() + " " + pr_commit + ":" + ref_of(pr), work() + "/pr");
  ASSERT_EQ(right.exit_code, 0) << right.output;
  EXPECT_TRUE(wait_until([&] { return served(1618) == std::vector<nostr::EventId>{pr.id}; }, 10s));

  // 2. A PR event whose ref was pushed first with its commit is stored at once.
  auto early = pr_event(pr_commit, 1700000300);
  ASSERT_EQ(git("push " + url() + " " + pr_commit + ":" + ref_of(early), work() + "/pr").exit_code,
            0);
  auto stored = client_->publish(early);
  ASSERT_TRUE(stored);
  EXPECT_TRUE(stored->accepted);
  EXPECT_EQ(stored->message, "");

  // 3. A PR event whose ref names another commit: the ref is deleted, the event held (its own
  // commit is nowhere here).
  auto unpushed = commit("not pushed", "pr");
  auto mismatch = pr_event(unpushed, 1700000400);
  ASSERT_EQ(
      git("push " + url() + " " + other_commit + ":" + ref_of(mismatch), work() + "/pr").exit_code,
      0);
  auto waiting = client_->publish(mismatch);
  ASSERT_TRUE(waiting);
  EXPECT_EQ(waiting->message.rfind("purgatory: PR event stored", 0), 0u) << waiting->message;
  EXPECT_TRUE(wait_until([&] { return !remote_has(ref_of(mismatch)); }, 10s)) << remote_refs();
  EXPECT_EQ(served(1618).size(), 2u) << "the mismatched one is not served";

  // 4. A ref pushed for a PR event that never comes is deleted after the hold; the refs of
  // accepted PR events stay.
  auto orphan = pr_event(other_commit, 1700000500);  // never published
  ASSERT_EQ(
      git("push " + url() + " " + other_commit + ":" + ref_of(orphan), work() + "/pr").exit_code,
      0);
  EXPECT_TRUE(remote_has(ref_of(orphan)));
  EXPECT_TRUE(wait_until([&] { return !remote_has(ref_of(orphan)); }, 15s)) << remote_refs();
  EXPECT_TRUE(remote_has(ref_of(pr)));
  EXPECT_TRUE(remote_has(ref_of(early)));
  auto metrics = http_get(graspd_->port(), "/metrics").body;
  EXPECT_NE(metrics.find("graspd_purgatory_events{kind=\"pull_request\"}"), std::string::npos);
}

TEST_F(GitE2E, AHeldPullRequestsCommitIsFetchedFromItsCloneUrl) {
  auto pair = start_pair();
  ASSERT_TRUE(pair.b.client);
  auto& b = *pair.b.process;
  auto& b_client = pair.b.client;
  const auto& b_url = pair.b_url;

  // The repository is served on both (B fetched its state's commit from A).
  auto main_id = commit("one");
  auto state =
      make_event(30618, "", {{"d", "repo"}, {"refs/heads/main", main_id}}, 1700000100, owner_key);
  ASSERT_TRUE(client_->publish(state)->accepted);
  ASSERT_EQ(git("push " + url() + " main", work() + "/local").exit_code, 0);
  ASSERT_TRUE(b_client->publish(state)->accepted);
  ASSERT_TRUE(wait_until([&] { return !served(b.port(), 30617).empty(); }, 20s)) << b.stderr_text();

  // A PR whose commit only A has (under its refs/nostr ref) is held on B, which fetches the commit
  // by id from the PR's clone URL, then serves the event and the ref.
  auto pr_commit = commit("the change", "pr");
  const std::string address =
      "30617:" + nostr::to_hex(*nostr::pubkey_from_secret(secret_key(owner_key))) + ":repo";
  auto pr =
      make_event(1618, "", {{"a", address}, {"c", pr_commit}, {"clone", url()}}, 1700000200, 9);
  const auto ref = "refs/nostr/" + nostr::to_hex(pr.id);
  ASSERT_EQ(git("push " + url() + " " + pr_commit + ":" + ref, work() + "/pr").exit_code, 0);
  // A has its commit: stored at once (the push's answer came after A's acceptance was told).
  EXPECT_EQ(client_->publish(pr)->message, "") << "A has its commit: stored at once";
  EXPECT_EQ(b_client->publish(pr)->message.rfind("purgatory: PR event stored", 0), 0u);
  EXPECT_TRUE(
      wait_until([&] { return served(b.port(), 1618) == std::vector<nostr::EventId>{pr.id}; }, 20s))
      << b.stderr_text();
  EXPECT_TRUE(wait_until(
      [&] {
        return git("ls-remote " + b_url).output.find(pr_commit + "\t" + ref) != std::string::npos;
      },
      10s));
  b_client.reset();
  EXPECT_EQ(b.stop(), 0) << b.stderr_text();
}

namespace {

/// Repositories on disk under `root` (`<npub>/<d>.git`) and the bytes of everything there.
struct DiskUse {
  std::size_t repositories = 0;
  std::uintmax_t bytes = 0;
};
DiskUse disk_use(const fs::path& root) {
  DiskUse out;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(root, ec); !ec && it != fs::end(it);
       it.increment(ec)) {
    if (it.depth() == 1 && it->is_directory() && it->path().extension() == ".git")
      ++out.repositories;
    if (it->is_regular_file(ec)) out.bytes += it->file_size(ec);
  }
  return out;
}

}  // namespace

TEST_F(GitE2E, OneAuthorOrOneAddressCannotFillPurgatoryForEveryoneElse) {
  // 100 repositories at most: one author may hold 10, one address 30.
  start({{"NGIT_PURGATORY_MAX_REPOSITORIES", "100"},
         {"NGIT_PURGATORY_AUTHOR_SHARE_PERCENT", "10"},
         {"NGIT_PURGATORY_ADDRESS_SHARE_PERCENT", "30"},
         {"NGIT_EVENT_RATE", "100000"},
         {"NGIT_EVENT_BURST", "100000"}});
  const auto git_root = dir_.path() / "git";
  auto before = disk_use(git_root);
  auto attacker = TestClient::connect(graspd_->port(), false, "127.0.0.2");
  ASSERT_TRUE(attacker);
  auto flood = [&](std::uint8_t key, int count, int& held, int& limited) {
    for (int i = 0; i < count; ++i) {
      auto d = "spam" + std::to_string(i);
      auto ok = attacker->publish(make_event(
          30617, "",
          {{"d", d}, {"clone", "http://" + host() + path(d, key)}, {"relays", "ws://" + host()}},
          1700000000, key));
      ASSERT_TRUE(ok);
      if (ok->accepted) {
        EXPECT_EQ(ok->message.rfind("purgatory:", 0), 0u) << ok->message;
        ++held;
      } else {
        EXPECT_EQ(ok->message.rfind("rate-limited:", 0), 0u) << ok->message;
        if (ok->message.rfind("rate-limited:", 0) != 0) return;
        ++limited;
      }
    }
  };
  int held = 0, limited = 0;
  flood(40, 300, held, limited);  // one key
  EXPECT_EQ(held, 10);
  EXPECT_EQ(limited, 290);
  for (std::uint8_t key = 41; key <= 45; ++key) flood(key, 20, held, limited);  // more keys
  EXPECT_EQ(held, 30) << "one address holds at most its share";

  // The victim, another author on another address, is still held (and so served once pushed).
  auto started = std::chrono::steady_clock::now();
  auto ok = client_->publish(
      make_event(30617, "", {{"d", "repo"}, {"clone", url()}, {"relays", "ws://" + host()}},
                 1700000000, owner_key));
  auto latency = std::chrono::steady_clock::now() - started;
  ASSERT_TRUE(ok);
  EXPECT_TRUE(ok->accepted) << ok->message;
  EXPECT_EQ(ok->message, "purgatory: won't be served until git data arrives");
  EXPECT_LT(latency, 5s);

  auto after = disk_use(git_root);
  EXPECT_EQ(after.repositories - before.repositories, 31u);
  std::cout << "[ measured ] victim OK after "
            << std::chrono::duration_cast<std::chrono::milliseconds>(latency).count()
            << " ms; 400 attacker announcements held 30; disk +" << (after.bytes - before.bytes)
            << " bytes in " << after.repositories - before.repositories << " repositories\n";
  auto metrics = http_get(graspd_->port(), "/metrics").body;
  EXPECT_EQ(metric_value(metrics, "graspd_purgatory_refused_total{reason=\"author_share\"}"), 310);
  EXPECT_EQ(metric_value(metrics, "graspd_purgatory_refused_total{reason=\"address_share\"}"), 60);
  EXPECT_EQ(metric_value(metrics, "graspd_purgatory_repositories"), 31);
}

TEST_F(GitE2E, AStateIsAnsweredAsWhatItBecomesNotAsHeld) {
  start();
  announce();
  auto id = commit("one");
  auto first = make_event(
      30618, "", {{"d", "repo"}, {"refs/heads/main", id}, {"HEAD", "ref: refs/heads/main"}},
      1700000100, owner_key);
  auto held = client_->publish(first);
  ASSERT_TRUE(held);
  EXPECT_TRUE(held->accepted);
  EXPECT_EQ(held->message, "purgatory: won't be served until git data arrives")
      << "its commit is not here";
  ASSERT_EQ(git("push " + url() + " main", work() + "/local").exit_code, 0);
  ASSERT_TRUE(
      wait_until([&] { return served(30618) == std::vector<nostr::EventId>{first.id}; }, 10s));

  // Its objects are here: answered as the stored event it is, and served once answered.
  auto present = make_event(
      30618, "", {{"d", "repo"}, {"refs/heads/main", id}, {"HEAD", "ref: refs/heads/main"}},
      1700000200, owner_key);
  auto ok = client_->publish(present);
  ASSERT_TRUE(ok);
  EXPECT_TRUE(ok->accepted);
  EXPECT_EQ(ok->message, "");
  EXPECT_EQ(served(30618), std::vector<nostr::EventId>{present.id});

  // Older than the stored state: never served, answered as the older version it is.
  auto older = make_event(
      30618, "", {{"d", "repo"}, {"refs/heads/main", id}, {"HEAD", "ref: refs/heads/main"}},
      1700000150, owner_key);
  ok = client_->publish(older);
  ASSERT_TRUE(ok);
  EXPECT_FALSE(ok->accepted) << "the store's answer to every older replaceable version";
  EXPECT_EQ(ok->message, "duplicate: an older version (a newer one is stored)");
  EXPECT_EQ(served(30618), std::vector<nostr::EventId>{present.id});
  auto metrics = http_get(graspd_->port(), "/metrics").body;
  EXPECT_EQ(metric_value(metrics, "graspd_purgatory_events{kind=\"state\"}"), 0);
}

// ---------------------------------------------------------------- refs/nostr bounds (issue 29)

/// A refs/nostr/<64 hex> id made of `i` (distinct per i and per `salt`).
std::string nostr_id(int i, int salt = 0) {
  char id[65];
  std::snprintf(id, sizeof id, "%08x%056x", salt, i + 1);
  return id;
}

/// Percentile `p` (0..1) of `values` (sorted here), 0 when empty.
std::chrono::milliseconds percentile(std::vector<std::chrono::milliseconds> values, double p) {
  if (values.empty()) return {};
  std::sort(values.begin(), values.end());
  auto at = static_cast<std::size_t>(p * static_cast<double>(values.size() - 1));
  return values[at];
}

class RefsNostrE2E : public GitE2E {
 protected:
  /// The announced repository with a pushed `main`; returns its commit.
  std::string served_repository() {
    announce();
    auto id = commit("one");
    publish_state({{"refs/heads/main", id}}, 1700000100);
    EXPECT_EQ(git("push " + url() + " main", work() + "/local").exit_code, 0);
    EXPECT_TRUE(wait_until([&] { return !served(30617).empty(); }, 10s));
    return id;
  }

  /// The receive-pack body creating refs/nostr/<id> at `commit` (already in the repository, so the
  /// pack is empty) for each of `ids`; written to a file for curl.
  std::string push_body(const std::string& commit_id, const std::vector<std::string>& ids,
                        const std::string& name) {
    std::string body;
    for (std::size_t i = 0; i < ids.size(); ++i) {
      auto command = std::string(40, '0') + " " + commit_id + " refs/nostr/" + ids[i];
      if (i == 0) command += std::string(1, '\0') + "report-status";
      body += pkt(command + "\n");
    }
    body += "0000";
    if (empty_pack_.empty()) {
      auto pack =
          run_shell(work() + "/local", "git pack-objects -q --stdout </dev/null > ../empty.pack");
      EXPECT_EQ(pack.exit_code, 0) << pack.output;
      std::ifstream in(work() + "/empty.pack", std::ios::binary);
      empty_pack_.assign(std::istreambuf_iterator<char>(in), {});
    }
    body += empty_pack_;
    std::ofstream(work() + "/" + name, std::ios::binary) << body;
    return name;
  }

  /// POSTs body file `name` to receive-pack from `from` with curl; its answer (report-status).
  Shell post_push(const std::string& name, const std::string& from) {
    return run_shell(
        work(), "curl -s --max-time 60 --interface " + from +
                    " -H 'Content-Type: application/x-git-receive-pack-request' --data-binary @" +
                    name + " " + url() + "/git-receive-pack");
  }

  std::size_t remote_nostr_refs() {
    auto listed = remote_refs();
    std::size_t n = 0;
    for (auto at = listed.find("\trefs/nostr/"); at != std::string::npos;
         at = listed.find("\trefs/nostr/", at + 1))
      ++n;
    return n;
  }

  std::string empty_pack_;
};

TEST_F(RefsNostrE2E, AFloodOfPlaceholderRefsDoesNotStallAnotherClientsOk) {
  start({{"NGIT_EVENT_RATE", "100000"}, {"NGIT_EVENT_BURST", "100000"}});
  auto main_id = served_repository();
  const std::string address =
      "30617:" + nostr::to_hex(*nostr::pubkey_from_secret(secret_key(owner_key))) + ":repo";
  constexpr int refs = 2000;
  std::vector<std::string> ids;
  for (int i = 0; i < refs; ++i) ids.push_back(nostr_id(i));
  auto body = push_body(main_id, ids, "flood.body");

  // The placeholders of one push are one write: store commits counted around a quiet push of 500.
  const std::string commits = "graspd_store_commits_total{result=\"ok\"}";
  std::vector<std::string> quiet;
  for (int i = 0; i < 500; ++i) quiet.push_back(nostr_id(i, 1));
  auto commits_before = metric(graspd_->port(), commits);
  auto quiet_answer = post_push(push_body(main_id, quiet, "quiet.body"), "127.0.0.2");
  ASSERT_NE(quiet_answer.output.find("ok refs/nostr/" + quiet.back()), std::string::npos);
  // The push's answer ends once the daemon knows its refs; their records follow at once.
  // Settled: the same count over three reads 100 ms apart (the writer's flush is immediate).
  double settled = -1;
  int same = 0;
  for (auto until = std::chrono::steady_clock::now() + 10s;
       same < 3 && std::chrono::steady_clock::now() < until; std::this_thread::sleep_for(100ms)) {
    auto now = metric(graspd_->port(), commits);
    same = now == settled && now > commits_before ? same + 1 : 0;
    settled = now;
  }
  ASSERT_EQ(same, 3);
  std::cout << "[ measured ] store commits for a push of 500 refs/nostr refs: "
            << settled - commits_before << "\n";
  EXPECT_LE(settled - commits_before, 5);

  // The victim on 127.0.0.1 publishes notes on the repository the whole time the attacker's push
  // of 2,000 refs/nostr refs from 127.0.0.2 is applied and reported.
  std::atomic<bool> pushed{false};
  auto attacker = std::async(std::launch::async, [&] {
    auto answer = post_push(body, "127.0.0.2");
    pushed = true;
    return answer;
  });
  std::vector<std::chrono::milliseconds> latencies;
  int refused = 0;
  auto stop_after = std::chrono::steady_clock::time_point::max();
  for (int i = 0; std::chrono::steady_clock::now() < stop_after && i < 100000; ++i) {
    if (pushed && stop_after == std::chrono::steady_clock::time_point::max())
      stop_after = std::chrono::steady_clock::now() + 1s;  // and a while after the report
    auto note = make_event(1, "note " + std::to_string(i), {{"a", address}}, 1700001000 + i);
    auto started = std::chrono::steady_clock::now();
    auto ok = client_->publish(note);
    latencies.push_back(std::chrono::duration_cast<std::chrono::milliseconds>(
        std::chrono::steady_clock::now() - started));
    if (!ok || !ok->accepted) ++refused;
  }
  auto answer = attacker.get();
  EXPECT_NE(answer.output.find("ok refs/nostr/" + ids.back()), std::string::npos)
      << answer.output.substr(0, 300);
  EXPECT_EQ(refused, 0);
  auto p99 = percentile(latencies, 0.99);
  auto worst = percentile(latencies, 1.0);
  std::cout << "[ measured ] victim OK during a push of " << refs
            << " refs/nostr refs: " << latencies.size() << " notes, p50 "
            << percentile(latencies, 0.5).count() << " ms, p99 " << p99.count() << " ms, max "
            << worst.count() << " ms\n";
  EXPECT_LT(p99, 1000ms);
  EXPECT_EQ(remote_nostr_refs(), static_cast<std::size_t>(refs + 500)) << "the placeholders stay";
}

TEST_F(RefsNostrE2E, EveryExpiredPlaceholderRefIsDeleted) {
  start({{"NGIT_PURGATORY_HOLD_SECS", "4"}});
  auto main_id = served_repository();
  constexpr int refs = 1500;  // more than a git job queue of 1,024 took before
  std::vector<std::string> ids;
  for (int i = 0; i < refs; ++i) ids.push_back(nostr_id(i));
  auto answer = post_push(push_body(main_id, ids, "placeholders.body"), "127.0.0.2");
  ASSERT_NE(answer.output.find("ok refs/nostr/" + ids.back()), std::string::npos)
      << answer.output.substr(0, 300);
  ASSERT_EQ(remote_nostr_refs(), static_cast<std::size_t>(refs));
  auto pushed_at = std::chrono::steady_clock::now();
  EXPECT_TRUE(wait_until([&] { return remote_nostr_refs() == 0; }, 30s))
      << remote_nostr_refs() << " refs/nostr refs left";
  std::cout << "[ measured ] " << refs << " placeholder refs gone "
            << std::chrono::duration_cast<std::chrono::milliseconds>(
                   std::chrono::steady_clock::now() - pushed_at)
                   .count()
            << " ms after the push (hold 4 s)\n";
  auto listed = git("ls-remote " + url());
  EXPECT_NE(listed.output.find(main_id + "\trefs/heads/main"), std::string::npos)
      << listed.exit_code << " " << listed.output << graspd_->stderr_text();
}

TEST_F(RefsNostrE2E, APushPastTheRepositorysRefsNostrLimitIsRejectedAndBranchesStillGoThrough) {
  start({{"NGIT_GIT_MAX_NOSTR_REFS", "100"}});
  auto main_id = served_repository();
  auto refspecs = [&](int from, int count) {
    std::string out;
    for (int i = from; i < from + count; ++i) out += " " + main_id + ":refs/nostr/" + nostr_id(i);
    return out;
  };
  // 150 at once: every ref refused, with the reason, and none kept.
  auto over = git("push " + url() + refspecs(0, 150), work() + "/local");
  EXPECT_NE(over.exit_code, 0);
  EXPECT_NE(over.output.find("[remote rejected]"), std::string::npos) << over.output.substr(0, 500);
  EXPECT_NE(over.output.find("too many refs/nostr refs"), std::string::npos)
      << over.output.substr(0, 500);
  EXPECT_EQ(remote_nostr_refs(), 0u);
  // 80 fit; 30 more would not.
  ASSERT_EQ(git("push " + url() + refspecs(0, 80), work() + "/local").exit_code, 0);
  auto more = git("push " + url() + refspecs(80, 30), work() + "/local");
  EXPECT_NE(more.exit_code, 0);
  EXPECT_NE(more.output.find("[remote rejected]"), std::string::npos) << more.output.substr(0, 500);
  EXPECT_EQ(remote_nostr_refs(), 80u);
  // The maintainer's branch push is not held to it.
  auto next = commit("two");
  publish_state({{"refs/heads/main", next}}, 1700000200);
  auto pushed = git("push " + url() + " main", work() + "/local");
  EXPECT_EQ(pushed.exit_code, 0) << pushed.output;
  EXPECT_NE(remote_refs().find(next + "\trefs/heads/main"), std::string::npos);
  EXPECT_EQ(metric(graspd_->port(), "graspd_git_refused_total{reason=\"nostr_refs\"}"), 2);
}

TEST_F(RefsNostrE2E, OneAddressPushesAtMostItsRateAndOthersStillPush) {
  start({{"NGIT_GIT_PUSHES_PER_MINUTE_PER_IP", "3"}});
  auto main_id = served_repository();
  std::vector<std::string> answers;
  for (int i = 0; i < 4; ++i)
    answers.push_back(
        post_push(push_body(main_id, {nostr_id(i, 7)}, "one.body"), "127.0.0.2").output);
  for (int i = 0; i < 3; ++i)
    EXPECT_NE(answers[i].find("ok refs/nostr/" + nostr_id(i, 7)), std::string::npos) << answers[i];
  EXPECT_NE(answers[3].find("ng refs/nostr/" + nostr_id(3, 7) + " rate-limited:"),
            std::string::npos)
      << answers[3];
  EXPECT_EQ(metric(graspd_->port(), "graspd_git_refused_total{reason=\"push_rate\"}"), 1);
  // The maintainer on another address pushes as usual.
  auto next = commit("two");
  publish_state({{"refs/heads/main", next}}, 1700000200);
  auto pushed = git("push " + url() + " main", work() + "/local");
  EXPECT_EQ(pushed.exit_code, 0) << pushed.output;
}

// -- GRASP-05 archives ---------------------------------------------------------

class ArchiveE2E : public GitE2E {
 protected:
  /// An announcement of `d` by `key` cloned from `clone` (relays on its host), as published.
  std::optional<nostr::RelayOk> announce_elsewhere(const std::string& d, const std::string& clone,
                                                   std::uint8_t key = owner_key) {
    return client_->publish(
        make_event(30617, "", {{"d", d}, {"clone", clone}, {"relays", "wss://elsewhere.example"}},
                   1700000000, key));
  }
  std::string nip11() {
    return http_get(graspd_->port(), "/", {{"Accept", "application/nostr+json"}}).body;
  }
};

TEST_F(ArchiveE2E, AGraspServiceIsArchivedByExactHostAndPathAndTheArchiveTakesNoPush) {
  start({{"NGIT_ARCHIVE_GRASP_SERVICES", "git.example.com"}, {"NGIT_ARCHIVE_READ_ONLY", "false"}});
  auto archived = announce_elsewhere("mirror", "https://git.example.com" + path("mirror"));
  ASSERT_TRUE(archived);
  EXPECT_TRUE(archived->accepted) << archived->message;
  EXPECT_EQ(archived->message.rfind("purgatory:", 0), 0u) << "held until its git data arrives";
  // Its repository exists here before the OK, empty, and its page says what it is.
  EXPECT_EQ(git("ls-remote " + url("mirror")).exit_code, 0);
  EXPECT_NE(http_get(graspd_->port(), path("mirror")).body.find("read-only archive"),
            std::string::npos);
  // Look-alike hosts, a path under the host, another key's path: not archives.
  for (const std::string& clone :
       {"https://git.example.com.evil.net" + path("a"),
        std::string("https://evil.net/git.example.com/a.git"),
        "https://evil.net/git.example.com" + path("a"),
        "https://git.example.com" + path("a", owner_key + 1), "https://github.com" + path("a")}) {
    auto refused = announce_elsewhere("a", clone);
    ASSERT_TRUE(refused);
    EXPECT_FALSE(refused->accepted) << clone;
    EXPECT_EQ(refused->message.rfind("blocked:", 0), 0u) << refused->message;
  }
  EXPECT_FALSE(fs::exists(dir_.path() / "git" / npub() / "a.git"));
  // A maintainer's state naming the commit does not open an archive to pushes.
  auto id = commit("first");
  publish_state({{"refs/heads/main", id}}, 1700000100, "mirror");
  EXPECT_EQ(git("remote add origin " + url("mirror"), work() + "/local").exit_code, 0);
  auto pushed = git("push origin main", work() + "/local");
  EXPECT_NE(pushed.exit_code, 0) << pushed.output;
  EXPECT_NE(pushed.output.find("read-only archive"), std::string::npos) << pushed.output;
  EXPECT_EQ(trim(remote_refs("mirror")), "");
  // Not read-only: a repository listing this service is still hosted and takes its push.
  announce("hosted");
  auto hosted = commit("hosted", "hosted-local");
  publish_state({{"refs/heads/main", hosted}}, 1700000200, "hosted");
  EXPECT_EQ(git("push -q " + url("hosted") + " main", work() + "/hosted-local").exit_code, 0);
  auto info = nip11();
  EXPECT_NE(info.find("\"GRASP-05\""), std::string::npos) << info;
  EXPECT_NE(info.find("\"curation\":\"Accepts repositories that list this service, and archives "
                      "repositories hosted on git.example.com\""),
            std::string::npos)
      << info;
}

TEST_F(ArchiveE2E, ReadOnlyRefusesAListingAnnouncementNoArchiveRuleTakes) {
  start({{"NGIT_ARCHIVE_WHITELIST", npub() + "/kept"}});
  announce("kept");  // listing this service, and whitelisted: archived, not hosted
  auto refused = client_->publish(
      make_event(30617, "", {{"d", "other"}, {"clone", url("other")}, {"relays", "ws://" + host()}},
                 1700000000, owner_key));
  ASSERT_TRUE(refused);
  EXPECT_FALSE(refused->accepted);
  EXPECT_EQ(refused->message,
            "blocked: read-only archive: " + npub() + "/other is not archived here");
  auto id = commit("first");
  publish_state({{"refs/heads/main", id}}, 1700000100, "kept");
  auto pushed = git("push " + url("kept") + " main", work() + "/local");
  EXPECT_NE(pushed.exit_code, 0);
  EXPECT_NE(pushed.output.find("read-only archive"), std::string::npos) << pushed.output;
  EXPECT_NE(nip11().find("Read-only sync of whitelisted repositories and maintainers"),
            std::string::npos);
}

// Storage caps: past NGIT_ARCHIVE_MAX_REPOSITORIES a new archive is refused with `blocked:` and
// gets no repository; the archive already here still takes a replacement, and hosting is not
// capped by it.
TEST_F(ArchiveE2E, ANewArchivePastTheCapIsRefusedAndTheArchiveHereStaysOpen) {
  start({{"NGIT_ARCHIVE_GRASP_SERVICES", "git.example.com"},
         {"NGIT_ARCHIVE_READ_ONLY", "false"},
         {"NGIT_ARCHIVE_MAX_REPOSITORIES", "1"}});
  auto first = announce_elsewhere("one", "https://git.example.com" + path("one"));
  ASSERT_TRUE(first);
  EXPECT_TRUE(first->accepted) << first->message;
  auto second = announce_elsewhere("two", "https://git.example.com" + path("two"));
  ASSERT_TRUE(second);
  EXPECT_FALSE(second->accepted);
  EXPECT_EQ(second->message, "blocked: archive full: this server archives at most 1 repositories");
  EXPECT_FALSE(fs::exists(dir_.path() / "git" / npub() / "two.git"));
  auto replacement =
      client_->publish(make_event(30617, "",
                                  {{"d", "one"},
                                   {"clone", "https://git.example.com" + path("one")},
                                   {"relays", "wss://x.example"}},
                                  1700000500, owner_key));
  ASSERT_TRUE(replacement);
  EXPECT_TRUE(replacement->accepted) << replacement->message;
  announce("hosted");
  EXPECT_EQ(git("ls-remote " + url("hosted")).exit_code, 0);
}

// GRASP-05 §13.14: a read-only ARCHIVE_ALL node that syncs from a source finds the repository
// there (layer 1), archives it, fetches its state's commit from the source's clone URL and serves
// it; nothing was published to the archive node itself.
TEST_F(ArchiveE2E, AnArchiveFollowsARepositoryHostedOnAnotherNode) {
  auto source = start_node_b({{"NGIT_SYNC_ENABLED", "false"}});
  ASSERT_TRUE(source.client);
  start({{"NGIT_ARCHIVE_ALL", "true"},
         {"NGIT_SYNC_ENABLED", "true"},
         {"NGIT_SYNC_BOOTSTRAP_RELAY_URL", source.process->relay_url()},
         {"NGIT_SYNC_ALLOW_PRIVATE_ADDRESSES", "true"},
         {"NGIT_SYNC_BATCH_WINDOW_MS", "100"}});
  const std::string source_url = "http://" + source.host + path();
  auto announcement = make_event(
      30617, "", {{"d", "repo"}, {"clone", source_url}, {"relays", "ws://" + source.host}},
      1700000000, owner_key);
  auto first = commit("one");
  auto state = make_event(
      30618, "", {{"d", "repo"}, {"refs/heads/main", first}, {"HEAD", "ref: refs/heads/main"}},
      1700000100, owner_key);
  for (const auto* event : {&announcement, &state}) {
    auto ok = source.client->publish(*event);
    ASSERT_TRUE(ok && ok->accepted) << (ok ? ok->message : "no answer");
  }
  auto pushed = git("push " + source_url + " main", work() + "/local");
  ASSERT_EQ(pushed.exit_code, 0) << pushed.output;
  EXPECT_TRUE(wait_until(
      [&] { return remote_refs().find(first + "\trefs/heads/main") != std::string::npos; }, 30s))
      << remote_refs() << graspd_->stderr_text();
  EXPECT_TRUE(
      wait_until([&] { return served(30617) == std::vector<nostr::EventId>{announcement.id}; }));
  EXPECT_TRUE(wait_until([&] { return served(30618) == std::vector<nostr::EventId>{state.id}; }));
  source.client.reset();
  EXPECT_EQ(source.process->stop(), 0) << source.process->stderr_text();
}

// GRASP-06 pull-request submission areas (docs/policy.md "Pull request submissions"): the
// acceptance criteria of the GRASP-05/06 requirements, 1-12, with graspd's traversal and
// placeholder-protection additions, through the real binary and the real git.
class PrSubmissionE2E : public GitE2E {
 protected:
  static constexpr std::uint8_t contributor = 9;

  void start_on(std::vector<std::pair<std::string, std::string>> extra = {}) {
    extra.push_back({"NGIT_GRASP06_ENABLE", "true"});
    start(std::move(extra));
  }
  std::string area_path(const std::string& d) const {
    return "/prs/" + npub(contributor) + "/" + d + ".git";
  }
  std::string area_url(const std::string& d) const { return "http://" + host() + area_path(d); }
  fs::path areas_dir() const { return dir_.path() / "git" / "prs"; }
  std::string address(const std::string& d, std::uint8_t key = owner_key) const {
    return "30617:" + nostr::to_hex(*nostr::pubkey_from_secret(secret_key(key))) + ":" + d;
  }
  /// A PR by the contributor for `d` (of owner_key), its clone `clone`.
  nostr::Event pr(const std::string& d, const std::string& commit_id, const std::string& clone,
                  std::int64_t created_at = 1700000200) {
    return make_event(1618, "",
                      {{"a", address(d)}, {"c", commit_id}, {"clone", clone}, {"subject", "x"}},
                      created_at, contributor);
  }
  static std::string ref_of(const nostr::Event& ev) { return "refs/nostr/" + nostr::to_hex(ev.id); }
  bool served_id(const nostr::EventId& id) {
    auto reader = TestClient::connect(graspd_->port());
    auto events =
        reader ? reader->query("q", "{\"ids\":[\"" + nostr::to_hex(id) + "\"]}") : std::nullopt;
    return events && events->size() == 1;
  }
  std::string nip11(std::uint16_t port) {
    return http_get(port, "/", {{"Accept", "application/nostr+json"}}).body;
  }
};

// Criteria 1 and 2: off, no GRASP-06 and /prs/ is 404; on, NIP-11 lists it.
TEST_F(PrSubmissionE2E, OffTheEndpointIs404AndOnNip11ListsGrasp06) {
  start_on();
  auto off = start_node_b({});
  ASSERT_TRUE(off.client);
  auto probe = area_path("x") + "/info/refs?service=git-upload-pack";
  EXPECT_EQ(http_get(off.process->port(), probe).status, 404);
  EXPECT_EQ(nip11(off.process->port()).find("GRASP-06"), std::string::npos);
  EXPECT_EQ(http_get(graspd_->port(), probe).status, 200);
  auto info = nip11(graspd_->port());
  EXPECT_NE(info.find("\"GRASP-06\""), std::string::npos) << info;
  EXPECT_NE(info.find("/prs/<npub>/<identifier>.git"), std::string::npos) << info;
  off.client.reset();
  EXPECT_EQ(off.process->stop(), 0);
}

// Criteria 3-5, 17, 18: an unknown area clones empty and makes nothing on disk; a refs/nostr/<id>
// push is taken once; other refs, bad ids, deletion and repointing are refused in git's report;
// a path that decodes to another directory is 404.
TEST_F(PrSubmissionE2E, AnAreaTakesOnlyANewRefsNostrRefAndNothingElse) {
  start_on();
  auto cloned = git("clone -q " + area_url("fresh-uuid") + " empty");
  EXPECT_EQ(cloned.exit_code, 0) << cloned.output;
  EXPECT_EQ(trim(git("ls-remote " + area_url("fresh-uuid")).output), "");
  EXPECT_FALSE(fs::exists(areas_dir())) << "nothing on disk for a clone";

  auto first = commit("a change", "pr");
  auto second = commit("another", "pr");
  const std::string id_ref = "refs/nostr/" + std::string(64, 'a');
  auto pushed = git("push " + area_url("repo") + " " + first + ":" + id_ref, work() + "/pr");
  ASSERT_EQ(pushed.exit_code, 0) << pushed.output;
  EXPECT_TRUE(fs::is_directory(areas_dir() /
                               nostr::to_hex(*nostr::pubkey_from_secret(secret_key(contributor))) /
                               "repo.git"));
  for (const std::string& refspec :
       {std::string("HEAD:refs/heads/main"), std::string("HEAD:refs/nostr/abc"), ":" + id_ref,
        "+" + second + ":" + id_ref}) {
    auto refused = git("push " + area_url("repo") + " " + refspec, work() + "/pr");
    EXPECT_NE(refused.exit_code, 0) << refspec << "\n" << refused.output;
    EXPECT_NE(refused.output.find("[remote rejected]"), std::string::npos) << refused.output;
    EXPECT_EQ(refused.output.find("not found"), std::string::npos) << refused.output;
  }
  EXPECT_EQ(trim(git("ls-remote " + area_url("repo")).output), first + "\t" + id_ref);

  auto traversal = "/prs/" + npub(contributor) + "/..%2F..%2F" + npub(owner_key) +
                   "%2Fx.git/info/refs?service=git-receive-pack";
  EXPECT_EQ(http_get(graspd_->port(), traversal).status, 404);
  EXPECT_EQ(http_get(graspd_->port(),
                     "/prs/" + nostr::to_hex(*nostr::pubkey_from_secret(secret_key(contributor))) +
                         "/x.git/info/refs?service=git-upload-pack")
                .status,
            404)
      << "hex keys are not area names";
  EXPECT_FALSE(fs::exists(dir_.path() / "git" / npub(owner_key)));
}

// Criteria 6-8 and the release: a PR for a repository that is nowhere here is taken when its
// clone is its area here, held until its commit is pushed there, then served.
TEST_F(PrSubmissionE2E, APullRequestForAnUnknownRepositoryIsHeldUntilItsPushToItsArea) {
  start_on();
  auto change = commit("a change", "pr");
  auto elsewhere = client_->publish(
      pr("nowhere", change, "https://other.example" + area_path("nowhere"), 1700000100));
  ASSERT_TRUE(elsewhere);
  EXPECT_FALSE(elsewhere->accepted) << "a clone on another host: the related-event rule stands";
  auto no_commit = make_event(1618, "", {{"a", address("nowhere")}, {"clone", area_url("nowhere")}},
                              1700000150, contributor);
  auto invalid = client_->publish(no_commit);
  ASSERT_TRUE(invalid);
  EXPECT_FALSE(invalid->accepted);
  EXPECT_EQ(invalid->message.rfind("invalid:", 0), 0u) << invalid->message;

  auto event = pr("nowhere", change, area_url("nowhere"));
  auto held = client_->publish(event);
  ASSERT_TRUE(held);
  EXPECT_TRUE(held->accepted) << held->message;
  EXPECT_EQ(held->message.rfind("purgatory:", 0), 0u) << held->message;
  EXPECT_FALSE(served_id(event.id));
  // Another commit for its id is refused; its own releases it.
  auto other = commit("other", "pr");
  auto wrong =
      git("push " + area_url("nowhere") + " " + other + ":" + ref_of(event), work() + "/pr");
  EXPECT_NE(wrong.exit_code, 0) << wrong.output;
  auto right =
      git("push " + area_url("nowhere") + " " + change + ":" + ref_of(event), work() + "/pr");
  ASSERT_EQ(right.exit_code, 0) << right.output;
  EXPECT_TRUE(wait_until([&] { return served_id(event.id); }, 10s));
}

// Criteria 9-12: PRs tagging a repository hosted here are mirrored into it from their area,
// whichever of push and event comes first; a PR pushed to the owner's URL never reaches an area;
// an area refuses a commit other than its PR's.
TEST_F(PrSubmissionE2E, PullRequestsAreMirroredIntoTheRepositoryTheyTag) {
  start_on();
  announce();
  auto main_id = commit("one");
  publish_state({{"refs/heads/main", main_id}}, 1700000100);
  ASSERT_EQ(git("push -q " + url() + " main", work() + "/local").exit_code, 0);
  ASSERT_TRUE(wait_until([&] { return !served(30617).empty(); }, 10s));
  auto owner_has = [&](const nostr::Event& ev, const std::string& commit_id) {
    return remote_refs().find(commit_id + "\t" + ref_of(ev)) != std::string::npos;
  };

  // 9: event first, then the push to its area.
  auto change = commit("change one", "pr");
  auto first = pr("repo", change, area_url("repo"), 1700000200);
  auto held = client_->publish(first);
  ASSERT_TRUE(held && held->accepted);
  EXPECT_EQ(held->message.rfind("purgatory:", 0), 0u) << held->message;
  ASSERT_EQ(git("push -q " + area_url("repo") + " " + change + ":" + ref_of(first), work() + "/pr")
                .exit_code,
            0);
  EXPECT_TRUE(wait_until([&] { return served_id(first.id); }, 10s));
  EXPECT_TRUE(wait_until([&] { return owner_has(first, change); }, 10s)) << remote_refs();
  ASSERT_EQ(git("fetch -q " + url() + " " + ref_of(first), work() + "/local").exit_code, 0);
  EXPECT_EQ(git("cat-file -e " + change + "^{commit}", work() + "/local").exit_code, 0);

  // 10: the push first, then the event: stored at once and mirrored.
  auto change2 = commit("change two", "pr");
  auto second = pr("repo", change2, area_url("repo"), 1700000300);
  ASSERT_EQ(
      git("push -q " + area_url("repo") + " " + change2 + ":" + ref_of(second), work() + "/pr")
          .exit_code,
      0);
  auto stored = client_->publish(second);
  ASSERT_TRUE(stored && stored->accepted);
  EXPECT_EQ(stored->message, "");
  EXPECT_TRUE(wait_until([&] { return owner_has(second, change2); }, 10s)) << remote_refs();

  // 11: pushed to the owner's URL: nothing in any area.
  auto change3 = commit("change three", "pr");
  auto third = pr("repo", change3, url(), 1700000400);
  ASSERT_EQ(git("push -q " + url() + " " + change3 + ":" + ref_of(third), work() + "/pr").exit_code,
            0);
  ASSERT_TRUE(client_->publish(third));
  EXPECT_EQ(trim(git("ls-remote " + area_url("repo") + " " + ref_of(third)).output), "");

  // 12: a PR naming B, commit A pushed to its ref in the area: refused, nothing there, not served.
  auto b = commit("change B", "pr");
  auto a = commit("change A", "pr");
  auto fourth = pr("repo", b, area_url("repo"), 1700000500);
  ASSERT_TRUE(client_->publish(fourth));
  git("push -q " + area_url("repo") + " " + a + ":" + ref_of(fourth), work() + "/pr");
  EXPECT_EQ(trim(git("ls-remote " + area_url("repo") + " " + ref_of(fourth)).output), "");
  EXPECT_FALSE(served_id(fourth.id));
}

// Criterion 19 where the repository is hosted here too: ngit pushes the commit to this node's area
// and publishes the PR only to the repository's relays, here node B. B fetches the commit from the
// PR's clone URL (this node's area) and serves the PR; this node syncs it from B (GRASP-02) and,
// its area already holding the commit, stores it at once and mirrors it into the repository.
TEST_F(PrSubmissionE2E, APushOnlyPullRequestPublishedToTheRepositorysOtherRelayIsFoundAndMirrored) {
  auto pair = start_pair_with({{"NGIT_GRASP06_ENABLE", "true"},
                               {"NGIT_SYNC_ENABLED", "true"},
                               {"NGIT_SYNC_BATCH_WINDOW_MS", "100"}});
  ASSERT_TRUE(pair.b.client);
  push_to_both(pair);
  ASSERT_FALSE(HasFatalFailure());
  ASSERT_TRUE(wait_until([&] { return !served(30617).empty(); }, 10s));

  auto change = commit("a change", "pr");
  auto event = pr("repo", change, area_url("repo"), 1700000300);
  ASSERT_EQ(git("push -q " + area_url("repo") + " " + change + ":" + ref_of(event), work() + "/pr")
                .exit_code,
            0);
  auto on_b = pair.b.client->publish(event);
  ASSERT_TRUE(on_b && on_b->accepted) << (on_b ? on_b->message : "no answer");
  EXPECT_TRUE(wait_until([&] { return served_id(event.id); }, 30s)) << graspd_->stderr_text();
  EXPECT_TRUE(wait_until(
      [&] { return remote_refs().find(change + "\t" + ref_of(event)) != std::string::npos; }, 10s))
      << remote_refs();
  pair.b.client.reset();
  EXPECT_EQ(pair.b.process->stop(), 0) << pair.b.process->stderr_text();
}

// The back-fill: a repository announced here after its PR was served from an area gets the PR's
// commit and refs/nostr/<id> once its announcement is served.
TEST_F(PrSubmissionE2E, ARepositoryAnnouncedLaterGetsThePullRequestsOfItsAreas) {
  start_on();
  auto change = commit("a change", "pr");
  auto event = pr("late", change, area_url("late"), 1700000200);
  ASSERT_EQ(git("push -q " + area_url("late") + " " + change + ":" + ref_of(event), work() + "/pr")
                .exit_code,
            0);
  auto stored = client_->publish(event);
  ASSERT_TRUE(stored && stored->accepted);
  EXPECT_EQ(stored->message, "");
  announce("late");
  auto main_id = commit("one");
  publish_state({{"refs/heads/main", main_id}}, 1700000300, "late");
  ASSERT_EQ(git("push -q " + url("late") + " main", work() + "/local").exit_code, 0);
  EXPECT_TRUE(wait_until(
      [&] { return remote_refs("late").find(change + "\t" + ref_of(event)) != std::string::npos; },
      10s))
      << remote_refs("late");
}

// A ref pushed to an area for a PR that never comes goes after the hold, and the area with it.
TEST_F(PrSubmissionE2E, AnAreaWhosePlaceholderExpiredIsRemoved) {
  start_on({{"NGIT_PURGATORY_HOLD_SECS", "4"}});
  auto change = commit("never announced", "pr");
  ASSERT_EQ(
      git("push -q " + area_url("gone") + " " + change + ":refs/nostr/" + std::string(64, 'b'),
          work() + "/pr")
          .exit_code,
      0);
  const auto area =
      areas_dir() / nostr::to_hex(*nostr::pubkey_from_secret(secret_key(contributor))) / "gone.git";
  EXPECT_TRUE(wait_until([&] { return !fs::exists(area); }, 20s)) << graspd_->stderr_text();
  EXPECT_EQ(trim(git("ls-remote " + area_url("gone")).output), "");
}

// An attacker on another address fills areas with incompressible data: it is held to its hourly
// byte budget (rate-limited past it), the disk under prs/ stays within twice that, and a
// contributor on another address still pushes.
TEST_F(PrSubmissionE2E, OneAddressPushesAtMostItsByteBudgetToAreas) {
  constexpr std::uintmax_t budget = 300000;
  start_on({{"NGIT_GRASP06_MAX_BYTES_PER_IP", std::to_string(budget)}});
  ASSERT_EQ(git("init -q -b main big").exit_code, 0);
  ASSERT_EQ(run_shell(work() + "/big", "head -c 200000 /dev/urandom > blob").exit_code, 0);
  ASSERT_EQ(git("add blob", work() + "/big").exit_code, 0);
  ASSERT_EQ(git("commit -q -m big", work() + "/big").exit_code, 0);
  auto big = trim(git("rev-parse HEAD", work() + "/big").output);
  ASSERT_EQ(run_shell(work() + "/big",
                      "git rev-list --objects HEAD | git pack-objects -q --stdout > ../big.pack")
                .exit_code,
            0);
  std::ifstream in(work() + "/big.pack", std::ios::binary);
  const std::string pack{std::istreambuf_iterator<char>(in), {}};
  auto attack = [&](int n) {
    auto ref = "refs/nostr/" + std::string(63, 'c') + std::to_string(n);
    auto body = pkt(std::string(40, '0') + " " + big + " " + ref + std::string(1, '\0') +
                    "report-status\n") +
                "0000" + pack;
    auto name = "attack" + std::to_string(n) + ".body";
    std::ofstream(work() + "/" + name, std::ios::binary) << body;
    return run_shell(work(),
                     "curl -s --max-time 60 --interface 127.0.0.2 -H 'Content-Type: "
                     "application/x-git-receive-pack-request' --data-binary @" +
                         name + " " + area_url("a" + std::to_string(n)) + "/git-receive-pack")
        .output;
  };
  EXPECT_NE(attack(1).find("ok refs/nostr/"), std::string::npos);
  EXPECT_NE(attack(2).find("ok refs/nostr/"), std::string::npos) << "budget left: it may start";
  for (int n = 3; n <= 5; ++n) {
    auto refused = attack(n);
    EXPECT_NE(refused.find("rate-limited:"), std::string::npos) << refused;
  }
  EXPECT_LT(disk_use(areas_dir()).bytes, 2 * budget + 64 * 1024);
  // Another address is not held to the attacker's budget.
  auto change = commit("a small change", "pr");
  auto pushed =
      git("push " + area_url("mine") + " " + change + ":refs/nostr/" + std::string(64, 'd'),
          work() + "/pr");
  EXPECT_EQ(pushed.exit_code, 0) << pushed.output;
}

}  // namespace
}  // namespace graspd::test
