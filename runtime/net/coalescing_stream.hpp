// A stream layer between Beast's websocket::stream and the TCP stream that merges the frames
// written in a burst into one socket write. A REQ answering 500 events, or the OKs of one store
// commit, then costs a handful of send() calls instead of one each, and the reader wakes up once
// per burst instead of once per frame.
//
// Only the WebSocket server includes this (Beast stays out of every other TU).
#pragma once

#include <utility>  // before Asio, see docs/toolchain.md §1

#include <boost/asio/buffer.hpp>
#include <boost/asio/post.hpp>
#include <boost/beast/core/bind_handler.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/websocket/teardown.hpp>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace graspd::runtime {

/// How it works. Each write is taken whole (never interleaved with another) and copied into a
/// pending buffer, and the caller is completed at once, so it can hand over the next frame while
/// the socket write is in flight; whatever accumulated meanwhile leaves in the next single socket
/// write. Two callers can write: the session (its framed messages) and Beast (its control frames:
/// ping, pong, close), each one write at a time. The session `hold`s the buffer while it still has
/// frames queued, so a burst leaves together. Back-pressure is kept: once `max_buffered` bytes
/// wait, the caller is completed only after the socket accepted them, so a reader that does not
/// read still stalls Beast and, behind it, the session's bounded outbound queue.
template <class NextLayer>
class BasicCoalescingStream {
 public:
  using next_layer_type = NextLayer;
  using executor_type = typename next_layer_type::executor_type;
  using error_code = boost::beast::error_code;

  explicit BasicCoalescingStream(next_layer_type&& next, std::size_t max_buffered = 256 * 1024)
      : next_(std::move(next)), state_(std::make_shared<State>()) {
    // Not movable: websocket::stream builds its next layer in place, so `this` stays valid.
    state_->layer = this;
    state_->max_buffered = max_buffered;
  }
  ~BasicCoalescingStream() { state_->layer = nullptr; }
  BasicCoalescingStream(const BasicCoalescingStream&) = delete;
  BasicCoalescingStream& operator=(const BasicCoalescingStream&) = delete;

  executor_type get_executor() noexcept { return next_.get_executor(); }
  next_layer_type& next_layer() noexcept { return next_; }
  const next_layer_type& next_layer() const noexcept { return next_; }

  /// True: keep buffering (more frames follow). False: write what is pending now.
  void hold(bool on) {
    state_->hold = on;
    if (!on) state_->flush();
  }

  template <class MutableBufferSequence, class ReadHandler>
  void async_read_some(const MutableBufferSequence& buffers, ReadHandler&& handler) {
    next_.async_read_some(buffers, std::forward<ReadHandler>(handler));
  }

  template <class ConstBufferSequence, class WriteHandler>
  void async_write_some(const ConstBufferSequence& buffers, WriteHandler&& handler) {
    auto& st = *state_;
    auto size = boost::asio::buffer_size(buffers);
    if (st.failure) return complete(std::forward<WriteHandler>(handler), st.failure, 0);
    for (auto it = boost::asio::buffer_sequence_begin(buffers);
         it != boost::asio::buffer_sequence_end(buffers); ++it) {
      boost::asio::const_buffer piece(*it);
      st.pending.append(static_cast<const char*>(piece.data()), piece.size());
    }
    if (!st.hold || st.pending.size() >= st.max_buffered) st.flush();
    if (st.pending.size() + st.inflight.size() <= st.max_buffered)
      return complete(std::forward<WriteHandler>(handler), {}, size);
    // Over the bound: answer once the socket has taken these bytes.
    st.blocked.push_back(
        {st.flushes + (st.pending.empty() ? 0 : 1),
         [this, h = std::make_shared<std::decay_t<WriteHandler>>(std::move(handler)),
          size](error_code ec) mutable { complete(std::move(*h), ec, ec ? 0 : size); }});
  }

  /// Runs `fn` once everything written so far has reached the socket (close handshake).
  void when_drained(std::function<void()> fn) {
    state_->hold = false;
    state_->flush();
    if (!state_->writing) return fn();
    state_->drained = std::move(fn);
  }

 private:
  struct State : std::enable_shared_from_this<State> {
    BasicCoalescingStream* layer = nullptr;  // null once the layer is gone
    std::string pending;
    std::string inflight;
    std::size_t written = 0;
    std::size_t max_buffered = 0;
    std::size_t flushes = 0;  // socket writes started
    bool hold = false;
    bool writing = false;
    error_code failure;
    struct Blocked {
      std::size_t until;  // completed once this many socket writes have finished
      std::function<void(error_code)> complete;
    };
    std::vector<Blocked> blocked;  // callers past the bound, oldest first
    std::function<void()> drained;

    void flush() {
      if (writing || pending.empty() || !layer || failure) return;
      inflight.swap(pending);
      written = 0;
      writing = true;
      ++flushes;
      write_rest();
    }
    void write_rest() {
      layer->next_.async_write_some(
          boost::asio::buffer(inflight.data() + written, inflight.size() - written),
          [self = this->shared_from_this()](error_code ec, std::size_t n) {
            self->on_written(ec, n);
          });
    }
    void on_written(error_code ec, std::size_t n) {
      if (!layer) return;
      written += n;
      if (!ec && written < inflight.size()) return write_rest();
      writing = false;
      inflight.clear();
      if (ec) failure = ec;
      release_blocked();
      // A blocked caller cannot hand over more frames, so its bytes must leave even under hold.
      if (!ec && (!hold || !blocked.empty() || pending.size() >= max_buffered)) flush();
      if (!writing && drained) std::exchange(drained, nullptr)();
    }
    void release_blocked() {
      auto due = blocked.begin();
      while (due != blocked.end() && (failure || due->until <= flushes)) ++due;
      std::vector<Blocked> released(std::make_move_iterator(blocked.begin()),
                                    std::make_move_iterator(due));
      blocked.erase(blocked.begin(), due);
      for (auto& caller : released) caller.complete(failure);
    }
  };

  template <class Handler>
  void complete(Handler&& handler, error_code ec, std::size_t n) {
    boost::asio::post(next_.get_executor(),
                      boost::beast::bind_front_handler(std::forward<Handler>(handler), ec, n));
  }

  next_layer_type next_;
  std::shared_ptr<State> state_;
};

using CoalescingStream = BasicCoalescingStream<boost::beast::tcp_stream>;

/// Beast's close handshake ends with a teardown of the next layer: flush first, then shut the
/// socket down as Beast would for a plain TCP stream.
template <class NextLayer, class TeardownHandler>
void async_teardown(boost::beast::role_type role, BasicCoalescingStream<NextLayer>& stream,
                    TeardownHandler&& handler) {
  auto h = std::make_shared<std::decay_t<TeardownHandler>>(std::forward<TeardownHandler>(handler));
  stream.when_drained([&stream, role, h] {
    using boost::beast::websocket::async_teardown;
    async_teardown(role, stream.next_layer(), std::move(*h));
  });
}

template <class NextLayer>
void teardown(boost::beast::role_type role, BasicCoalescingStream<NextLayer>& stream,
              boost::beast::error_code& ec) {
  using boost::beast::websocket::teardown;
  teardown(role, stream.next_layer(), ec);
}

}  // namespace graspd::runtime
