// The real graspd binary on loopback: HTTP endpoints, NIP-11, CORS, /metrics through promtool,
// graceful shutdown on SIGTERM.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <rapidjson/document.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>

#include "tests/support/graspd_process.hpp"
#include "tests/support/http_client.hpp"

namespace graspd::test {
namespace {

constexpr const char* npub = "npub10elfcs4fr0l0r8af98jlmgdh9c8tcxjvz9qkw038js35mp4dma8qzvjptg";

void expect_cors(const HttpResult& result) {
  EXPECT_EQ(result.header("Access-Control-Allow-Origin"), "*");
  EXPECT_FALSE(result.header("Access-Control-Allow-Headers").empty());
  EXPECT_FALSE(result.header("Access-Control-Allow-Methods").empty());
}

class DaemonHttp : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    graspd_ = new GraspdProcess({.env = {{"NGIT_RELAY_NAME", "integration relay"},
                                         {"NGIT_RELAY_DESCRIPTION", "for tests"},
                                         {"NGIT_OWNER_NPUB", npub}},
                                 .args = {"--max-message-bytes", "65536"}});
    ASSERT_TRUE(graspd_->start()) << graspd_->stderr_text();
  }
  static void TearDownTestSuite() {
    delete graspd_;
    graspd_ = nullptr;
  }
  static std::uint16_t port() { return graspd_->port(); }
  static inline GraspdProcess* graspd_ = nullptr;
};

TEST_F(DaemonHttp, Nip11Document) {
  auto result = http_get(port(), "/", {{"Accept", "application/nostr+json"}});
  ASSERT_EQ(result.status, 200) << result.error;
  EXPECT_EQ(result.header("Content-Type"), "application/nostr+json");
  expect_cors(result);
  rapidjson::Document document;
  document.Parse(result.body.c_str(), result.body.size());
  ASSERT_FALSE(document.HasParseError()) << result.body;
  EXPECT_STREQ(document["name"].GetString(), "integration relay");
  EXPECT_STREQ(document["description"].GetString(), "for tests");
  EXPECT_STREQ(document["pubkey"].GetString(),
               "7e7e9c42a91bfef19fa929e5fda1b72e0ebc1a4c1141673e2794234d86addf4e");
  EXPECT_TRUE(document["software"].IsString());
  EXPECT_TRUE(document["version"].IsString());
  ASSERT_TRUE(document["supported_nips"].IsArray());
  EXPECT_GE(document["supported_nips"].Size(), 2u);
  EXPECT_TRUE(document["supported_grasps"].IsArray());
  EXPECT_EQ(document["limitation"]["max_message_length"].GetInt64(), 65536);
}

TEST_F(DaemonHttp, LandingPage) {
  auto result = http_get(port(), "/");
  ASSERT_EQ(result.status, 200) << result.error;
  EXPECT_EQ(result.header("Content-Type"), "text/html; charset=utf-8");
  EXPECT_NE(result.body.find("integration relay"), std::string::npos);
  EXPECT_NE(result.body.find("GRASP"), std::string::npos);
  expect_cors(result);
  // The plots' data: an empty series from the start (no 404 before the first sample).
  auto history = http_get(port(), "/api/status_history");
  EXPECT_EQ(history.status, 200);
  EXPECT_EQ(history.body.rfind(R"({"bucket_secs":3600,"now":)", 0), 0u) << history.body;
}

TEST_F(DaemonHttp, HealthzHeadOptionsAndNotFound) {
  auto health = http_get(port(), "/healthz");
  EXPECT_EQ(health.status, 200);
  EXPECT_EQ(health.body, "ok\n");
  expect_cors(health);
  auto head = http_request(port(), "HEAD", "/healthz");
  EXPECT_EQ(head.status, 200);
  EXPECT_EQ(head.body, "");
  auto options = http_request(port(), "OPTIONS", "/");
  EXPECT_EQ(options.status, 204);
  expect_cors(options);
  auto missing = http_get(port(), "/no/such/path");
  EXPECT_EQ(missing.status, 404);
  expect_cors(missing);
  auto bad = http_raw(port(), "\x01\x02 garbage\r\n\r\n");
  EXPECT_EQ(bad.status, 400);
  expect_cors(bad);
}

TEST_F(DaemonHttp, MetricsPassPromtool) {
  auto result = http_get(port(), "/metrics");
  ASSERT_EQ(result.status, 200) << result.error;
  expect_cors(result);
  for (auto name : {"graspd_build_info{version=", "graspd_start_time_seconds",
                    "graspd_uptime_seconds", "graspd_resident_memory_bytes", "graspd_open_fds"}) {
    EXPECT_NE(result.body.find(name), std::string::npos) << name;
  }
  std::string output;
  EXPECT_EQ(promtool_check_metrics(result.body, &output), 0) << output << "\n" << result.body;
}

