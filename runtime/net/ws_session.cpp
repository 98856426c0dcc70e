#include "runtime/net/ws_session.hpp"

#include <utility>  // before Asio, see docs/toolchain.md §1

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/websocket.hpp>
#include <deque>
#include <string_view>

#include "runtime/net/coalescing_stream.hpp"
#include "runtime/net/engine/idle_pings.hpp"
#include "runtime/net/ws_deflate.hpp"

namespace graspd::runtime {

namespace beast = boost::beast;
namespace websocket = beast::websocket;
namespace net = boost::asio;

namespace {

/// State shared by every session created by one upgrade handler.
struct Shared {
  WsOptions options;
  WsHandlerFactory factory;
  WsObserver observer;
  ConnectionLimiter limiter;
  std::shared_ptr<DeflateCache> deflate_cache;
  std::atomic<std::uint64_t> next_id{1};
  std::mutex sessions_mutex;
  std::unordered_map<std::uint64_t, std::weak_ptr<WsConnection>> sessions;

  Shared(WsOptions o, WsHandlerFactory f, WsObserver obs)
      : options(std::move(o)),
        factory(std::move(f)),
        observer(std::move(obs)),
        limiter(options.max_connections, options.max_connections_per_ip),
        deflate_cache(std::make_shared<DeflateCache>(options.deflate_cache_bytes)) {}

  void connections_changed() {
    if (observer.on_connections_changed) observer.on_connections_changed(limiter.open());
  }
};

/// Bytes of frames handed to the coalescing layer in one write (it buffers up to 256 KiB).
constexpr std::size_t kWriteBatchBytes = 64 * 1024;

/// One WebSocket connection: a read loop, one outstanding write and a bounded
/// outbound queue, all on the stream's strand.
class WsSession final : public WsConnection, public std::enable_shared_from_this<WsSession> {
 public:
  WsSession(std::shared_ptr<Shared> shared, beast::tcp_stream&& stream, beast::flat_buffer&& buffer,
            std::string remote_ip)
      : shared_(std::move(shared)),
        ws_(std::move(stream)),
        buffer_(std::move(buffer)),
        remote_ip_(std::move(remote_ip)),
        id_(shared_->next_id++),
        pause_hold_(ws_.get_executor()),
        keepalive_(ws_.get_executor()),
        idle_pings_(shared_->options.idle_ping_interval, std::chrono::steady_clock::now()) {}

  void start(beast::http::request<beast::http::string_body>&& request) {
    const auto& options = shared_->options;
    // The websocket stream has its own timeouts; the HTTP ones must not fire.
    beast::get_lowest_layer(ws_).expires_never();
    // Many small frames (OK, EVENT, EOSE): without TCP_NODELAY, Nagle plus the
    // peer's delayed ACK stalls them by ~40 ms.
    beast::error_code ignored;
    beast::get_lowest_layer(ws_).socket().set_option(boost::asio::ip::tcp::no_delay(true), ignored);
    websocket::stream_base::timeout timeouts{};
    timeouts.handshake_timeout = std::chrono::seconds(30);  // the opening and closing handshakes
    // The idle pings are ours (on_keepalive): Beast's idle timer is re-armed at every read, a
    // timer cancelled and waited for again for each message a client sends.
    timeouts.idle_timeout = websocket::stream_base::none();
    timeouts.keep_alive_pings = false;
    ws_.set_option(timeouts);
    // Control frames (a pong, the client's own pings) show the peer is there as messages do.
    ws_.control_callback([this](websocket::frame_type, beast::string_view) { heard(); });
    if (options.compression) {
      // Beast negotiates the extension and inflates what the client sends; our messages are
      // framed and compressed by a MessageDeflater (runtime/net/ws_deflate.hpp says why).
      websocket::permessage_deflate pmd;
      pmd.server_enable = true;
      ws_.set_option(pmd);
    }
    // Our own bound (read_some + discard) lets us answer with a NOTICE and keep
    // the connection; this hard cap only guards a single frame header.
    ws_.read_message_max(0);
    // Beast calls the decorator after it wrote its answer to the client's offer.
    ws_.set_option(websocket::stream_base::decorator([this](websocket::response_type& res) {
      res.set(beast::http::field::server, "graspd");
      const auto offer_answer = res[beast::http::field::sec_websocket_extensions];
      auto params = negotiated_deflate(std::string_view(offer_answer.data(), offer_answer.size()));
      if (params.enabled) deflater_ = MessageDeflater(params, shared_->deflate_cache);
    }));
    ws_.async_accept(request,
                     [self = shared_from_this()](beast::error_code ec) { self->on_accept(ec); });
  }

