// What every wiring function (wire_*.hpp) builds from: the configuration and the process-wide
// objects the daemon owns. Every reference stays valid until shutdown has completed.
#pragma once

#include <caf/fwd.hpp>

#include <memory>

#include "runtime/config/config.hpp"

namespace boost::asio {
class io_context;
}

namespace graspd::runtime {
class HttpServer;
class Metrics;
class StatusBoard;
}  // namespace graspd::runtime

namespace graspd::boot {

struct Services {
  const runtime::Config& config;
  caf::actor_system& system;
  boost::asio::io_context& io;  ///< run by the network threads
  runtime::Metrics& metrics;    ///< one registry for every component's metrics
  runtime::HttpServer& http;    ///< set_websocket_handler() here, before the network threads run
  std::shared_ptr<runtime::StatusBoard> status;  ///< JSON snapshots served at /api/<name>
};

}  // namespace graspd::boot
