// The replication view end to end (docs/replication.md): graspd hosts a repository whose
// announcement names three relays and two other git servers besides itself — a fault peer that
// speaks NIP-77 and lacks 10 of its events, another graspd that holds 5 events graspd lacks, a
// fault peer without NIP-77, a port nobody answers on, a git server at the state and one a commit
// behind — and GET /api/repositories/<npub>/<identifier>/replication names each difference.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <rapidjson/document.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "messages/nostr/nip19.hpp"
#include "tests/integration/relay_test_helpers.hpp"
#include "tests/integration/sync_test_support.hpp"
#include "tests/support/git_backend_server.hpp"
#include "tests/support/http_client.hpp"
#include "tests/support/shell.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/wait_until.hpp"

namespace graspd::test {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

constexpr std::uint8_t owner_seed = 9;

std::string trimmed(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text;
}

/// A port held bound and not listening: every connection to it is refused.
struct RefusingPort {
  RefusingPort() {
    fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t size = sizeof address;
    if (::bind(fd, reinterpret_cast<sockaddr*>(&address), size) == 0 &&
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &size) == 0)
      port = ntohs(address.sin_port);
  }
  ~RefusingPort() { ::close(fd); }
  int fd = -1;
  std::uint16_t port = 0;
};

/// The entry of `array` whose "url" starts with `prefix` (canonical relay URLs end in "/").
const rapidjson::Value* entry(const rapidjson::Value& array, const std::string& prefix) {
  for (const auto& item : array.GetArray())
    if (std::string(item["url"].GetString()).rfind(prefix, 0) == 0) return &item;
  return nullptr;
}

class ReplicationE2E : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(work());
    fs::create_directories(served_root());
  }

  std::string work() const { return (dir_.path() / "work").string(); }
  std::string served_root() const { return (dir_.path() / "served").string(); }

  /// git with no system or global configuration.
  ShellResult git(const std::string& args, const std::string& in) {
    return run_shell(in, "env -i PATH=/usr/bin:/bin HOME='" + work() +
                             "' GIT_CONFIG_NOSYSTEM=1 GIT_TERMINAL_PROMPT=0 GIT_AUTHOR_NAME=t "
                             "GIT_AUTHOR_EMAIL=t@t GIT_COMMITTER_NAME=t GIT_COMMITTER_EMAIL=t@t "
                             "git " +
                             args);
  }

  std::string commit(const std::string& message) {
    auto local = work() + "/local";
    if (!fs::exists(local)) {
      EXPECT_EQ(git("init -q -b main local", work()).exit_code, 0);
    }
    EXPECT_EQ(git("commit -q --allow-empty -m '" + message + "'", local).exit_code, 0);
    return trimmed(git("rev-parse HEAD", local).output);
  }

  /// A bare repository under the git server's root holding `refspecs` of the local repository.
  void serve_copy(const std::string& name, const std::string& refspecs) {
    auto path = served_root() + "/" + name;
    ASSERT_EQ(git("init -q --bare " + path, work()).exit_code, 0);
    auto pushed = git("push -q " + path + " " + refspecs, work() + "/local");
    ASSERT_EQ(pushed.exit_code, 0) << pushed.output;
  }

  TempDir dir_{"graspd-replication-e2e"};
};

