// Plain-TCP HTTP/1.1 listener (Boost.Beast). Serves the routes of runtime/net/http_routes.hpp with
// CORS headers on every response, HEAD, OPTIONS, keep-alive, a bounded request size and an idle
// timeout, and hands WebSocket upgrades on "/" to the handler set with set_websocket_handler().
// Include only where the server is wired (Beast is expensive to compile, docs/toolchain.md §9).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "runtime/net/forwarded_address.hpp"
#include "runtime/net/http_handoff.hpp"
#include "runtime/net/http_routes.hpp"
#include "runtime/net/websocket_upgrade.hpp"

namespace boost::asio {
class io_context;
}

namespace graspd::runtime {

struct HttpServerOptions {
  std::string host = "127.0.0.1";
  std::uint16_t port = 0;  ///< 0 = any free port (see HttpServer::port())
  std::size_t max_header_bytes = 16 * 1024;
  std::size_t max_body_bytes = 64 * 1024;
  std::chrono::seconds idle_timeout{30};  ///< a keep-alive connection idle this long is closed
  std::size_t max_keep_alive_requests = 1000;
  /// Who may name the client of a request (NGIT_TRUSTED_PROXY_CIDRS); the resolved client is what
  /// the WebSocket and hand-off handlers receive as the remote address.
  TrustedProxies trusted_proxies;
  /// Called per request that carried a forwarding header (graspd_forwarded_total); may be empty.
  std::function<void(ForwardedOutcome)> count_forwarded;
};

/// Maps a parsed request to a response; called on network threads, must be thread-safe.
using HttpRequestHandler = std::function<HttpResponse(const HttpRequestInfo&)>;

class HttpServer {
 public:
  HttpServer(boost::asio::io_context& io, HttpServerOptions options, HttpRequestHandler handler);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  /// Resolves, binds and starts accepting. Throws a std::runtime_error (a
  /// boost::system::system_error) when the address cannot be resolved or bound.
  void start();

  /// The bound port (after start()).
  std::uint16_t port() const;

  /// Takes WebSocket upgrades on "/"; without one, upgrades get 426. Set before start().
  void set_websocket_handler(WebSocketUpgradeHandler handler);

  /// Requests whose target `wanted` accepts leave right after their header, body unread, to
  /// `handler` (git hosting), which owns the connection from then on. Set before start().
  void set_handoff_handler(HttpHandoffPredicate wanted, HttpHandoffHandler handler);

  /// Stops accepting and closes every HTTP connection that is still open (upgraded connections
  /// belong to the WebSocket handler). Thread-safe; idempotent.
  void stop();

  /// Number of HTTP connections currently open (not counting handed-off upgrades).
  std::size_t open_connections() const;

  /// Accepts that failed (e.g. EMFILE: out of file descriptors) since start.
  std::uint64_t accept_failures() const;

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

}  // namespace graspd::runtime
