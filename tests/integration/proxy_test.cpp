// Trusted reverse proxies end to end (docs/operations.md "Behind a reverse proxy"): with
// NGIT_TRUSTED_PROXY_CIDRS=127.0.0.1/32 the per-address WebSocket cap counts the client a
// loopback proxy names in X-Forwarded-For, an untrusted peer's header is ignored, and behind a real
// HAProxy two clients get separate budgets; the per-address git connection cap counts the forwarded
// client too. One daemon for the suite; each test uses addresses of
// its own and starts once every earlier connection is released.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>

#include "messages/nostr/nip19.hpp"
#include "relay_test_helpers.hpp"
#include "tests/support/graspd_process.hpp"
#include "tests/support/http_client.hpp"
#include "tests/support/raw_socket.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/wait_until.hpp"

extern char** environ;

namespace graspd::test {
namespace {

using namespace std::chrono_literals;

constexpr int proxy_test_cap = 2;

/// A WebSocket client connecting from `from`, its upgrade request carrying `forwarded_for` as
/// X-Forwarded-For (none when empty).
std::unique_ptr<TestClient> forwarding_client(std::uint16_t port, const std::string& forwarded_for,
                                              const std::string& from = "127.0.0.1") {
  runtime::WsClient::Options options;
  options.local_address = from;
  if (!forwarded_for.empty()) options.request_headers = {{"X-Forwarded-For", forwarded_for}};
  return TestClient::connect_with(port, std::move(options));
}

/// Served: a REQ is answered (so the session holds its slot of the per-address cap).
::testing::AssertionResult served_through(TestClient* c) {
  if (!c) return ::testing::AssertionFailure() << "no connection";
  if (!c->query("s", "{\"kinds\":[9999],\"limit\":1}"))
    return ::testing::AssertionFailure() << "no EOSE; last frame: " << c->last_text();
  return ::testing::AssertionSuccess();
}

/// Refused by the per-address cap: a rate-limited NOTICE, then the close.
::testing::AssertionResult refused_at_cap(TestClient* c) {
  if (!c) return ::testing::AssertionFailure() << "no connection";
  auto notice = c->next_as<nostr::RelayNotice>();
  if (!notice) return ::testing::AssertionFailure() << "no NOTICE";
  if (notice->message.rfind("rate-limited:", 0) != 0)
    return ::testing::AssertionFailure() << "NOTICE " << notice->message;
  return ::testing::AssertionSuccess();
}

class ProxyE2E : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    graspd_ = new GraspdProcess(
        relay_options({{"NGIT_TRUSTED_PROXY_CIDRS", "127.0.0.1/32"},
                       {"NGIT_MAX_CONNECTIONS_PER_IP", std::to_string(proxy_test_cap)}}));
    ASSERT_TRUE(graspd_->start()) << graspd_->stderr_text();
  }
  static void TearDownTestSuite() {
    delete graspd_;
    graspd_ = nullptr;
  }

  void SetUp() override {
    ASSERT_NE(graspd_, nullptr);
    // The connections of the tests before are released (their slots freed).
    ASSERT_TRUE(wait_until([] { return relay_connections() == 0; }, 10s));
  }

  static std::uint16_t port() { return graspd_->port(); }
  static std::string metrics() { return http_get(port(), "/metrics").body; }
  static double relay_connections() { return metric_value(metrics(), "graspd_relay_connections"); }
  static double forwarded(const std::string& outcome) {
    return metric_value(metrics(), "graspd_forwarded_total{outcome=\"" + outcome + "\"}");
  }

  static inline GraspdProcess* graspd_ = nullptr;
};

TEST_F(ProxyE2E, AForwardedClientHasItsOwnPerAddressCap) {
  double used_before = forwarded("used");
  auto a = forwarding_client(port(), "198.51.100.7");
  auto b = forwarding_client(port(), "198.51.100.7");
  ASSERT_TRUE(served_through(a.get()));
  ASSERT_TRUE(served_through(b.get()));
  // 198.51.100.7 is at its cap; the proxy's own address and another client are not.
  auto third = forwarding_client(port(), "198.51.100.7");
  EXPECT_TRUE(refused_at_cap(third.get()));
  auto other = forwarding_client(port(), "198.51.100.8");
  EXPECT_TRUE(served_through(other.get()));
  auto direct = forwarding_client(port(), "");
  EXPECT_TRUE(served_through(direct.get()));
  // The right-most untrusted hop is the client: a spoofed entry left of it changes nothing.
  auto spoofed = forwarding_client(port(), "203.0.113.9, 198.51.100.7");
  EXPECT_TRUE(refused_at_cap(spoofed.get()));
  EXPECT_GE(forwarded("used") - used_before, 5);
}

