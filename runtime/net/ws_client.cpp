#include "runtime/net/ws_client.hpp"

#include <utility>  // before Asio, see docs/toolchain.md §1

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/websocket.hpp>
#include <condition_variable>
#include <deque>
#include <future>
#include <mutex>
#include <thread>

#include "runtime/net/ws_deflate.hpp"

namespace graspd::runtime {

namespace beast = boost::beast;
namespace websocket = beast::websocket;
namespace net = boost::asio;
using tcp = net::ip::tcp;

struct WsClient::Impl : std::enable_shared_from_this<WsClient::Impl> {
  explicit Impl(Options o)
      : options(std::move(o)), resolver(ioc), ws(ioc), guard(net::make_work_guard(ioc)) {}

  Options options;
  net::io_context ioc;
  tcp::resolver resolver;
  websocket::stream<beast::tcp_stream> ws;
  net::executor_work_guard<net::io_context::executor_type> guard;
  std::thread thread;
  beast::flat_buffer buffer;
  websocket::response_type handshake_response;
  std::string host_header;
  std::string path;

  // io-thread-only write state
  std::deque<std::pair<std::string, bool>> outbound;
  bool writing = false;
  bool close_requested = false;

  mutable std::mutex mutex;
  std::condition_variable cv;
  std::deque<std::string> inbound;
  bool open = false;
  bool finished = false;
  bool negotiated_deflate = false;
  std::promise<std::string> connected;  // empty string = success

  void start(const std::string& host, std::uint16_t port) {
    host_header = host + ":" + std::to_string(port);
    resolver.async_resolve(
        host, std::to_string(port),
        [self = shared_from_this()](beast::error_code ec, tcp::resolver::results_type r) {
          if (ec) return self->fail_connect("resolve: " + ec.message());
          self->on_resolved(r);
        });
  }

  void on_resolved(const tcp::resolver::results_type& results) {
    beast::get_lowest_layer(ws).expires_after(options.connect_timeout);
    if (!options.local_address.empty()) return connect_from(*results.begin());
    beast::get_lowest_layer(ws).async_connect(
        results, [self = shared_from_this()](beast::error_code ec, const tcp::endpoint&) {
          if (ec) return self->fail_connect("connect: " + ec.message());
          self->on_connected();
        });
  }

  /// Binds the socket to the chosen local address first (tests acting as another host).
  void connect_from(const tcp::endpoint& remote) {
    beast::error_code ec;
    auto local = net::ip::make_address(options.local_address, ec);
    auto& socket = beast::get_lowest_layer(ws).socket();
    if (!ec) socket.open(remote.protocol(), ec);
    if (!ec) socket.bind(tcp::endpoint(local, 0), ec);
    if (ec) return fail_connect("bind " + options.local_address + ": " + ec.message());
    beast::get_lowest_layer(ws).async_connect(
        remote, [self = shared_from_this()](beast::error_code e) {
          if (e) return self->fail_connect("connect: " + e.message());
          self->on_connected();
        });
  }

  void on_connected() {
    beast::get_lowest_layer(ws).socket().set_option(tcp::no_delay(true));
    beast::get_lowest_layer(ws).expires_never();
    websocket::stream_base::timeout timeouts{};
    timeouts.handshake_timeout =
        std::chrono::duration_cast<std::chrono::seconds>(options.connect_timeout);
    if (timeouts.handshake_timeout.count() < 1)
      timeouts.handshake_timeout = std::chrono::seconds(1);
    timeouts.idle_timeout = websocket::stream_base::none();
    timeouts.keep_alive_pings = false;
    ws.set_option(timeouts);
    if (options.compression) {
      websocket::permessage_deflate pmd;
      pmd.client_enable = true;
      ws.set_option(pmd);
    }
    ws.read_message_max(options.max_message_bytes);
    if (!options.request_headers.empty()) {
      ws.set_option(websocket::stream_base::decorator(
          [headers = options.request_headers](websocket::request_type& request) {
            for (const auto& [name, value] : headers) request.insert(name, value);
          }));
    }
    ws.async_handshake(handshake_response, host_header, path,
                       [self = shared_from_this()](beast::error_code ec) {
                         if (ec) return self->fail_connect("handshake: " + ec.message());
                         self->on_handshake();
                       });
  }

  void on_handshake() {
    auto ext = handshake_response[beast::http::field::sec_websocket_extensions];
    {
      std::lock_guard lock(mutex);
      open = true;
      negotiated_deflate =
          runtime::negotiated_deflate(std::string_view(ext.data(), ext.size())).enabled;
    }
    connected.set_value({});
    do_read();
  }

