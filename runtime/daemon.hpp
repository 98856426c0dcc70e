// Boot code: builds the actor system, the network I/O threads, the HTTP listener and the daemon's
// long-lived actors from a Config, runs until SIGINT/SIGTERM, then shuts everything down in order.
// Keep CAF and Beast out of this header: only forward declarations.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "runtime/config.hpp"

namespace caf {
class actor_system;
}
namespace boost::asio {
class io_context;
}

namespace graspd::runtime {

class HttpServer;
class Metrics;
class StatusBoard;

/// What the wiring code (daemon.cpp's registry section) gets to build long-lived components.
/// Every reference stays valid until shutdown has completed.
struct Services {
  const Config& config;
  caf::actor_system& system;
  boost::asio::io_context& io;  ///< run by the network threads
  Metrics& metrics;             ///< one registry for every component's metrics
  HttpServer& http;             ///< set_websocket_handler() here before the listener starts
  std::shared_ptr<StatusBoard> status;  ///< JSON snapshots served at /api/<name>

  /// Called on shutdown in reverse registration order, after the listener stopped accepting and
  /// before the network threads stop (e.g. close WebSocket sessions). Must not block long.
  void on_shutdown(std::function<void()> hook) { shutdown_hooks.push_back(std::move(hook)); }
  std::vector<std::function<void()>> shutdown_hooks;
};

class Daemon {
 public:
  explicit Daemon(Config config);
  ~Daemon();
  Daemon(const Daemon&) = delete;
  Daemon& operator=(const Daemon&) = delete;

  /// Boots, logs the readiness line ("listening on host:port"), waits for SIGINT/SIGTERM and shuts
  /// down. Returns the process exit code: 0 after a clean shutdown, 1 when boot failed.
  int run();

 private:
  Config config_;
};

}  // namespace graspd::runtime
