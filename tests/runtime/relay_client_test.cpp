// The outbound transport against an in-process relay that floods NOTICE frames: a handler that
// does not report what it was handed consumed stops the reads at the inbound bound, so a peer
// cannot grow our memory at line rate; a handler that keeps up receives everything.
#include <utility>  // before Asio, see docs/toolchain.md §1

#include "runtime/net/relay_client.hpp"

#include <gtest/gtest.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <chrono>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>

#include "runtime/net/http_server.hpp"
#include "runtime/net/ws_session.hpp"
#include "tests/support/loopback_ws_server.hpp"
#include "tests/support/wait_until.hpp"

namespace graspd::runtime {
namespace {

using namespace std::chrono_literals;

constexpr std::size_t frame_bytes = 64 * 1024;
constexpr std::size_t flood_frames = 640;  // 40 MiB
constexpr std::size_t flood_bytes = flood_frames * frame_bytes;

/// A NOTICE of exactly `frame_bytes`.
WsFrame notice_frame() {
  const std::string head = "[\"NOTICE\",\"";
  const std::string tail = "\"]";
  return std::make_shared<const std::string>(
      head + std::string(frame_bytes - head.size() - tail.size(), 'n') + tail);
}

/// The relay's side: floods every connection with NOTICEs as soon as it opens.
class FloodingHandler final : public WsSessionHandler {
 public:
  void on_open(std::shared_ptr<WsConnection> connection) override {
    std::vector<WsFrame> frames(flood_frames, notice_frame());
    connection->send_batch(std::move(frames));
  }
  void on_text(std::string&&) override {}
  void on_binary() override {}
  void on_oversize() override {}
  void on_close() override {}
};

/// What the client-side handler saw; shared with the test.
struct Received {
  std::mutex mutex;
  std::size_t bytes = 0;
  bool closed = false;
  std::string close_reason;
  /// Report what arrives consumed (a handler that keeps up) or never (one that fell behind).
  bool report = false;
  std::size_t unreported = 0;
  // Weak: the client owns the handler, which shares this.
  std::weak_ptr<RelayClient> client;

  /// Reports the bytes not reported yet, once the client is known. Called with `mutex` held.
  void flush() {
    if (!report || unreported == 0) return;
    if (auto c = client.lock()) {
      c->consumed(unreported);
      unreported = 0;
    }
  }
};

class CountingHandler final : public RelayClientHandler {
 public:
  explicit CountingHandler(std::shared_ptr<Received> received) : received_(std::move(received)) {}
  void on_open(PeerLimits, bool) override {}
  void on_message(std::string&& text) override {
    std::lock_guard lock(received_->mutex);
    received_->bytes += text.size();
    received_->unreported += text.size();
    received_->flush();
  }
  void on_close(bool, std::string reason) override {
    std::lock_guard lock(received_->mutex);
    received_->closed = true;
    received_->close_reason = std::move(reason);
  }

 private:
  std::shared_ptr<Received> received_;
};

using test::wait_until;

class RelayClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    WsOptions options;
    options.compression = false;
    // The whole flood fits the relay's outbound queue: it waits in TCP rather than being dropped,
    // so what the client reads is up to the client alone.
    options.max_outbound_bytes = 2 * flood_bytes;
    server_.start(std::move(options),
                  [](const std::string&) { return std::make_unique<FloodingHandler>(); });
  }
  void TearDown() override {
    if (client_) client_->close();
    client_.reset();
    server_.stop();
  }

  void connect(bool report) {
    received_->report = report;
    auto url = parse_url("ws://127.0.0.1:" + std::to_string(server_.port()) + "/");
    ASSERT_TRUE(url);
    RelayClientOptions options;
    options.allow_private_addresses = true;
    options.fetch_relay_info = false;
    client_ = RelayClient::start(server_.io(), *url, options,
                                 std::make_shared<CountingHandler>(received_));
    std::lock_guard lock(received_->mutex);
    received_->client = client_;
    received_->flush();
  }
  std::size_t bytes_received() {
    std::lock_guard lock(received_->mutex);
    return received_->bytes;
  }
  bool closed() {
    std::lock_guard lock(received_->mutex);
    return received_->closed;
  }

  test::LoopbackWsServer server_;
  std::shared_ptr<Received> received_ = std::make_shared<Received>();
  std::shared_ptr<RelayClient> client_;
};

