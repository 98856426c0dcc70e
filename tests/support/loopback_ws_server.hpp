// graspd's own HTTP server and WebSocket endpoint on an ephemeral loopback port, run on one io
// thread, for transport tests that need a real WebSocket peer in-process.
#pragma once

#include <utility>  // before Asio, see docs/toolchain.md §1

#include <atomic>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <memory>
#include <thread>

#include "runtime/net/http_server.hpp"
#include "runtime/net/ws_session.hpp"
#include "tests/support/wait_until.hpp"

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
    thread_ = std::thread([this] {
      io_.run();
      ran_out_of_work_ = true;
    });
  }

  /// Stops serving, closes every connection and joins the io thread; idempotent.
  void stop() {
    if (server_) server_->stop();
    if (endpoint_) endpoint_->close_all();
    // A closing session keeps itself alive until its close completes: stopping the io_context
    // before then would leak it (and whatever it still had queued).
    if (endpoint_ && thread_.joinable())
      wait_until([this] { return endpoint_->open_connections() == 0; }, std::chrono::seconds(10));
    // Then let the io thread run out of work on its own: Beast keeps an operation that waits
    // behind another inside the stream, which io_context::stop would never destroy.
    work_.reset();
    if (thread_.joinable())
      wait_until([this] { return ran_out_of_work_.load(); }, std::chrono::seconds(10));
    io_.stop();
    if (thread_.joinable()) thread_.join();
  }
  ~LoopbackWsServer() { stop(); }
  /// Stops the io thread at once and closes nothing, as a process that stops mid-way would:
  /// whatever its operations still hold is released with the io_context.
  void halt() {
    io_.stop();
    if (thread_.joinable()) thread_.join();
  }

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
  std::atomic<bool> ran_out_of_work_{false};
};

}  // namespace graspd::test
