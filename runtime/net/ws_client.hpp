// The project's own WebSocket client transport (plain ws://), used by the
// tests and the load tool (sync dials through runtime/net/relay_client). One io
// thread per client; every public member is thread-safe. Beast stays in the .cpp.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "messages/errors.hpp"

namespace graspd::runtime {

class WsClient {
 public:
  struct Options {
    bool compression = false;
    std::size_t max_message_bytes = 16u << 20;
    std::chrono::milliseconds connect_timeout{10000};
    /// When set, the connection leaves from this local address (tests: 127.0.0.2 as another host).
    std::string local_address;
    /// Extra headers of the upgrade request (tests: a proxy's X-Forwarded-For).
    std::vector<std::pair<std::string, std::string>> request_headers;
    /// When set, every received text message goes here (on the io thread)
    /// instead of the receive() queue.
    std::function<void(std::string&&)> on_message;
    /// Called once on the io thread when the connection ends.
    std::function<void()> on_close;
  };

  /// Connects to ws://host:port/path; a net_errc failure saying why it did not.
  static Result<std::unique_ptr<WsClient>, NetFailure> connect(const std::string& host,
                                                               std::uint16_t port,
                                                               const std::string& path,
                                                               Options options);

  ~WsClient();
  WsClient(const WsClient&) = delete;
  WsClient& operator=(const WsClient&) = delete;

  /// Queues a text frame.
  void send(std::string text);
  /// Queues a binary frame (tests of the server's refusal path).
  void send_binary(std::string bytes);
  /// Next received message, or nullopt after `timeout` or once closed and drained.
  std::optional<std::string> receive(std::chrono::milliseconds timeout);
  bool is_open() const;
  /// True when the server negotiated permessage-deflate.
  bool compressed() const;
  /// Closes gracefully and waits (bounded) for the io thread.
  void close();

  struct Impl;

 private:
  explicit WsClient(std::shared_ptr<Impl> impl);
  std::shared_ptr<Impl> impl_;
};

}  // namespace graspd::runtime
