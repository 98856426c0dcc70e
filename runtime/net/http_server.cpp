#include <utility>  // before Asio, see docs/toolchain.md §1

#include "runtime/net/http_server.hpp"

#include <algorithm>
#include <atomic>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket/rfc6455.hpp>
#include <chrono>
#include <limits>
#include <mutex>
#include <set>
#include <system_error>
#include <vector>

#include "runtime/ops/log.hpp"

namespace graspd::runtime {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;

namespace {

class Session;

/// Shared between the server object, the acceptor loop and the sessions (sessions may outlive
/// the HttpServer object for a moment while they finish closing).
struct ServerState {
  HttpServerOptions options;
  HttpRequestHandler handler;
  WebSocketUpgradeHandler websocket_handler;
  HttpHandoffPredicate handoff_wanted;
  HttpHandoffHandler handoff_handler;
  mutable std::mutex mutex;
  std::set<std::shared_ptr<Session>> sessions;  // guarded by mutex
  bool stopping = false;                        // guarded by mutex
};

using Request = http::request<http::string_body>;

std::string_view view(beast::string_view text) {
  return {text.data(), text.size()};
}
/// The body is a view of `body`, which the response owns with it: a page shared by many
/// connections is sent from one copy.
struct Response {
  http::response<http::span_body<const char>> message;
  std::shared_ptr<const std::string> body;
};

std::shared_ptr<const std::string> body_of(HttpResponse& routed) {
  if (routed.shared_body) return std::move(routed.shared_body);
  return std::make_shared<const std::string>(std::move(routed.body));
}

Response make_response(HttpResponse routed, const Request& request, bool keep_alive) {
  Response response{{static_cast<http::status>(routed.status), request.version()}, body_of(routed)};
  auto& message = response.message;
  message.set(http::field::server, "graspd");
  for (const auto& [name, value] : cors_headers()) message.set(name, value);
  for (const auto& [name, value] : routed.headers) message.set(name, value);
  if (!routed.content_type.empty()) message.set(http::field::content_type, routed.content_type);
  message.body() = {response.body->data(), response.body->size()};
  message.keep_alive(keep_alive);
  message.prepare_payload();
  // HEAD: same headers (Content-Length of the GET body), no body.
  if (request.method() == http::verb::head) message.body() = {};
  return response;
}

Response error_response(unsigned status, std::string body, unsigned version) {
  Response response{{static_cast<http::status>(status), version},
                    std::make_shared<const std::string>(std::move(body))};
  auto& message = response.message;
  message.set(http::field::server, "graspd");
  for (const auto& [name, value] : cors_headers()) message.set(name, value);
  message.set(http::field::content_type, "text/plain; charset=utf-8");
  message.body() = {response.body->data(), response.body->size()};
  message.keep_alive(false);
  message.prepare_payload();
  return response;
}

class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket&& socket, std::shared_ptr<ServerState> state)
      : stream_(std::move(socket)), state_(std::move(state)) {
    beast::error_code error;
    auto endpoint = stream_.socket().remote_endpoint(error);
    if (!error)
      peer_ip_ = client_ip_ = normalise_address(endpoint.address().to_string()).value_or("");
  }

  void start() {
    net::dispatch(stream_.get_executor(), [self = shared_from_this()] { self->read_request(); });
  }

  /// Closes the socket from any thread; the pending operation completes with an error.
  void close() {
    net::post(stream_.get_executor(), [self = shared_from_this()] { self->shutdown(); });
  }