  void send(WsFrame frame) override {
    net::post(ws_.get_executor(), [self = shared_from_this(), frame = std::move(frame)]() mutable {
      self->enqueue(std::move(frame));
    });
  }

  void send_batch(std::vector<WsFrame> frames) override {
    net::post(ws_.get_executor(),
              [self = shared_from_this(), frames = std::move(frames)]() mutable {
                for (auto& frame : frames) self->enqueue(std::move(frame));
              });
  }

  void consumed(std::size_t bytes) override {
    net::post(ws_.get_executor(), [self = shared_from_this(), bytes] {
      self->inbound_backlog_ -= std::min(self->inbound_backlog_, bytes);
      if (self->read_waiting_ && !self->backlog_full()) {
        self->read_waiting_ = false;
        self->pause_hold_.cancel();  // `self` holds it through the call; do_read holds it after
        self->do_read();
      }
    });
  }

  void when_drained(std::size_t bytes, std::function<void()> ready) override {
    net::post(ws_.get_executor(),
              [self = shared_from_this(), bytes, ready = std::move(ready)]() mutable {
                if (self->finished_) return;
                self->drained_at_ = bytes;
                self->on_drained_ = std::move(ready);
                self->check_drained();
              });
  }

  void close(WsFrame last_frame) override {
    net::post(ws_.get_executor(),
              [self = shared_from_this(), frame = std::move(last_frame)]() mutable {
                self->close_after(std::move(frame));
              });
  }

  std::uint64_t id() const override { return id_; }
  const std::string& remote_ip() const override { return remote_ip_; }

 private:
  void on_accept(beast::error_code ec) {
    if (ec) return;
    if (!shared_->limiter.try_acquire(remote_ip_)) {
      if (shared_->observer.on_refused) shared_->observer.on_refused();
      close_after(shared_->options.refused_frame);
      do_read();
      return;
    }
    counted_ = true;
    {
      std::lock_guard lock(shared_->sessions_mutex);
      shared_->sessions[id_] = weak_from_this();
    }
    shared_->connections_changed();
    handler_ = shared_->factory(remote_ip_);
    handler_->on_open(shared_from_this());
    heard();
    on_keepalive();  // just heard: the first check waits an interval
    do_read();
  }

  void heard() { idle_pings_.heard(std::chrono::steady_clock::now()); }

  void arm_keepalive(std::chrono::steady_clock::time_point at) {
    keepalive_.expires_at(at);
    keepalive_.async_wait([weak = weak_from_this()](beast::error_code ec) {
      if (auto self = weak.lock(); self && !ec) self->on_keepalive();
    });
  }

  /// The idle-ping rule (IdlePings) applied at each check. While reads wait for the handler,
  /// what the client sends waits unread, so that counts as heard.
  void on_keepalive() {
    if (finished_ || closing_) return;
    if (read_waiting_) heard();
    const auto decision = idle_pings_.check(std::chrono::steady_clock::now());
    if (decision.step == IdlePings::Step::drop) {
      beast::get_lowest_layer(ws_).close();  // the pending read fails and ends the session
      return;
    }
    if (decision.step == IdlePings::Step::ping && !ping_writing_) {
      ping_writing_ = true;
      ws_.async_ping(
          {}, [self = shared_from_this()](beast::error_code) { self->ping_writing_ = false; });
    }
    arm_keepalive(decision.next_check);
  }

  void do_read() {
    // read_some keeps each read bounded so an oversized message is dropped
    // piecewise instead of being buffered whole.
    ws_.async_read_some(
        buffer_, 64 * 1024,
        [self = shared_from_this()](beast::error_code ec, std::size_t) { self->on_read(ec); });
  }