TEST_F(ReplicationE2E, TheViewNamesEachRelaysAndServersDifference) {
  // Peers: a NIP-77 fault peer, another graspd (a plain relay), a fault peer without NIP-77, a
  // port that refuses every connection.
  FaultPeer lacking;
  ASSERT_NE(lacking.port(), 0);
  ASSERT_TRUE(lacking.control("{\"negentropy\":true}"));
  GraspdProcess holding{relay_options()};
  ASSERT_TRUE(holding.start()) << holding.stderr_text();
  FaultPeer no_nip77;
  ASSERT_NE(no_nip77.port(), 0);
  RefusingPort unreachable;
  ASSERT_NE(unreachable.port, 0);
  GraspdProcess graspd{GraspdOptions{
      {{"NGIT_SYNC_ENABLED", "false"}, {"NGIT_SYNC_ALLOW_PRIVATE_ADDRESSES", "true"}}, {}}};
  ASSERT_TRUE(graspd.start()) << graspd.stderr_text();

  // Git: the state names main = second and the tag v1 = first; one server holds exactly that,
  // the other is a commit behind on main.
  auto first = commit("one");
  ASSERT_EQ(git("tag v1", work() + "/local").exit_code, 0);
  auto second = commit("two");
  serve_copy("current.git", "main v1");
  serve_copy("behind.git", first + ":refs/heads/main v1");
  GitBackendServer server(served_root());

  const auto host = "127.0.0.1:" + std::to_string(graspd.port());
  const auto npub = nostr::encode_npub(*nostr::pubkey_from_secret(secret_key(owner_seed)));
  const auto own_url = "http://" + host + "/" + npub + "/demo.git";
  auto relay = [](std::uint16_t port) { return "ws://127.0.0.1:" + std::to_string(port); };
  auto announcement =
      make_event(30617, "",
                 {{"d", "demo"},
                  {"clone", own_url, server.url("current.git"), server.url("behind.git")},
                  {"relays", "ws://" + host, relay(lacking.port()), relay(holding.port()),
                   relay(no_nip77.port()), relay(unreachable.port)}},
                 1700000000, owner_seed);
  auto state = make_event(30618, "",
                          {{"d", "demo"},
                           {"refs/heads/main", second},
                           {"refs/tags/v1", first},
                           {"HEAD", "ref: refs/heads/main"}},
                          1700000100, owner_seed);
  const auto address = nostr::address_of(announcement);
  std::vector<nostr::Event> issues;
  for (int i = 0; i < 12; ++i) issues.push_back(issue_for(address, i, 1700000200 + i));
  std::vector<nostr::Event> comments;
  for (int i = 0; i < 3; ++i) comments.push_back(comment_on(issues[i], i, 1700000300 + i));
  std::vector<nostr::Event> only_on_holding;
  for (int i = 0; i < 5; ++i)
    only_on_holding.push_back(issue_for(address, 100 + i, 1700000400 + i));

  std::vector<nostr::Event> ours{announcement, state};
  ours.insert(ours.end(), issues.begin(), issues.end());
  ours.insert(ours.end(), comments.begin(), comments.end());
  publish_all(graspd.port(), ours);
  auto pushed = git("push -q " + own_url + " main v1", work() + "/local");
  ASSERT_EQ(pushed.exit_code, 0) << pushed.output;
  publish_all(holding.port(), ours);
  publish_all(holding.port(), only_on_holding);
  // The lacking relay holds everything but issues 2..11 (comments on 0..2 included).
  for (const auto& ev : ours) {
    bool left_out = false;
    for (int i = 2; i < 12; ++i) left_out |= ev.id == issues[i].id;
    if (!left_out) {
      ASSERT_TRUE(lacking.seed(ev));
    }
  }
  for (const auto& ev : ours) ASSERT_TRUE(no_nip77.seed(ev));

  const auto path = "/api/repositories/" + npub + "/demo/replication";
  rapidjson::Document view;
  std::string body;
  // Answered once every probe is done (or at the request's deadline): ask until none is pending.
  ASSERT_TRUE(wait_until(
      [&] {
        body = http_request(graspd.port(), "GET", path, {}, 20s).body;
        view.Parse(body.c_str(), body.size());
        return !view.HasParseError() && view.IsObject() &&
               body.find("\"pending\":true") == std::string::npos;
      },
      60s))
      << body;

  EXPECT_EQ(std::string(view["repository"].GetString()), address);
  ASSERT_TRUE(view["state"].IsObject()) << body;
  EXPECT_EQ(std::string(view["state"]["id"].GetString()), nostr::to_hex(state.id));
  const auto& relays = view["relays"];
  ASSERT_EQ(relays.Size(), 4u) << "our own relay is not compared with itself: " << body;

  const auto* lacks = entry(relays, relay(lacking.port()));
  ASSERT_TRUE(lacks) << body;
  EXPECT_EQ((*lacks)["only_here"].GetUint64(), 10u) << body;
  EXPECT_EQ((*lacks)["only_there"].GetUint64(), 0u) << body;
  EXPECT_FALSE((*lacks)["complete"].GetBool());
  EXPECT_TRUE((*lacks)["measured_at"].IsInt64());

  const auto* holds = entry(relays, relay(holding.port()));
  ASSERT_TRUE(holds) << body;
  EXPECT_EQ((*holds)["only_there"].GetUint64(), 5u) << body;
  EXPECT_EQ((*holds)["only_here"].GetUint64(), 0u) << body;

  const auto* silent = entry(relays, relay(no_nip77.port()));
  ASSERT_TRUE(silent) << body;
  EXPECT_TRUE((*silent)["only_there"].IsNull()) << body;
  EXPECT_EQ(std::string((*silent)["reason"].GetString()), "does not speak NIP-77") << body;

  const auto* gone = entry(relays, relay(unreachable.port));
  ASSERT_TRUE(gone) << body;
  EXPECT_TRUE((*gone)["only_here"].IsNull());
  EXPECT_EQ(std::string((*gone)["reason"].GetString()).rfind("unreachable", 0), 0u) << body;

  const auto& servers = view["servers"];
  ASSERT_EQ(servers.Size(), 3u) << body;
  const auto* own = entry(servers, own_url);
  ASSERT_TRUE(own) << body;
  EXPECT_TRUE((*own)["self"].GetBool());
  EXPECT_TRUE((*own)["current"].IsBool() && (*own)["current"].GetBool()) << body;
  const auto* current = entry(servers, server.url("current.git"));
  ASSERT_TRUE(current) << body;
  EXPECT_TRUE((*current)["current"].IsBool() && (*current)["current"].GetBool()) << body;
  const auto* behind = entry(servers, server.url("behind.git"));
  ASSERT_TRUE(behind) << body;
  EXPECT_TRUE((*behind)["current"].IsBool() && !(*behind)["current"].GetBool()) << body;
  for (const auto& ref : (*behind)["refs"].GetArray()) {
    std::string name = ref["ref"].GetString();
    std::string status = ref["status"].IsString() ? ref["status"].GetString() : "";
    if (name == "refs/heads/main") {
      EXPECT_EQ(status, "differs") << body;
      EXPECT_EQ(std::string(ref["have"].GetString()), first);
      EXPECT_EQ(std::string(ref["want"].GetString()), second);
    } else {
      EXPECT_EQ(name, "refs/tags/v1");
      EXPECT_EQ(status, "current") << body;
    }
  }
  // The ref advertisement is all that was read: nothing was downloaded from the servers.
  EXPECT_EQ(server.requests_for("git-upload-pack HTTP"), 0u);
  EXPECT_EQ(server.requests_for("POST"), 0u);

  auto summary = view["summary"].GetObject();
  EXPECT_EQ(summary["relays"].GetUint64(), 4u);
  EXPECT_EQ(summary["relays_complete"].GetUint64(), 0u);
  EXPECT_EQ(summary["servers"].GetUint64(), 3u);
  EXPECT_EQ(summary["servers_current"].GetUint64(), 2u);

  // Cached: a second request within the hour measures nothing again.
  const auto connections = lacking.stat("connections");
  auto again = http_get(graspd.port(), path).body;
  rapidjson::Document second_view;
  second_view.Parse(again.c_str(), again.size());
  ASSERT_FALSE(second_view.HasParseError()) << again;
  EXPECT_EQ((*entry(second_view["relays"], relay(lacking.port())))["measured_at"].GetInt64(),
            (*lacks)["measured_at"].GetInt64());
  EXPECT_EQ(lacking.stat("connections"), connections + 1) << "only the STATS connection";

  // The figures at a glance, for the status page.
  auto glance = http_get(graspd.port(), "/api/replication").body;
  EXPECT_NE(glance.find("\"" + address +
                        "\":{\"relays\":4,\"relays_complete\":0,\"servers\":3,"
                        "\"servers_current\":2"),
            std::string::npos)
      << glance;

  // Unknown repositories and malformed paths.
  EXPECT_EQ(http_get(graspd.port(), "/api/repositories/" + npub + "/nope/replication").status, 404);
  EXPECT_EQ(http_get(graspd.port(), "/api/repositories/npub1bad/demo/replication").status, 404);
  EXPECT_EQ(graspd.stop(), 0) << graspd.stderr_text();
}

}  // namespace
}  // namespace graspd::test
