// The WebSocket transport over loopback with a handler that records what it is handed: a handler
// that falls behind stops the reads (inbound back-pressure) until it reports the text consumed.
#include <utility>  // before Asio, see docs/toolchain.md §1

#include "runtime/net/ws_session.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/write.hpp>
#include <chrono>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "runtime/net/http_server.hpp"
#include "runtime/net/ws_client.hpp"
#include "tests/support/loopback_ws_server.hpp"
#include "tests/support/wait_until.hpp"

namespace graspd::runtime {
namespace {

using namespace std::chrono_literals;

/// What the server-side handler saw; shared with the test.
struct Seen {
  std::mutex mutex;
  // Weak, as in the relay: the connection owns the handler, which shares this.
  std::weak_ptr<WsConnection> connection;
  std::size_t frames = 0;
  std::size_t bytes = 0;
};

class RecordingHandler final : public WsSessionHandler {
 public:
  explicit RecordingHandler(std::shared_ptr<Seen> seen) : seen_(std::move(seen)) {}
  void on_open(std::shared_ptr<WsConnection> connection) override {
    std::lock_guard lock(seen_->mutex);
    seen_->connection = connection;
  }
  void on_text(std::string&& text) override {
    std::lock_guard lock(seen_->mutex);
    ++seen_->frames;
    seen_->bytes += text.size();
  }
  void on_binary() override {}
  void on_oversize() override {}
  void on_close() override {}

 private:
  std::shared_ptr<Seen> seen_;
};

using test::wait_until;

class WsTransportTest : public ::testing::Test {
 protected:
  void start(WsOptions options) {
    server_.start(std::move(options), [seen = seen_](const std::string&) {
      return std::make_unique<RecordingHandler>(seen);
    });
  }
  void TearDown() override {
    client_.reset();
    server_.stop();
  }
  /// The server side of the client's connection, once the session opened it (null after 5 s).
  std::shared_ptr<WsConnection> accepted_connection() {
    std::shared_ptr<WsConnection> connection;
    wait_until(
        [&] {
          std::lock_guard lock(seen_->mutex);
          connection = seen_->connection.lock();
          return connection != nullptr;
        },
        std::chrono::seconds(5));
    return connection;
  }
  std::size_t frames_seen() {
    std::lock_guard lock(seen_->mutex);
    return seen_->frames;
  }

  test::LoopbackWsServer server_;
  std::shared_ptr<Seen> seen_ = std::make_shared<Seen>();
  std::unique_ptr<WsClient> client_;
};

TEST_F(WsTransportTest, AHandlerThatFallsBehindStopsTheReadsUntilItCatchesUp) {
  WsOptions options;
  options.compression = false;
  options.max_inbound_backlog = 64 * 1024;
  start(options);
  auto connected = WsClient::connect("127.0.0.1", server_.port(), "/", {});
  ASSERT_TRUE(connected) << connected.error().message;
  client_ = std::move(*connected);
  const std::string frame(16 * 1024, 'x');
  constexpr std::size_t sent = 40;
  for (std::size_t i = 0; i < sent; ++i) client_->send(frame);

  // 64 KiB of backlog allows four frames; the fifth goes over and the reads stop there.
  ASSERT_TRUE(wait_until([&] { return frames_seen() >= 5; }, 5s));
  EXPECT_FALSE(wait_until([&] { return frames_seen() > 5; }, 300ms))
      << "kept reading with " << frames_seen() << " frames not consumed";

  std::shared_ptr<WsConnection> connection;
  {
    std::lock_guard lock(seen_->mutex);
    connection = seen_->connection.lock();
  }
  ASSERT_TRUE(connection);
  // Consuming everything reported so far resumes the reads; keep consuming until all arrived.
  std::size_t reported = 0;
  ASSERT_TRUE(wait_until(
      [&] {
        std::size_t bytes;
        {
          std::lock_guard lock(seen_->mutex);
          bytes = seen_->bytes;
        }
        connection->consumed(bytes - reported);
        reported = bytes;
        return frames_seen() == sent;
      },
      5s))
      << frames_seen() << " of " << sent << " frames";
}

TEST(WsTransportPause, APausedSessionIsReleasedWithItsIoContextWhenNoCloseEverRuns) {
  auto seen = std::make_shared<Seen>();
  auto server = std::make_unique<test::LoopbackWsServer>();
  WsOptions options;
  options.compression = false;
  options.max_inbound_backlog = 64 * 1024;
  server->start(options,
                [seen](const std::string&) { return std::make_unique<RecordingHandler>(seen); });
  auto connected = WsClient::connect("127.0.0.1", server->port(), "/", {});
  ASSERT_TRUE(connected) << connected.error().message;
  for (int i = 0; i < 10; ++i) (*connected)->send(std::string(16 * 1024, 'x'));
  // The fifth frame takes the backlog over 64 KiB: the session stops reading and waits.
  ASSERT_TRUE(wait_until(
      [&] {
        std::lock_guard lock(seen->mutex);
        return seen->frames >= 5;
      },
      5s));
  std::weak_ptr<WsConnection> session;
  {
    std::lock_guard lock(seen->mutex);
    session = seen->connection;
  }
  ASSERT_FALSE(session.expired());
  server->halt();
  server.reset();
  EXPECT_TRUE(session.expired()) << "a paused session outlived its io_context";
  (*connected)->close();
}

/// A WebSocket client that opens the connection and then neither sends nor reads anything.
class SilentClient {
 public:
  explicit SilentClient(std::uint16_t port) : socket_(io_) {
    socket_.connect({boost::asio::ip::make_address("127.0.0.1"), port});
    const std::string upgrade =
        "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n";
    boost::asio::write(socket_, boost::asio::buffer(upgrade));
    boost::asio::read_until(socket_, boost::asio::dynamic_buffer(received_), "\r\n\r\n");
    received_.erase(0, received_.find("\r\n\r\n") + 4);
    socket_.non_blocking(true);
  }
  /// Reads what arrived without waiting; true once the server closed the connection.
  bool closed() {
    char chunk[512];
    boost::system::error_code ec;
    for (;;) {
      const auto n = socket_.read_some(boost::asio::buffer(chunk), ec);
      if (ec == boost::asio::error::would_block) return false;
      if (ec) return true;
      received_.append(chunk, n);
    }
  }
  const std::string& received() const { return received_; }