  void on_read(beast::error_code ec) {
    if (ec) return on_closed();
    heard();
    if (discarding_ || buffer_.size() > shared_->options.max_message_bytes) {
      discarding_ = true;
      buffer_.consume(buffer_.size());
    }
    if (!ws_.is_message_done()) return do_read();
    if (handler_ && !closing_) dispatch_message();
    buffer_.consume(buffer_.size());
    discarding_ = false;
    // Back-pressure: the handler has not caught up; consumed() resumes the reads.
    if (backlog_full()) {
      read_waiting_ = true;
      hold_while_paused();
      return;
    }
    do_read();
  }

  /// No read is pending while the handler catches up, and the handler's sink is weak: a wait
  /// that only ends when cancelled keeps the session alive instead. Being an operation of the
  /// io_context, it is released with it should no close ever run (a member holding the session
  /// would be a cycle nothing breaks).
  void hold_while_paused() {
    pause_hold_.expires_at(net::steady_timer::time_point::max());
    pause_hold_.async_wait([self = shared_from_this()](beast::error_code) {});
  }

  void check_drained() {
    if (!on_drained_ || queued_bytes_ > drained_at_) return;
    std::exchange(on_drained_, nullptr)();
  }

  bool backlog_full() const { return inbound_backlog_ > shared_->options.max_inbound_backlog; }

  void dispatch_message() {
    if (discarding_) return handler_->on_oversize();
    if (!ws_.got_text()) return handler_->on_binary();
    inbound_backlog_ += buffer_.size();
    handler_->on_text(beast::buffers_to_string(buffer_.data()));
  }

  void enqueue(WsFrame frame) {
    if (closing_ || !frame) return;
    const auto& options = shared_->options;
    if (queue_.size() + 1 > options.max_outbound_frames ||
        queued_bytes_ + frame.size() > options.max_outbound_bytes) {
      if (shared_->observer.on_overflow) shared_->observer.on_overflow();
      // Frames not yet started are dropped: the reader is too slow to matter.
      while (queue_.size() > (writing_ ? writing_frames_ : 0u)) {
        queued_bytes_ -= queue_.back().size();
        queue_.pop_back();
      }
      return close_after(options.overflow_frame);
    }
    push(std::move(frame));
  }

  // The bound counts each frame's size on the wire, a shared body once per frame that holds it:
  // what the client still has to read. The memory the queue holds is at most that (frames sharing
  // an event's JSON hold it once), so sharing makes the queue cheaper, never the bound looser.
  void push(WsFrame frame) {
    queued_bytes_ += frame.size();
    queue_.push_back(std::move(frame));
    if (!writing_) do_write();
  }

  void close_after(WsFrame last_frame) {
    if (closing_) return;
    closing_ = true;
    if (last_frame) queue_.push_back(std::move(last_frame));
    if (!writing_) do_write();
  }

  void do_write() {
    if (queue_.empty()) {
      ws_.next_layer().hold(false);
      if (closing_) start_close();
      return;
    }
    writing_ = true;
    if (!ws_.is_open()) {  // Beast answered a close: nothing may follow it
      return net::post(ws_.get_executor(), [self = shared_from_this()] {
        self->on_write(net::error::operation_aborted);
      });
    }
    write_framed();
  }

  // Our own frames, written below Beast as one write of up to kWriteBatchBytes: a REQ answer of
  // 500 events costs a few writes instead of one Beast write operation per event. The coalescing
  // layer takes each write whole, so our frames never interleave with the control frames Beast
  // writes there (pong, ping, close).
  void write_framed() {
    framed_.clear();
    writing_frames_ = 0;
    while (writing_frames_ < queue_.size() && framed_.size() < kWriteBatchBytes)
      deflater_.encode(queue_[writing_frames_++], framed_);
    // Frames still queued behind this batch leave with the last of them in one socket write.
    ws_.next_layer().hold(queue_.size() > writing_frames_);
    ws_.next_layer().async_write_some(
        net::buffer(framed_),
        [self = shared_from_this()](beast::error_code ec, std::size_t) { self->on_write(ec); });
  }

