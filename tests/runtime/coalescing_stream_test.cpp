// BasicCoalescingStream over a scripted next layer: the test decides when (and how far) each socket
// write completes, so merging, back-pressure, failures and teardown ordering are deterministic.
#include "runtime/net/coalescing_stream.hpp"

#include <gtest/gtest.h>

#include <boost/asio/error.hpp>
#include <boost/asio/io_context.hpp>
#include <optional>
#include <string>
#include <vector>

namespace graspd::runtime {
namespace {

namespace net = boost::asio;
using error_code = boost::beast::error_code;

/// What the scripted socket saw; shared because the layer owns the stream itself.
struct Script {
  std::vector<std::string> writes;  // bytes handed to each socket write
  std::function<void(error_code, std::size_t)> outstanding;
  bool busy() const { return static_cast<bool>(outstanding); }
};

class ScriptedStream {
 public:
  using executor_type = net::io_context::executor_type;
  ScriptedStream(net::io_context& io, std::shared_ptr<Script> script)
      : io_(&io), script_(std::move(script)) {}
  executor_type get_executor() { return io_->get_executor(); }

  template <class MutableBuffers, class Handler>
  void async_read_some(const MutableBuffers&, Handler&&) {}

  template <class ConstBuffers, class Handler>
  void async_write_some(const ConstBuffers& buffers, Handler&& handler) {
    EXPECT_FALSE(script_->busy()) << "two socket writes at once";
    std::string bytes(net::buffer_size(buffers), '\0');
    net::buffer_copy(net::buffer(bytes), buffers);
    script_->writes.push_back(std::move(bytes));
    auto h = std::make_shared<std::decay_t<Handler>>(std::forward<Handler>(handler));
    script_->outstanding = [h](error_code ec, std::size_t n) { (*h)(ec, n); };
  }

 private:
  net::io_context* io_;
  std::shared_ptr<Script> script_;
};

using Layer = BasicCoalescingStream<ScriptedStream>;

class CoalescingStreamTest : public ::testing::Test {
 protected:
  std::unique_ptr<Layer> make_layer(std::size_t max_buffered = 1024) {
    return std::make_unique<Layer>(ScriptedStream(io_, script_), max_buffered);
  }
  /// Writes `text` through the layer; the returned slot fills when the caller is completed.
  std::shared_ptr<std::optional<error_code>> write(Layer& layer, const std::string& text) {
    auto done = std::make_shared<std::optional<error_code>>();
    auto keep = std::make_shared<std::string>(text);
    layer.async_write_some(net::buffer(*keep), [done, keep](error_code ec, std::size_t n) {
      EXPECT_EQ(n, ec ? 0 : keep->size());
      *done = ec;
    });
    io_.poll();
    io_.restart();
    return done;
  }
  /// Completes the socket write in flight: `n` bytes accepted (all if unset) or an error.
  void finish_socket_write(error_code ec = {}, std::optional<std::size_t> n = std::nullopt) {
    ASSERT_TRUE(script_->busy());
    auto handler = std::exchange(script_->outstanding, nullptr);
    handler(ec, ec ? 0 : n.value_or(script_->writes.back().size()));
    io_.poll();
    io_.restart();
  }