TEST(DaemonLifecycle, SigtermExitsZeroWithinFiveSeconds) {
  GraspdProcess graspd;
  ASSERT_TRUE(graspd.start()) << graspd.stderr_text();
  // An idle keep-alive connection must not delay the shutdown.
  auto code = graspd.stop(std::chrono::seconds(5));
  EXPECT_EQ(code, 0) << graspd.stderr_text();
  EXPECT_LT(graspd.last_stop_duration(), std::chrono::seconds(5));
  auto log = graspd.stderr_text();
  EXPECT_NE(log.find("listening on 127.0.0.1:"), std::string::npos) << log;
  EXPECT_NE(log.find("shutting down on SIGTERM"), std::string::npos) << log;
  EXPECT_NE(log.find("[daemon] stopped"), std::string::npos) << log;
}

/// A client connection left open: `request_text` written, nothing read, closed by the destructor.
class HeldConnection {
 public:
  HeldConnection(std::uint16_t port, const std::string& request_text)
      : fd_(::socket(AF_INET, SOCK_STREAM, 0)) {
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(port);
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0 &&
                 ::send(fd_, request_text.data(), request_text.size(), MSG_NOSIGNAL) ==
                     static_cast<ssize_t>(request_text.size());
  }
  ~HeldConnection() { ::close(fd_); }
  bool connected() const { return connected_; }

 private:
  int fd_;
  bool connected_ = false;
};

TEST(DaemonLifecycle, OpenConnectionsDoNotDelayShutdown) {
  GraspdProcess graspd;
  ASSERT_TRUE(graspd.start()) << graspd.stderr_text();
  HeldConnection idle_keep_alive(graspd.port(), "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
  HeldConnection half_request(graspd.port(), "GET /heal");
  ASSERT_TRUE(idle_keep_alive.connected());
  ASSERT_TRUE(half_request.connected());
  // Let graspd answer the first and start waiting on both.
  EXPECT_EQ(http_get(graspd.port(), "/healthz").status, 200);
  // Waiting on them would take the 30 s keep-alive idle timeout: exiting by itself within 5 s
  // (stop() returns -1 after killing it) shows it did not, without timing a loaded machine closer.
  EXPECT_EQ(graspd.stop(std::chrono::seconds(5)), 0) << graspd.stderr_text();
}

TEST(DaemonLifecycle, SigintAlsoStopsCleanly) {
  GraspdProcess graspd;
  ASSERT_TRUE(graspd.start()) << graspd.stderr_text();
  ::kill(graspd.pid(), SIGINT);
  // stop() sends SIGTERM too; the first signal already started the shutdown.
  EXPECT_EQ(graspd.stop(), 0) << graspd.stderr_text();
  EXPECT_NE(graspd.stderr_text().find("shutting down on SIGINT"), std::string::npos);
}

TEST(DaemonLifecycle, RestartOnSameDataDirAndPort) {
  GraspdProcess graspd;
  ASSERT_TRUE(graspd.start()) << graspd.stderr_text();
  auto first_port = graspd.port();
  graspd.kill();
  EXPECT_FALSE(graspd.running());
  ASSERT_TRUE(graspd.restart()) << graspd.stderr_text();
  EXPECT_EQ(graspd.port(), first_port);
  EXPECT_EQ(http_get(graspd.port(), "/healthz").status, 200);
  EXPECT_EQ(graspd.stop(), 0);
}

TEST(DaemonLifecycle, MetricsCanBeDisabled) {
  GraspdProcess graspd({.env = {{"NGIT_METRICS_ENABLED", "false"}}, .args = {}});
  ASSERT_TRUE(graspd.start()) << graspd.stderr_text();
  EXPECT_EQ(http_get(graspd.port(), "/metrics").status, 404);
  EXPECT_EQ(graspd.stop(), 0);
}

TEST(DaemonLifecycle, BusyPortFailsWithExitOne) {
  GraspdProcess first;
  ASSERT_TRUE(first.start()) << first.stderr_text();
  auto result =
      GraspdProcess::run_to_exit({"--bind-address", "127.0.0.1:" + std::to_string(first.port())});
  EXPECT_EQ(result.exit_code, 1) << result.stderr_text;
  EXPECT_NE(result.stderr_text.find("cannot start"), std::string::npos) << result.stderr_text;
}

}  // namespace
}  // namespace graspd::test