 private:
  // The header first: a request for the hand-off handler (git hosting) leaves with its body
  // unread; every other request reads its body here, bounded by max_body_bytes.
  void read_request() {
    client_ip_ = peer_ip_;  // until this request's header names another (resolve_client)
    parser_.reset();
    header_parser_ = std::make_unique<HeaderParser>();
    header_parser_->header_limit(static_cast<std::uint32_t>(state_->options.max_header_bytes));
    // Checked below, per destination. (Not boost::none: Beast compares a Content-Length against
    // the optional, and any length is "greater" than none.)
    header_parser_->body_limit(std::numeric_limits<std::uint64_t>::max());
    stream_.expires_after(state_->options.idle_timeout);
    http::async_read_header(stream_, buffer_, *header_parser_,
                            [self = shared_from_this()](beast::error_code error, std::size_t) {
                              self->on_header(error);
                            });
  }

  void on_header(beast::error_code error) {
    if (error) return on_read(error);
    const auto& header = header_parser_->get();
    resolve_client(header);
    if (state_->handoff_handler && state_->handoff_wanted &&
        state_->handoff_wanted(view(header.target())) && !beast::websocket::is_upgrade(header))
      return hand_off();
    auto length = header_parser_->content_length();
    parser_.emplace(std::move(*header_parser_));
    header_parser_.reset();
    if (length && *length > state_->options.max_body_bytes)
      return send_error(413, "request too large\n");
    parser_->body_limit(state_->options.max_body_bytes);
    if (parser_->is_done()) return on_read({});
    http::async_read(stream_, buffer_, *parser_,
                     [self = shared_from_this()](beast::error_code error, std::size_t) {
                       self->on_read(error);
                     });
  }

  /// Per request: a proxy may carry several clients over one connection.
  void resolve_client(const http::fields& header) {
    const auto& proxies = state_->options.trusted_proxies;
    std::vector<std::string_view> values;
    auto name = to_string(proxies.header);
    for (auto [it, end] = header.equal_range({name.data(), name.size()}); it != end; ++it)
      values.push_back(view(it->value()));
    auto resolved = resolve_client_address(proxies, peer_ip_, values);
    client_ip_ = std::move(resolved.address);
    if (resolved.outcome != ForwardedOutcome::absent && state_->options.count_forwarded)
      state_->options.count_forwarded(resolved.outcome);
  }

  void hand_off() {
    release_from_server();
    stream_.expires_never();
    state_->handoff_handler(std::move(stream_), std::move(header_parser_), std::move(buffer_),
                            client_ip_);
  }

  void on_read(beast::error_code error) {
    if (error == http::error::end_of_stream || error == beast::error::timeout ||
        error == net::error::operation_aborted || error == net::error::connection_reset) {
      return finish();
    }
    if (error == http::error::body_limit || error == http::error::header_limit) {
      return send_error(413, "request too large\n");
    }
    if (error) {
      log::debug(log::components::http, "bad request from ", client_ip_, ": ", error.message());
      return send_error(400, "bad request\n");
    }
    auto& request = parser_->get();
    if (beast::websocket::is_upgrade(request)) return upgrade();
    ++requests_served_;
    bool keep_alive =
        request.keep_alive() && requests_served_ < state_->options.max_keep_alive_requests;
    HttpRequestInfo info{view(request.method_string()),
                         view(request.target()),
                         view(request[http::field::accept]),
                         view(request[http::field::content_type]),
                         view(request[http::field::authorization]),
                         request.body()};
    HttpResponse routed;
    try {
      routed = state_->handler(info);
    } catch (const std::exception& failure) {
      log::error(log::components::http, "handler failed for ", request.target(), " from ",
                 client_ip_, ": ", failure.what());
      routed = HttpResponse{500, "text/plain; charset=utf-8", "internal error\n", {}};
    }
    if (routed.deferred) return defer(std::move(routed.deferred), keep_alive);
    write(make_response(std::move(routed), request, keep_alive));
  }

  /// The response comes later, from any thread; the request (parser_) stays until it is written,
  /// since nothing more is read meanwhile.
  void defer(std::function<void(HttpRespond)> deferred, bool keep_alive) {
    stream_.expires_never();
    deferred([self = shared_from_this(), keep_alive](HttpResponse routed) {
      net::post(self->stream_.get_executor(),
                [self, keep_alive, routed = std::move(routed)]() mutable {
                  self->write(make_response(std::move(routed), self->parser_->get(), keep_alive));
                });
    });
  }

