// Server-side WebSocket transport. The transport knows no actor and no Nostr:
// it talks to an abstract WsSessionHandler per connection and exposes a
// thread-safe WsConnection handle for the way back. Beast stays in the .cpp
// (docs/toolchain.md §9: a Beast TU costs ~30 s and 2 GB to compile).
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "messages/frame.hpp"
#include "runtime/net/connection_limiter.hpp"
#include "runtime/net/websocket_upgrade.hpp"

namespace graspd::runtime {

/// Immutable outbound frame; its body is shared by every recipient (fan-out copies no event).
using WsFrame = Frame;

/// Thread-safe handle on one open WebSocket connection.
class WsConnection {
 public:
  virtual ~WsConnection() = default;
  /// Queues a text frame; safe from any thread. Frames past the outbound
  /// limit make the transport send its overflow notice and close.
  virtual void send(WsFrame frame) = 0;
  /// Queues several frames in order with one hand-off to the connection's strand.
  virtual void send_batch(std::vector<WsFrame> frames) = 0;
  /// Sends `last_frame` (if non-null) then closes with a policy-violation code.
  virtual void close(WsFrame last_frame) = 0;
  /// The handler is done with `bytes` of the text it was handed; safe from any thread. The
  /// transport stops reading from the socket while more than `max_inbound_backlog` bytes are not
  /// done.
  virtual void consumed(std::size_t bytes) = 0;
  /// Calls `ready` on the connection's strand once at most `bytes` are queued for the client (at
  /// once if that is already so); never once the connection is closed. One request at a time: a
  /// later one replaces it.
  virtual void when_drained(std::size_t bytes, std::function<void()> ready) = 0;
  virtual std::uint64_t id() const = 0;
  virtual const std::string& remote_ip() const = 0;
};

/// Receives the events of one connection. Called on the connection's strand,
/// one call at a time; implementations must not block.
class WsSessionHandler {
 public:
  virtual ~WsSessionHandler() = default;
  virtual void on_open(std::shared_ptr<WsConnection> connection) = 0;
  virtual void on_text(std::string&& text) = 0;
  /// A binary frame arrived (Nostr is text only); the connection stays open.
  virtual void on_binary() = 0;
  /// A message larger than max_message_bytes was received and discarded;
  /// the connection stays open.
  virtual void on_oversize() = 0;
  /// The connection is gone; no call follows.
  virtual void on_close() = 0;
};

struct WsOptions {
  std::size_t max_message_bytes = 1048576;
  /// Outbound queue bounds; past either the connection is closed.
  std::size_t max_outbound_bytes = 16u << 20;
  std::size_t max_outbound_frames = 100000;
  /// Text handed to the handler and not reported consumed; past it reading pauses (the client's
  /// sends then wait in TCP), so a client cannot queue unbounded work in the server.
  std::size_t max_inbound_backlog = 8u << 20;
  std::chrono::seconds idle_ping_interval{60};
  bool compression = true;
  /// Bytes of compressed event JSON kept for reuse across connections (0 = none).
  std::size_t deflate_cache_bytes = 32u << 20;
  /// Text sent before closing a connection whose reader is too slow.
  WsFrame overflow_frame;
  /// Text sent before closing a connection refused by a connection cap.
  WsFrame refused_frame;
  /// 0 = unlimited.
  std::size_t max_connections = 0;
  std::size_t max_connections_per_ip = 0;
};

/// Creates the handler of a new connection (never null).
using WsHandlerFactory =
    std::function<std::unique_ptr<WsSessionHandler>(const std::string& remote_ip)>;

/// Observes transport-level happenings for metrics; every member optional.
struct WsObserver {
  std::function<void(std::size_t open)> on_connections_changed;
  std::function<void()> on_refused;
  std::function<void()> on_overflow;
};

/// The WebSocket side of the listener: hands out the upgrade handler the HTTP
/// server calls for `GET /` upgrades and can close every open session.
class WsEndpoint {
 public:
  virtual ~WsEndpoint() = default;
  virtual WebSocketUpgradeHandler upgrade_handler() = 0;
  /// Starts a close handshake on every open session (shutdown); thread-safe.
  virtual void close_all() = 0;
  virtual std::size_t open_connections() const = 0;
};

std::shared_ptr<WsEndpoint> make_websocket_endpoint(WsOptions options, WsHandlerFactory factory,
                                                    WsObserver observer = {});

}  // namespace graspd::runtime
