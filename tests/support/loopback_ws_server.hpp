// graspd's own HTTP server and WebSocket endpoint on an ephemeral loopback port, run on one io
// thread, for transport tests that need a real WebSocket peer in-process.
#pragma once

#include <utility>  // before Asio, see toolchain.md §1

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <memory>
#include <thread>

#include "runtime/http_server.hpp"
#include "runtime/ws_session.hpp"

namespace graspd::test {

class LoopbackWsServer {
 public:
  /// Serves WebSocket upgrades on "/" with handlers from `factory`.
  void start(runtime::WsOptions options, runtime::WsHandlerFactory factory) {
    endpoint_ = runtime::make_websocket_endpoint(std::move(options), std::move(factory));
    server_ = std::make_unique<runtime::HttpServer>(
        io_, runtime::HttpServerOptions{},
        [](const runtime::HttpRequestInfo&) { return runtime::HttpResponse{}; });
    server_->set_websocket_handler(endpoint_->upgrade_handler());
    server_->start();
    thread_ = std::thread([this] { io_.run(); });
  }

  /// Stops serving, closes every connection and joins the io thread; idempotent.
  void stop() {
    if (server_) server_->stop();
    if (endpoint_) endpoint_->close_all();
    work_.reset();
    io_.stop();
    if (thread_.joinable()) thread_.join();
  }
  ~LoopbackWsServer() { stop(); }

  std::uint16_t port() const { return server_->port(); }
  /// The io_context the server runs on; clients may run on it too.
  boost::asio::io_context& io() { return io_; }

 private:
  boost::asio::io_context io_;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work_{
      io_.get_executor()};
  std::shared_ptr<runtime::WsEndpoint> endpoint_;
  std::unique_ptr<runtime::HttpServer> server_;
  std::thread thread_;
};

}  // namespace graspd::test
