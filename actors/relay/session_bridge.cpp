// The transport side of client sessions: one bridge per WebSocket connection forwards its frames
// to the connection's ClientSession actor, and a sink hands the actor's frames back.
#include <caf/actor_system.hpp>
#include <caf/send.hpp>

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "actors/relay/client_session.hpp"

namespace graspd {

namespace {

/// FrameSink over the transport's connection handle. Weak on purpose: the
/// connection owns the session actor's bridge, so a strong reference here
/// would keep both alive after the transport is torn down (shutdown hang).
class ConnectionSink final : public FrameSink {
 public:
  explicit ConnectionSink(const std::shared_ptr<runtime::WsConnection>& connection)
      : connection_(connection) {}
  void send(Frame frame) override {
    if (auto connection = connection_.lock()) connection->send(std::move(frame));
  }
  void send_batch(std::vector<Frame> frames) override {
    if (auto connection = connection_.lock()) connection->send_batch(std::move(frames));
  }
  void consumed(std::size_t bytes) override {
    if (auto connection = connection_.lock()) connection->consumed(bytes);
  }
  void when_drained(std::size_t bytes, std::function<void()> ready) override {
    if (auto connection = connection_.lock()) connection->when_drained(bytes, std::move(ready));
  }
  void close(Frame last_frame) override {
    if (auto connection = connection_.lock()) connection->close(std::move(last_frame));
  }

 private:
  std::weak_ptr<runtime::WsConnection> connection_;
};

/// The transport-facing bridge: forwards each connection's frames to its
/// session actor in order (anon_send is thread-safe and FIFO per sender).
class SessionBridge final : public runtime::WsSessionHandler {
 public:
  SessionBridge(caf::actor_system& system, std::shared_ptr<const RelayContext> ctx)
      : system_(system), ctx_(std::move(ctx)) {}
  ~SessionBridge() override { on_close(); }

  void on_open(std::shared_ptr<runtime::WsConnection> connection) override {
    auto id = connection->id();
    auto source = "ip:" + connection->remote_ip();
    actor_ = spawn_client_session(system_, ctx_, id,
                                  std::make_shared<ConnectionSink>(std::move(connection)),
                                  std::move(source));
  }
  void on_text(std::string&& text) override {
    caf::anon_send(actor_, atom::ws_text::value, std::move(text));
  }
  void on_binary() override { caf::anon_send(actor_, atom::ws_binary::value); }
  void on_oversize() override { caf::anon_send(actor_, atom::ws_oversize::value); }
  void on_close() override {
    if (!actor_) return;
    caf::anon_send(actor_, atom::ws_closed::value);
    actor_ = nullptr;
  }

 private:
  caf::actor_system& system_;
  std::shared_ptr<const RelayContext> ctx_;
  client_session_actor actor_;
};

}  // namespace

runtime::WsHandlerFactory make_client_session_factory(caf::actor_system& system,
                                                      std::shared_ptr<const RelayContext> context) {
  return [&system, context](const std::string&) -> std::unique_ptr<runtime::WsSessionHandler> {
    return std::make_unique<SessionBridge>(system, context);
  };
}

}  // namespace graspd
