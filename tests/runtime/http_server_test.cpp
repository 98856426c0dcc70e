// The Beast transport in-process: HEAD, keep-alive, size limits, malformed requests, CORS on every
// response, WebSocket upgrade hand-off, the hand-off of other requests with their body unread,
// and stop().
#include <utility>  // before Asio, see docs/toolchain.md §1

#include "runtime/net/http_server.hpp"

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/beast/http.hpp>
#include <future>
#include <thread>

#include "tests/support/http_client.hpp"

namespace graspd::runtime {
namespace {

class HttpServerTest : public ::testing::Test {
 protected:
  void start(HttpServerOptions options = {}) {
    SiteContent site;
    site.landing_page = [](PageDelivery deliver) {
      // From another thread, as the status page cache does.
      std::thread([deliver] { deliver(std::make_shared<const std::string>("landing")); }).detach();
    };
    site.nip11 = [] { return std::string("{}"); };
    site.metrics = [] { return std::string("m 1\n"); };
    server_ = std::make_unique<HttpServer>(io_, options, [site](const HttpRequestInfo& request) {
      return route_request(request, site);
    });
    if (handler_) server_->set_websocket_handler(handler_);
    if (handoff_) server_->set_handoff_handler(handoff_wanted_, handoff_);
    server_->start();
    thread_ = std::thread([this] { io_.run(); });
  }

  void TearDown() override {
    if (server_) server_->stop();
    work_.reset();
    io_.stop();
    if (thread_.joinable()) thread_.join();
  }

  std::uint16_t port() const { return server_->port(); }