 private:
  boost::asio::io_context io_;
  boost::asio::ip::tcp::socket socket_;
  std::string received_;
};

// The idle pings: however quiet a client is, it stays while it answers them; one that neither
// sends nor answers is pinged after an interval and dropped after one more.
TEST_F(WsTransportTest, AQuietClientThatAnswersPingsStaysAndASilentOneIsDropped) {
  WsOptions options;
  options.compression = false;
  options.idle_ping_interval = 1s;
  start(options);
  auto connected = WsClient::connect("127.0.0.1", server_.port(), "/", {});
  ASSERT_TRUE(connected) << connected.error().message;
  client_ = std::move(*connected);  // reads all along, so Beast answers each ping with a pong
  ASSERT_TRUE(accepted_connection());

  SilentClient silent(server_.port());
  const auto opened = std::chrono::steady_clock::now();
  ASSERT_TRUE(wait_until([&] { return silent.closed(); }, 10s)) << "a silent client stayed";
  EXPECT_GE(std::chrono::steady_clock::now() - opened, 1s) << "dropped before any ping";
  const std::string ping_frame("\x89\x00", 2);  // FIN + ping, no payload, unmasked
  EXPECT_NE(silent.received().find(ping_frame), std::string::npos) << "dropped unpinged";

  // The quiet client has been as silent as the dropped one, and longer.
  EXPECT_FALSE(wait_until([&] { return !client_->is_open(); }, 1500ms))
      << "a client answering the pings was dropped";
}

TEST_F(WsTransportTest, AFrameInPiecesArrivesAsOneMessageAndDrainRequestsFireOnceWritten) {
  WsOptions options;
  options.compression = false;
  start(options);
  auto connected = WsClient::connect("127.0.0.1", server_.port(), "/", {});
  ASSERT_TRUE(connected) << connected.error().message;
  client_ = std::move(*connected);
  auto connection = accepted_connection();
  ASSERT_TRUE(connection);
  auto body = std::make_shared<const std::string>(std::string(300 * 1024, 'b'));
  std::atomic<int> drained{0};
  for (int i = 0; i < 3; ++i) connection->send(Frame("[head" + std::to_string(i) + ",", body, "]"));
  connection->when_drained(0, [&] { ++drained; });
  for (int i = 0; i < 3; ++i) {
    auto message = client_->receive(5s);
    ASSERT_TRUE(message);
    EXPECT_EQ(*message, "[head" + std::to_string(i) + "," + *body + "]");
  }
  EXPECT_TRUE(wait_until([&] { return drained == 1; }, 5s));
  connection->when_drained(0, [&] { ++drained; });
  EXPECT_TRUE(wait_until([&] { return drained == 2; }, 5s)) << "an empty queue answers at once";
}

// Beast's own client reads the frames the session compresses itself: event frames (the second
// delivery of a body from the shared cache), short ones sent plain, a large one; and it can still
// send compressed messages, which Beast inflates.
TEST_F(WsTransportTest, BeastsClientReadsTheCompressedFramesIntact) {
  WsOptions options;
  options.compression = true;
  start(options);
  std::string error;
  WsClient::Options client_options;
  client_options.compression = true;
  auto connected = WsClient::connect("127.0.0.1", server_.port(), "/", std::move(client_options));
  ASSERT_TRUE(connected) << connected.error().message;
  client_ = std::move(*connected);
  EXPECT_TRUE(client_->compressed());
  auto connection = accepted_connection();
  ASSERT_TRUE(connection);
  std::vector<Frame> frames;
  auto body =
      std::make_shared<const std::string>("{\"content\":\"" + std::string(600, 'c') + "\"}");
  frames.emplace_back("[\"EVENT\",\"a\",", body, "]");
  frames.emplace_back(std::make_shared<const std::string>("[\"EOSE\",\"a\"]"));
  frames.emplace_back("[\"EVENT\",\"b\",", body, "]");
  frames.emplace_back(std::make_shared<const std::string>(std::string(300 * 1024, 'z')));
  connection->send_batch(frames);
  for (const auto& frame : frames) {
    auto message = client_->receive(5s);
    ASSERT_TRUE(message);
    EXPECT_EQ(*message, frame.text());
  }
  client_->send(std::string(4096, 'u'));
  EXPECT_TRUE(wait_until([&] { return frames_seen() == 1; }, 5s));
}

}  // namespace
}  // namespace graspd::runtime