  net::io_context io_;
  std::shared_ptr<Script> script_ = std::make_shared<Script>();
};

TEST_F(CoalescingStreamTest, HeldFramesLeaveInOneSocketWriteWhenReleased) {
  auto layer = make_layer();
  layer->hold(true);
  std::vector<std::shared_ptr<std::optional<error_code>>> callers;
  for (int i = 0; i < 10; ++i) callers.push_back(write(*layer, "f" + std::to_string(i)));
  for (auto& done : callers) EXPECT_TRUE(done->has_value()) << "caller waited while held";
  EXPECT_TRUE(script_->writes.empty());
  layer->hold(false);
  ASSERT_EQ(script_->writes.size(), 1u);
  EXPECT_EQ(script_->writes[0], "f0f1f2f3f4f5f6f7f8f9");
}

TEST_F(CoalescingStreamTest, WritesDuringASocketWriteJoinTheNextOne) {
  auto layer = make_layer();
  EXPECT_TRUE(write(*layer, "a")->has_value());
  ASSERT_EQ(script_->writes.size(), 1u);
  EXPECT_TRUE(write(*layer, "b")->has_value());
  EXPECT_TRUE(write(*layer, "c")->has_value());
  EXPECT_EQ(script_->writes.size(), 1u);
  finish_socket_write();
  ASSERT_EQ(script_->writes.size(), 2u);
  EXPECT_EQ(script_->writes[1], "bc");
  finish_socket_write();
  EXPECT_FALSE(script_->busy());
}

TEST_F(CoalescingStreamTest, PartialSocketWriteContinuesWithTheRest) {
  auto layer = make_layer();
  write(*layer, "abcdef");
  finish_socket_write({}, 2);
  ASSERT_EQ(script_->writes.size(), 2u);
  EXPECT_EQ(script_->writes[1], "cdef");
  finish_socket_write();
  EXPECT_FALSE(script_->busy());
}

TEST_F(CoalescingStreamTest, CallerWaitsForTheSocketOncePastTheBound) {
  auto layer = make_layer(/*max_buffered=*/8);
  EXPECT_TRUE(write(*layer, "aaaaaa")->has_value());  // in flight, within the bound
  layer->hold(true);                                  // even held, a blocked caller must drain
  auto blocked = write(*layer, "bbbbbb");             // 12 bytes buffered > 8
  EXPECT_FALSE(blocked->has_value());
  finish_socket_write();  // the first write is done; "bbbbbb" is now on the socket
  ASSERT_EQ(script_->writes.size(), 2u);
  EXPECT_EQ(script_->writes[1], "bbbbbb");
  EXPECT_FALSE(blocked->has_value()) << "completed before its bytes reached the socket";
  finish_socket_write();
  ASSERT_TRUE(blocked->has_value());
  EXPECT_FALSE(blocked->value());
}

// The session's batch and one of Beast's control frames (a pong) can both wait past the bound.
TEST_F(CoalescingStreamTest, TwoCallersPastTheBoundAreBothCompletedOnceTheirBytesLeft) {
  auto layer = make_layer(/*max_buffered=*/8);
  write(*layer, "aaaaaa");               // in flight
  auto batch = write(*layer, "bbbbbb");  // 12 bytes buffered > 8: waits
  auto pong = write(*layer, "pp");       // joins the same pending bytes: waits too
  EXPECT_FALSE(batch->has_value());
  EXPECT_FALSE(pong->has_value());
  finish_socket_write();
  ASSERT_EQ(script_->writes.size(), 2u);
  EXPECT_EQ(script_->writes[1], "bbbbbbpp");
  EXPECT_FALSE(batch->has_value());
  finish_socket_write();
  ASSERT_TRUE(batch->has_value()) << "the first blocked caller was lost";
  ASSERT_TRUE(pong->has_value());
  EXPECT_FALSE(batch->value());
  EXPECT_FALSE(pong->value());
}

TEST_F(CoalescingStreamTest, SocketFailureReachesTheBlockedCallerAndEveryLaterOne) {
  auto layer = make_layer(/*max_buffered=*/4);
  write(*layer, "aaaa");
  auto blocked = write(*layer, "bbbb");
  EXPECT_FALSE(blocked->has_value());
  error_code broken = net::error::broken_pipe;
  finish_socket_write(broken);
  ASSERT_TRUE(blocked->has_value());
  EXPECT_EQ(blocked->value(), broken);
  auto later = write(*layer, "c");
  ASSERT_TRUE(later->has_value());
  EXPECT_EQ(later->value(), broken);
  EXPECT_EQ(script_->writes.size(), 1u);
}

TEST_F(CoalescingStreamTest, DrainedRunsOnlyAfterEverythingReachedTheSocket) {
  auto layer = make_layer();
  layer->hold(true);
  write(*layer, "close-frame");
  bool drained = false;
  layer->when_drained([&] { drained = true; });  // releases the hold
  ASSERT_EQ(script_->writes.size(), 1u);
  EXPECT_FALSE(drained);
  finish_socket_write();
  EXPECT_TRUE(drained);
}

TEST_F(CoalescingStreamTest, CompletionAfterTheLayerIsGoneIsIgnored) {
  auto layer = make_layer();
  write(*layer, "a");
  write(*layer, "b");
  layer.reset();
  finish_socket_write();  // must not touch the destroyed layer (ASan checks it)
  EXPECT_EQ(script_->writes.size(), 1u);
}

}  // namespace
}  // namespace graspd::runtime