  boost::asio::io_context io_;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work_{
      io_.get_executor()};
  std::unique_ptr<HttpServer> server_;
  WebSocketUpgradeHandler handler_;
  HttpHandoffPredicate handoff_wanted_;
  HttpHandoffHandler handoff_;
  std::thread thread_;
};

void expect_cors(const test::HttpResult& result) {
  EXPECT_EQ(result.header("Access-Control-Allow-Origin"), "*");
  EXPECT_FALSE(result.header("Access-Control-Allow-Methods").empty());
  EXPECT_FALSE(result.header("Access-Control-Allow-Headers").empty());
}

TEST_F(HttpServerTest, ServesRoutesWithCors) {
  start();
  auto landing = test::http_get(port(), "/");
  EXPECT_EQ(landing.status, 200);
  EXPECT_EQ(landing.body, "landing");
  expect_cors(landing);
  auto nip11 = test::http_get(port(), "/", {{"Accept", "application/nostr+json"}});
  EXPECT_EQ(nip11.header("Content-Type"), "application/nostr+json");
  expect_cors(nip11);
  auto missing = test::http_get(port(), "/missing");
  EXPECT_EQ(missing.status, 404);
  expect_cors(missing);
  auto options = test::http_request(port(), "OPTIONS", "/");
  EXPECT_EQ(options.status, 204);
  expect_cors(options);
}

TEST_F(HttpServerTest, HeadHasLengthButNoBody) {
  start();
  auto head = test::http_request(port(), "HEAD", "/healthz");
  EXPECT_EQ(head.status, 200);
  EXPECT_EQ(head.header("Content-Length"), "3");
  EXPECT_EQ(head.body, "");
}

TEST_F(HttpServerTest, KeepAliveServesPipelinedRequests) {
  start();
  auto raw = test::http_raw(port(),
                            "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
                            "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(raw.status, 200);
  // Both answers arrive on the one connection.
  EXPECT_NE(raw.body.find("HTTP/1.1 200 OK"), std::string::npos) << raw.body;
}

TEST_F(HttpServerTest, MalformedRequestIs400WithCors) {
  start();
  auto result = test::http_raw(port(), "THIS IS NOT HTTP\r\n\r\n");
  EXPECT_EQ(result.status, 400);
  expect_cors(result);
}

TEST_F(HttpServerTest, OversizedRequestIs413) {
  HttpServerOptions options;
  options.max_body_bytes = 1024;
  options.max_header_bytes = 2048;
  start(options);
  auto body =
      test::http_raw(port(), "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n" +
                                 std::string(100000, 'a'));
  EXPECT_EQ(body.status, 413);
  auto header = test::http_raw(
      port(), "GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + std::string(4096, 'b') + "\r\n\r\n");
  EXPECT_EQ(header.status, 413);
}

TEST_F(HttpServerTest, IdleConnectionIsClosed) {
  HttpServerOptions options;
  options.idle_timeout = std::chrono::seconds(1);
  start(options);
  auto started = std::chrono::steady_clock::now();
  // Sends nothing: the server closes the connection after the idle timeout.
  auto result = test::http_raw(port(), "", std::chrono::seconds(5));
  auto waited = std::chrono::steady_clock::now() - started;
  EXPECT_EQ(result.status, 0);
  EXPECT_LT(waited, std::chrono::seconds(4));
}

constexpr const char* upgrade_request =
    "GET /?x=1 HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
    "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n";

TEST_F(HttpServerTest, UpgradeWithoutHandlerIs426) {
  start();
  EXPECT_EQ(test::http_raw(port(), upgrade_request).status, 426);
}

TEST_F(HttpServerTest, UpgradeIsHandedToTheHandler) {
  std::promise<std::pair<std::string, std::string>> handed;
  handler_ = [&handed](boost::beast::tcp_stream&& stream,
                       boost::beast::http::request<boost::beast::http::string_body>&& request,
                       boost::beast::flat_buffer&&, std::string remote_ip) {
    handed.set_value({std::string(request.target()), remote_ip});
    boost::beast::error_code ignored;
    stream.socket().close(ignored);
  };
  start();
  test::http_raw(port(), upgrade_request);
  auto future = handed.get_future();
  ASSERT_EQ(future.wait_for(std::chrono::seconds(5)), std::future_status::ready);
  auto [target, remote_ip] = future.get();
  EXPECT_EQ(target, "/?x=1");
  EXPECT_EQ(remote_ip, "127.0.0.1");
  EXPECT_EQ(server_->open_connections(), 0u);
}

TEST_F(HttpServerTest, HandoffTakesMatchingRequestsWithTheirBodyUnread) {
  namespace http = boost::beast::http;
  // The handler reads the body itself (as git hosting does, streamed) and answers.
  handoff_wanted_ = [](std::string_view target) { return target.rfind("/take/", 0) == 0; };
  handoff_ = [](boost::beast::tcp_stream&& stream, std::unique_ptr<HeaderParser> header,
                boost::beast::flat_buffer&& buffer, std::string) {
    http::request_parser<http::string_body> parser{std::move(*header)};
    parser.body_limit(10 * 1024 * 1024);  // above the server's own 64 KiB limit
    boost::beast::error_code error;
    http::read(stream, buffer, parser, error);
    http::response<http::string_body> response{http::status::ok, 11};
    response.body() = error ? "error" : "got " + std::to_string(parser.get().body().size());
    response.prepare_payload();
    response.keep_alive(false);
    http::write(stream, response, error);
    stream.socket().shutdown(boost::asio::ip::tcp::socket::shutdown_both, error);
  };
  start();
  std::string body(200 * 1024, 'x');
  auto taken = test::http_raw(port(), "POST /take/it HTTP/1.1\r\nHost: x\r\nContent-Length: " +
                                          std::to_string(body.size()) +
                                          "\r\nConnection: close\r\n\r\n" + body);
  EXPECT_EQ(taken.status, 200);
  EXPECT_EQ(taken.body, "got " + std::to_string(body.size()));
  // Other requests stay with the server and its limits.
  EXPECT_EQ(test::http_get(port(), "/healthz").status, 200);
  auto refused = test::http_raw(port(), "POST /other HTTP/1.1\r\nHost: x\r\nContent-Length: " +
                                            std::to_string(body.size()) + "\r\n\r\n" + body);
  EXPECT_EQ(refused.status, 413);
}

TEST_F(HttpServerTest, StopRefusesNewConnections) {
  start();
  EXPECT_EQ(test::http_get(port(), "/healthz").status, 200);
  auto bound = port();
  server_->stop();
  // Give the posted close a moment to run on the I/O thread.
  for (int i = 0; i < 100 && test::http_get(bound, "/healthz").status != 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(test::http_get(bound, "/healthz").status, 0);
}

TEST_F(HttpServerTest, BindFailureThrows) {
  start();
  boost::asio::io_context other;
  HttpServerOptions options;
  options.port = port();
  // SO_REUSEADDR does not allow two listeners on one port.
  HttpServer second{other, options, [](const HttpRequestInfo&) { return HttpResponse{}; }};
  EXPECT_THROW(second.start(), std::runtime_error);
}

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define GRASPD_SANITIZED 1
#endif
#endif

TEST_F(HttpServerTest, OutOfDescriptorsTheAcceptLoopBacksOffAndRecovers) {
#ifdef GRASPD_SANITIZED
  // UBSan's vptr check probes memory through a pipe: with the descriptor table full every check
  // fails and reports an invalid vptr, so this test runs in the default build only.
  GTEST_SKIP() << "needs a full descriptor table, which the sanitizer runtime cannot work with";
#endif
  start();
  rlimit original{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &original), 0);
  // Fill the descriptor table to a lowered limit, leaving room for a few client sockets only: the
  // server's accept of them then fails with EMFILE for as long as the table stays full.
  rlimit lowered = original;
  lowered.rlim_cur = 256;
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &lowered), 0);
  std::vector<int> fillers;
  for (int fd; (fd = ::dup(0)) >= 0;) fillers.push_back(fd);
  for (int i = 0; i < 3 && !fillers.empty(); ++i) {
    ::close(fillers.back());
    fillers.pop_back();
  }
  std::vector<int> clients;
  for (int i = 0; i < 3; ++i) {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) break;
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(port());
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
    clients.push_back(fd);
  }
  ASSERT_FALSE(clients.empty());
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (server_->accept_failures() == 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::yield();
  ASSERT_GT(server_->accept_failures(), 0u) << "the table is full: accepts must fail";
  // Half a second in the failing state: an immediate retry makes tens of thousands of attempts.
  const auto failures_before = server_->accept_failures();
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  EXPECT_LT(server_->accept_failures() - failures_before, 20u) << "the accept loop spins";

  for (int fd : fillers) ::close(fd);
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &original), 0);
  for (int fd : clients) ::close(fd);
  auto healthy = test::http_get(port(), "/");
  EXPECT_EQ(healthy.status, 200) << "accepting again once descriptors are free";
}

}  // namespace
}  // namespace graspd::runtime