  void upgrade() {
    auto target = parser_->get().target();
    bool on_root = target.substr(0, target.find('?')) == "/";
    if (!on_root || !state_->websocket_handler) {
      return send_error(on_root ? 426 : 404, on_root ? "websocket not available\n" : "not found\n");
    }
    release_from_server();
    stream_.expires_never();
    // The callee owns the stream from here on; this session object dies with this handler.
    state_->websocket_handler(std::move(stream_), parser_->release(), std::move(buffer_),
                              client_ip_);
  }

  void send_error(unsigned status, std::string body) {
    lingering_close_ = true;
    unsigned version = parser_          ? parser_->get().version()
                       : header_parser_ ? header_parser_->get().version()
                                        : 11;
    write(error_response(status, std::move(body), version));
  }

  void write(Response response) {
    response_ = std::make_unique<Response>(std::move(response));
    stream_.expires_after(state_->options.idle_timeout);
    http::async_write(stream_, response_->message,
                      [self = shared_from_this()](beast::error_code error, std::size_t) {
                        self->on_write(error);
                      });
  }

  void on_write(beast::error_code error) {
    bool keep_alive = response_->message.keep_alive();
    response_.reset();
    if (!error && lingering_close_) return linger();
    if (error || !keep_alive) return finish();
    read_request();
  }

  // After an error answer the client may still be sending (e.g. an oversized body). Closing with
  // unread input makes the kernel send RST, which can destroy our answer before the client reads
  // it; so stop sending, discard input for a bounded time and size, then close.
  void linger() {
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
    stream_.expires_after(std::chrono::seconds(2));
    discard_.resize(16 * 1024);
    discard_more();
  }

  void discard_more() {
    constexpr std::size_t limit = 4 * 1024 * 1024;
    stream_.async_read_some(net::buffer(discard_),
                            [self = shared_from_this()](beast::error_code error, std::size_t n) {
                              self->discarded_ += n;
                              if (error || self->discarded_ > limit) return self->finish();
                              self->discard_more();
                            });
  }

  void finish() {
    shutdown();
    release_from_server();
  }

  void shutdown() {
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
    stream_.socket().close(ignored);
  }

  void release_from_server() {
    std::lock_guard lock{state_->mutex};
    state_->sessions.erase(shared_from_this());
  }

  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  std::unique_ptr<HeaderParser> header_parser_;
  std::optional<http::request_parser<http::string_body>> parser_;
  std::unique_ptr<Response> response_;
  std::shared_ptr<ServerState> state_;
  std::string peer_ip_;    ///< the TCP peer
  std::string client_ip_;  ///< the client of the current request (resolve_client)
  std::size_t requests_served_ = 0;
  bool lingering_close_ = false;
  std::size_t discarded_ = 0;
  std::vector<char> discard_;  // allocated only when lingering
};

}  // namespace

struct HttpServer::Impl : std::enable_shared_from_this<HttpServer::Impl> {
  Impl(net::io_context& io, HttpServerOptions options, HttpRequestHandler handler)
      : io(io), acceptor(net::make_strand(io)), state(std::make_shared<ServerState>()) {
    state->options = std::move(options);
    state->handler = std::move(handler);
  }

  void accept() {
    acceptor.async_accept(net::make_strand(io),
                          [self = shared_from_this()](beast::error_code error, tcp::socket socket) {
                            self->on_accept(error, std::move(socket));
                          });
  }

  void on_accept(beast::error_code error, tcp::socket socket) {
    if (error == net::error::operation_aborted || !acceptor.is_open()) return;
    if (error) return back_off(error);
    retry_delay = std::chrono::milliseconds(0);
    {
      auto session = std::make_shared<Session>(std::move(socket), state);
      {
        std::lock_guard lock{state->mutex};
        if (state->stopping) return;
        state->sessions.insert(session);
      }
      session->start();
    }
    accept();
  }