  void on_write(beast::error_code ec) {
    writing_ = false;
    for (; writing_frames_ > 0 && !queue_.empty(); --writing_frames_) {
      queued_bytes_ -= std::min(queued_bytes_, queue_.front().size());
      queue_.pop_front();
    }
    if (ec) {
      queue_.clear();
      queued_bytes_ = 0;
      // The read loop sees the failure and ends the session, unless back-pressure paused it.
      if (read_waiting_) on_closed();
      return;
    }
    check_drained();
    do_write();
  }

  void start_close() {
    if (close_started_) return;
    close_started_ = true;
    // The read loop may be paused (back-pressure), so the close handshake ends the session too.
    ws_.async_close(websocket::close_code::policy_error,
                    [self = shared_from_this()](beast::error_code) { self->on_closed(); });
  }

  void on_closed() {
    if (finished_) return;
    finished_ = true;
    closing_ = true;
    queue_.clear();
    queued_bytes_ = 0;
    on_drained_ = nullptr;
    if (handler_) handler_->on_close();
    handler_.reset();
    if (counted_) {
      {
        std::lock_guard lock(shared_->sessions_mutex);
        shared_->sessions.erase(id_);
      }
      shared_->limiter.release(remote_ip_);
      shared_->connections_changed();
    }
    pause_hold_.cancel();  // callers hold their own reference through this call
    keepalive_.cancel();
  }

  std::shared_ptr<Shared> shared_;
  websocket::stream<CoalescingStream> ws_;
  beast::flat_buffer buffer_;
  std::string remote_ip_;
  std::uint64_t id_;
  std::unique_ptr<WsSessionHandler> handler_;
  std::deque<WsFrame> queue_;
  // Compresses once permessage-deflate was negotiated; frames plain text until then.
  MessageDeflater deflater_{DeflateParams{}, nullptr};
  std::string framed_;              // write_framed's frames, copied by the layer below
  std::size_t writing_frames_ = 0;  // queued frames (from the front) in the write in flight
  std::size_t queued_bytes_ = 0;
  std::function<void()> on_drained_;  // when_drained: due once queued_bytes_ <= drained_at_
  std::size_t drained_at_ = 0;
  std::size_t inbound_backlog_ = 0;  // text handed to the handler, not yet consumed
  bool read_waiting_ = false;        // a read is due once the backlog shrinks
  net::steady_timer pause_hold_;     // pending while reads wait (hold_while_paused)
  net::steady_timer keepalive_;      // the next idle check (on_keepalive)
  IdlePings idle_pings_;             // the client's last frame, control or not, and the ping out
  bool ping_writing_ = false;        // Beast allows one ping at a time
  bool writing_ = false;
  bool closing_ = false;
  bool close_started_ = false;
  bool discarding_ = false;
  bool counted_ = false;
  bool finished_ = false;
};

class Endpoint final : public WsEndpoint {
 public:
  explicit Endpoint(std::shared_ptr<Shared> shared) : shared_(std::move(shared)) {}

  WebSocketUpgradeHandler upgrade_handler() override {
    return [shared = shared_](beast::tcp_stream&& stream,
                              beast::http::request<beast::http::string_body>&& request,
                              beast::flat_buffer&& buffer, std::string remote_ip) {
      auto session = std::make_shared<WsSession>(shared, std::move(stream), std::move(buffer),
                                                 std::move(remote_ip));
      session->start(std::move(request));
    };
  }

  void close_all() override {
    std::vector<std::shared_ptr<WsConnection>> open;
    {
      std::lock_guard lock(shared_->sessions_mutex);
      for (auto& [id, weak] : shared_->sessions) {
        if (auto session = weak.lock()) open.push_back(std::move(session));
      }
    }
    for (auto& session : open) session->close({});
  }

  std::size_t open_connections() const override { return shared_->limiter.open(); }

 private:
  std::shared_ptr<Shared> shared_;
};

}  // namespace

std::shared_ptr<WsEndpoint> make_websocket_endpoint(WsOptions options, WsHandlerFactory factory,
                                                    WsObserver observer) {
  return std::make_shared<Endpoint>(
      std::make_shared<Shared>(std::move(options), std::move(factory), std::move(observer)));
}

}  // namespace graspd::runtime