TEST_F(ProxyE2E, AnUntrustedPeersHeaderIsIgnored) {
  double untrusted_before = forwarded("untrusted_peer");
  // From 127.0.0.2 (not trusted): counted per 127.0.0.2, whatever the header claims.
  auto a = forwarding_client(port(), "198.51.100.20", "127.0.0.2");
  auto b = forwarding_client(port(), "198.51.100.21", "127.0.0.2");
  ASSERT_TRUE(served_through(a.get()));
  ASSERT_TRUE(served_through(b.get()));
  auto third = forwarding_client(port(), "198.51.100.22", "127.0.0.2");
  EXPECT_TRUE(refused_at_cap(third.get()));
  // The forwarded addresses it named have their budgets untouched.
  auto named = forwarding_client(port(), "198.51.100.20");
  EXPECT_TRUE(served_through(named.get()));
  EXPECT_GE(forwarded("untrusted_peer") - untrusted_before, 3);
}

TEST_F(ProxyE2E, AnUnparsableHopLeavesTheTrustedProxyAsTheClient) {
  double malformed_before = forwarded("malformed");
  // "unknown" ends the walk: the client is the last trusted hop, the proxy itself (127.0.0.1).
  auto a = forwarding_client(port(), "198.51.100.30, unknown");
  auto b = forwarding_client(port(), "");
  ASSERT_TRUE(served_through(a.get()));
  ASSERT_TRUE(served_through(b.get()));
  auto third = forwarding_client(port(), "");
  EXPECT_TRUE(refused_at_cap(third.get()));
  EXPECT_GE(forwarded("malformed") - malformed_before, 1);
}

/// HAProxy (`option forwardfor`) on a free loopback port in front of graspd, killed on destruction.
class HaproxyProcess {
 public:
  static std::string binary() {
    const char* given = std::getenv("GRASPD_HAPROXY");
    return given ? given : "/usr/sbin/haproxy";
  }

  explicit HaproxyProcess(std::uint16_t backend_port) : port_(free_port()) {
    auto config = dir_.file("haproxy.cfg");
    std::ofstream(config) << "global\n"
                             "    maxconn 100\n"
                             "defaults\n"
                             "    mode http\n"
                             "    option forwardfor\n"
                             "    option http-keep-alive\n"
                             "    timeout connect 3s\n"
                             "    timeout client 60s\n"
                             "    timeout server 60s\n"
                             "    timeout tunnel 1h\n"
                             "frontend graspd\n"
                             "    bind 127.0.0.1:"
                          << port_
                          << "\n"
                             "    default_backend node\n"
                             "backend node\n"
                             "    server graspd 127.0.0.1:"
                          << backend_port << "\n";
    auto path = binary();
    std::vector<std::string> args{path, "-db", "-f", config};
    std::vector<char*> argv;
    for (auto& arg : args) argv.push_back(arg.data());
    argv.push_back(nullptr);
    if (::posix_spawn(&pid_, path.c_str(), nullptr, nullptr, argv.data(), environ) != 0) pid_ = -1;
  }
  ~HaproxyProcess() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  HaproxyProcess(const HaproxyProcess&) = delete;
  HaproxyProcess& operator=(const HaproxyProcess&) = delete;

  bool running() const { return pid_ > 0; }
  std::uint16_t port() const { return port_; }

 private:
  TempDir dir_{"graspd-haproxy"};
  std::uint16_t port_ = 0;
  pid_t pid_ = -1;
};