TEST_F(RelayClientTest, AHandlerThatReportsNothingConsumedStopsTheReadsAtTheBound) {
  connect(/*report=*/false);
  const std::size_t bound = RelayClientOptions{}.unconsumed_bound();
  ASSERT_LT(bound + frame_bytes, flood_bytes);
  // The reads run until the bound is passed, by one frame at most, and stay stopped there.
  ASSERT_TRUE(wait_until([&] { return bytes_received() > bound || closed(); }, 20s))
      << bytes_received() << " bytes received";
  EXPECT_FALSE(closed());
  EXPECT_FALSE(wait_until([&] { return bytes_received() > bound + frame_bytes; }, 1s))
      << "kept reading: " << bytes_received() << " bytes handed over, none consumed, bound "
      << bound;
}

TEST_F(RelayClientTest, AHandlerThatReportsWhatItConsumedReceivesTheWholeFlood) {
  connect(/*report=*/true);
  EXPECT_TRUE(wait_until([&] { return bytes_received() == flood_bytes || closed(); }, 30s))
      << bytes_received() << " of " << flood_bytes << " bytes";
  EXPECT_EQ(bytes_received(), flood_bytes);
  EXPECT_FALSE(closed());
}

}  // namespace
}  // namespace graspd::runtime

namespace graspd::runtime {
namespace {

namespace net = boost::asio;
using tcp = net::ip::tcp;

/// A port nothing listens on, and one where an HTTP server declines every
/// WebSocket handshake: to an announcement's author the two must look alike.
class ConnectFailureTest : public ::testing::Test {
 protected:
  ConnectFailureTest() : guard_(net::make_work_guard(io_)), thread_([this] { io_.run(); }) {}
  ~ConnectFailureTest() override {
    guard_.reset();
    io_.stop();
    thread_.join();
  }

  std::uint16_t closed_port() {
    tcp::acceptor acceptor(io_, tcp::endpoint(net::ip::make_address("127.0.0.1"), 0));
    return acceptor.local_endpoint().port();  // closed when the acceptor goes
  }

  /// Answers one connection with a 404 and closes it.
  std::uint16_t declining_http_port() {
    declining_.emplace(io_, tcp::endpoint(net::ip::make_address("127.0.0.1"), 0));
    declining_->async_accept([](boost::system::error_code ec, tcp::socket socket) {
      if (ec) return;
      auto shared = std::make_shared<tcp::socket>(std::move(socket));
      static const std::string answer =
          "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
      net::async_write(*shared, net::buffer(answer),
                       [shared](boost::system::error_code, std::size_t) {});
    });
    return declining_->local_endpoint().port();
  }

  std::string failure_of(std::uint16_t port, bool detailed) {
    auto received = std::make_shared<Received>();
    auto url = parse_url("ws://127.0.0.1:" + std::to_string(port) + "/");
    RelayClientOptions options;
    options.allow_private_addresses = true;
    options.fetch_relay_info = false;
    options.detailed_connect_errors = detailed;
    auto client =
        RelayClient::start(io_, *url, options, std::make_shared<CountingHandler>(received));
    EXPECT_TRUE(wait_until(
        [&] {
          std::lock_guard lock(received->mutex);
          return received->closed;
        },
        10s));
    std::lock_guard lock(received->mutex);
    return received->close_reason;
  }

  net::io_context io_;
  net::executor_work_guard<net::io_context::executor_type> guard_;
  std::optional<tcp::acceptor> declining_;
  std::thread thread_;
};

TEST_F(ConnectFailureTest, UntrustedRelaysReportOneReasonForClosedAndDecliningPorts) {
  EXPECT_EQ(failure_of(closed_port(), false), "cannot connect");
  EXPECT_EQ(failure_of(declining_http_port(), false), "cannot connect");
}

TEST_F(ConnectFailureTest, TrustedRelaysSayWhyTheConnectionFailed) {
  auto refused = failure_of(closed_port(), true);
  EXPECT_NE(refused.find("refused"), std::string::npos) << refused;
  auto declined = failure_of(declining_http_port(), true);
  EXPECT_NE(declined.find("handshake"), std::string::npos) << declined;
}

}  // namespace
}  // namespace graspd::runtime