  void fail_connect(std::string error) {
    {
      std::lock_guard lock(mutex);
      finished = true;
    }
    cv.notify_all();
    connected.set_value(std::move(error));
  }

  void do_read() {
    ws.async_read(buffer, [self = shared_from_this()](beast::error_code ec, std::size_t) {
      self->on_read(ec);
    });
  }

  void on_read(beast::error_code ec) {
    if (ec) return on_finished();
    std::string text = beast::buffers_to_string(buffer.data());
    buffer.consume(buffer.size());
    if (options.on_message) {
      options.on_message(std::move(text));
    } else {
      {
        std::lock_guard lock(mutex);
        inbound.push_back(std::move(text));
      }
      cv.notify_all();
    }
    do_read();
  }

  void on_finished() {
    {
      std::lock_guard lock(mutex);
      if (finished) return;
      open = false;
      finished = true;
    }
    cv.notify_all();
    outbound.clear();
    if (options.on_close) options.on_close();
  }

  void enqueue(std::string text, bool binary) {
    if (close_requested) return;
    outbound.emplace_back(std::move(text), binary);
    if (!writing) do_write();
  }

  void do_write() {
    if (outbound.empty()) {
      if (close_requested) start_close();
      return;
    }
    writing = true;
    ws.text(!outbound.front().second);
    ws.async_write(net::buffer(outbound.front().first),
                   [self = shared_from_this()](beast::error_code ec, std::size_t) {
                     self->writing = false;
                     if (!self->outbound.empty()) self->outbound.pop_front();
                     if (ec) return self->outbound.clear();
                     self->do_write();
                   });
  }

  void request_close() {
    if (close_requested) return;
    close_requested = true;
    if (!writing) do_write();
  }

  void start_close() {
    bool is_open;
    {
      std::lock_guard lock(mutex);
      is_open = open;
    }
    if (!is_open) return;
    ws.async_close(websocket::close_code::normal, [](beast::error_code) {});
  }
};

WsClient::WsClient(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}

Result<std::unique_ptr<WsClient>, NetFailure> WsClient::connect(const std::string& host,
                                                                std::uint16_t port,
                                                                const std::string& path,
                                                                Options options) {
  auto timeout = options.connect_timeout;
  auto impl = std::make_shared<Impl>(std::move(options));
  impl->path = path.empty() ? "/" : path;
  auto result = impl->connected.get_future();
  impl->thread = std::thread([raw = impl.get()] { raw->ioc.run(); });
  net::post(impl->ioc, [impl, host, port] { impl->start(host, port); });
  std::unique_ptr<WsClient> client(new WsClient(impl));
  // On a failure, ~WsClient stops the io thread.
  if (result.wait_for(timeout + std::chrono::seconds(2)) != std::future_status::ready)
    return NetFailure{net_errc::timed_out, "connect: timed out"};
  if (auto failure = result.get(); !failure.empty())
    return NetFailure{net_errc::connect_failed, std::move(failure)};
  return client;
}

WsClient::~WsClient() {
  close();
}

void WsClient::send(std::string text) {
  net::post(impl_->ioc, [impl = impl_, text = std::move(text)]() mutable {
    impl->enqueue(std::move(text), false);
  });
}

void WsClient::send_binary(std::string bytes) {
  net::post(impl_->ioc, [impl = impl_, bytes = std::move(bytes)]() mutable {
    impl->enqueue(std::move(bytes), true);
  });
}

std::optional<std::string> WsClient::receive(std::chrono::milliseconds timeout) {
  std::unique_lock lock(impl_->mutex);
  impl_->cv.wait_for(lock, timeout, [&] { return !impl_->inbound.empty() || impl_->finished; });
  if (impl_->inbound.empty()) return std::nullopt;
  std::string text = std::move(impl_->inbound.front());
  impl_->inbound.pop_front();
  return text;
}

bool WsClient::is_open() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->open;
}

bool WsClient::compressed() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->negotiated_deflate;
}

void WsClient::close() {
  if (!impl_ || !impl_->thread.joinable()) return;
  net::post(impl_->ioc, [impl = impl_] { impl->request_close(); });
  {
    std::unique_lock lock(impl_->mutex);
    impl_->cv.wait_for(lock, std::chrono::seconds(5), [&] { return impl_->finished; });
  }
  impl_->guard.reset();
  impl_->ioc.stop();
  impl_->thread.join();
}

}  // namespace graspd::runtime