TEST_F(ProxyE2E, BehindARealHaproxyTwoClientsGetSeparateBudgets) {
  if (::access(HaproxyProcess::binary().c_str(), X_OK) != 0)
    GTEST_SKIP() << "haproxy not found at " << HaproxyProcess::binary()
                 << " (install the Debian package haproxy, or set GRASPD_HAPROXY)";
  HaproxyProcess haproxy(port());
  ASSERT_TRUE(haproxy.running());
  ASSERT_TRUE(wait_until([&] { return http_get(haproxy.port(), "/healthz").status == 200; }, 15s));
  double used_before = forwarded("used");
  // Client 127.0.0.2 fills its budget through the proxy (graspd sees every connection come from
  // 127.0.0.1, the proxy, which names 127.0.0.2 in X-Forwarded-For).
  auto a = forwarding_client(haproxy.port(), "", "127.0.0.2");
  auto b = forwarding_client(haproxy.port(), "", "127.0.0.2");
  ASSERT_TRUE(served_through(a.get()));
  ASSERT_TRUE(served_through(b.get()));
  auto third = forwarding_client(haproxy.port(), "", "127.0.0.2");
  EXPECT_TRUE(refused_at_cap(third.get()));
  // Client 127.0.0.1 is still served through the same proxy.
  auto other = forwarding_client(haproxy.port(), "", "127.0.0.1");
  EXPECT_TRUE(served_through(other.get()));
  EXPECT_GE(forwarded("used") - used_before, 4);
}

/// A git upload-pack POST from loopback carrying `forwarded_for`, whose body stops after two bytes:
/// it holds its git connection. Returns the socket, or -1.
int proxied_slow_upload(std::uint16_t port, const std::string& path,
                        const std::string& forwarded_for) {
  int fd = connect_from(port);
  if (fd < 0) return -1;
  std::string head = "POST " + path +
                     "/git-upload-pack HTTP/1.1\r\nHost: x\r\nX-Forwarded-For: " + forwarded_for +
                     "\r\nContent-Type: application/x-git-upload-pack-request\r\n"
                     "Content-Length: 100000\r\n\r\n00";
  if (!send_all(fd, head)) return ::close(fd), -1;
  return fd;
}

TEST(ProxyGitE2E, TheGitConnectionCapCountsTheForwardedClient) {
  GraspdProcess graspd{GraspdOptions{{{"NGIT_SYNC_ENABLED", "false"},
                                      {"NGIT_TRUSTED_PROXY_CIDRS", "127.0.0.1/32"},
                                      {"NGIT_GIT_MAX_CONNECTIONS_PER_IP", "1"}},
                                     {}}};
  ASSERT_TRUE(graspd.start()) << graspd.stderr_text();
  constexpr std::uint8_t repository_owner = 31;
  auto host = "127.0.0.1:" + std::to_string(graspd.port());
  auto npub = nostr::encode_npub(*nostr::pubkey_from_secret(secret_key(repository_owner)));
  auto announcement = make_event(30617, "",
                                 {{"d", "proxied"},
                                  {"clone", "http://" + host + "/" + npub + "/proxied.git"},
                                  {"relays", "ws://" + host}},
                                 1700000000, repository_owner);
  auto publisher = TestClient::connect(graspd.port());
  ASSERT_TRUE(publisher);
  auto ok = publisher->publish(announcement);
  ASSERT_TRUE(ok && ok->accepted) << (ok ? ok->message : "no OK");
  const std::string path = "/" + npub + "/proxied.git";
  auto refs_for = [&](const std::string& forwarded_for) {
    return http_request(graspd.port(), "GET", path + "/info/refs?service=git-upload-pack",
                        {{"X-Forwarded-For", forwarded_for}})
        .status;
  };
  ASSERT_EQ(refs_for("198.51.100.7"), 200);
  // 198.51.100.7 holds its one git connection (as soon as graspd has read the upload's head)...
  // The upload itself may be the one refused, while graspd still counts the connection of the
  // request before it: an answered upload (readable socket) is opened again.
  int held = -1;
  auto answered = [](int fd) {
    pollfd entry{fd, POLLIN, 0};
    return ::poll(&entry, 1, 0) > 0;
  };
  EXPECT_TRUE(wait_until(
      [&] {
        if (held < 0 || answered(held)) {
          if (held >= 0) ::close(held);
          held = proxied_slow_upload(graspd.port(), path, "198.51.100.7");
        }
        return held >= 0 && refs_for("198.51.100.7") == 503;
      },
      10s));
  // ...while another client behind the same proxy, and the proxy itself, are served.
  EXPECT_EQ(refs_for("198.51.100.8"), 200);
  EXPECT_EQ(http_get(graspd.port(), path + "/info/refs?service=git-upload-pack").status, 200);
  ::close(held);
  EXPECT_EQ(graspd.stop(), 0) << graspd.stderr_text();
}

}  // namespace
}  // namespace graspd::test