  /// A failed accept (EMFILE, ENFILE, ENOBUFS) fails again at once while the cause lasts: retrying
  /// immediately spins a core and floods the log. Retry after a delay that doubles up to a second,
  /// keep serving the connections already open, and log at most one line per ten seconds.
  void back_off(const beast::error_code& error) {
    ++accept_failures;
    ++failures_since_log;
    const auto now = std::chrono::steady_clock::now();
    if (now - last_failure_log >= std::chrono::seconds(10)) {
      log::warn(log::components::http, "accept failed: ", error.message(), " (", failures_since_log,
                " failures since the last report); retrying with back-off");
      failures_since_log = 0;
      last_failure_log = now;
    }
    retry_delay =
        std::clamp(retry_delay * 2, std::chrono::milliseconds(10), std::chrono::milliseconds(1000));
    retry_timer.expires_after(retry_delay);
    retry_timer.async_wait([self = shared_from_this()](beast::error_code waited) {
      if (waited || !self->acceptor.is_open()) return;
      self->accept();
    });
  }

  net::io_context& io;
  tcp::acceptor acceptor;
  net::steady_timer retry_timer{acceptor.get_executor()};
  std::chrono::milliseconds retry_delay{0};
  std::atomic<std::uint64_t> accept_failures{0};
  std::uint64_t failures_since_log = 0;
  std::chrono::steady_clock::time_point last_failure_log{};
  std::shared_ptr<ServerState> state;
  std::uint16_t bound_port = 0;
};

HttpServer::HttpServer(net::io_context& io, HttpServerOptions options, HttpRequestHandler handler)
    : impl_(std::make_shared<Impl>(io, std::move(options), std::move(handler))) {}

HttpServer::~HttpServer() {
  stop();
}

void HttpServer::start() {
  auto& options = impl_->state->options;
  tcp::resolver resolver{impl_->io};
  auto results = resolver.resolve(options.host, std::to_string(options.port),
                                  tcp::resolver::passive | tcp::resolver::numeric_service);
  auto endpoint = results.begin()->endpoint();
  auto& acceptor = impl_->acceptor;
  acceptor.open(endpoint.protocol());
  acceptor.set_option(net::socket_base::reuse_address(true));
  acceptor.bind(endpoint);
  acceptor.listen(net::socket_base::max_listen_connections);
  impl_->bound_port = acceptor.local_endpoint().port();
  impl_->accept();
}

std::uint16_t HttpServer::port() const {
  return impl_->bound_port;
}

void HttpServer::set_websocket_handler(WebSocketUpgradeHandler handler) {
  impl_->state->websocket_handler = std::move(handler);
}

void HttpServer::set_handoff_handler(HttpHandoffPredicate wanted, HttpHandoffHandler handler) {
  impl_->state->handoff_wanted = std::move(wanted);
  impl_->state->handoff_handler = std::move(handler);
}

void HttpServer::stop() {
  std::set<std::shared_ptr<Session>> sessions;
  {
    std::lock_guard lock{impl_->state->mutex};
    if (impl_->state->stopping) return;
    impl_->state->stopping = true;
    sessions.swap(impl_->state->sessions);
  }
  net::post(impl_->acceptor.get_executor(), [impl = impl_] {
    beast::error_code ignored;
    impl->acceptor.close(ignored);
    impl->retry_timer.cancel();
  });
  for (const auto& session : sessions) session->close();
}

std::uint64_t HttpServer::accept_failures() const {
  return impl_->accept_failures.load();
}

std::size_t HttpServer::open_connections() const {
  std::lock_guard lock{impl_->state->mutex};
  return impl_->state->sessions.size();
}

}  // namespace graspd::runtime
