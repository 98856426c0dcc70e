// Helpers shared by the relay end-to-end tests: signed test events and a
// NIP-01 client over the project's own WebSocket client.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "messages/nostr/event.hpp"
#include "messages/nostr/json.hpp"
#include "messages/nostr/relay_message.hpp"
#include "runtime/net/ws_client.hpp"
#include "tests/support/graspd_process.hpp"
#include "tests/support/nostr_builders.hpp"

namespace graspd::test {

/// These tests exercise NIP-01 mechanics with arbitrary kinds, so the GRASP-01
/// acceptance policy (which refuses events unrelated to a repository, tested
/// on its own) is switched to "open"; `extra` adds or overrides variables.
inline GraspdOptions relay_options(std::vector<std::pair<std::string, std::string>> extra = {}) {
  GraspdOptions options;
  options.env = {{"NGIT_ACCEPTANCE_POLICY", "open"}, {"NGIT_SYNC_ENABLED", "false"}};
  options.env.insert(options.env.end(), extra.begin(), extra.end());
  return options;
}

/// A kind-`kind` event signed by `secret_key(key_seed)`.
inline nostr::Event make_event(std::uint32_t kind, std::string content, nostr::Tags tags = {},
                               std::int64_t created_at = 1700000000, std::uint8_t key_seed = 7) {
  return signed_event(kind, std::move(tags), created_at, std::move(content), key_seed);
}

/// A NIP-01 client: sends frames and waits for parsed relay messages.
class TestClient {
 public:
  /// `from`: the local address to connect from (127.0.0.2 plays another host); empty: any.
  static std::unique_ptr<TestClient> connect(std::uint16_t port, bool compression = false,
                                             std::string from = {}) {
    runtime::WsClient::Options options;
    options.compression = compression;
    options.local_address = std::move(from);
    return connect_with(port, std::move(options));
  }

  /// With every client option (e.g. the upgrade request's headers), to a relay on `host`.
  static std::unique_ptr<TestClient> connect_with(std::uint16_t port,
                                                  runtime::WsClient::Options options,
                                                  const std::string& host = "127.0.0.1") {
    auto ws = runtime::WsClient::connect(host, port, "/", std::move(options));
    if (!ws) {
      ADD_FAILURE() << "connect: " << ws.error().message;
      return nullptr;
    }
    return std::unique_ptr<TestClient>(new TestClient(std::move(*ws)));
  }

  runtime::WsClient& ws() { return *ws_; }
  void send(std::string text) { ws_->send(std::move(text)); }

  /// Next message, parsed; nullopt on timeout or an unparsable frame.
  std::optional<nostr::RelayMessage> next(
      std::chrono::milliseconds timeout = std::chrono::seconds(5)) {
    auto text = ws_->receive(timeout);
    if (!text) return std::nullopt;
    last_text_ = *text;
    auto parsed = nostr::parse_relay_message(*text, nostr::ParseLimits{});
    if (!parsed) {
      ADD_FAILURE() << "unparsable relay frame: " << *text << " (" << parsed.error() << ")";
      return std::nullopt;
    }
    return std::move(parsed.value());
  }

  template <class T>
  std::optional<T> next_as(std::chrono::milliseconds timeout = std::chrono::seconds(5)) {
    auto msg = next(timeout);
    if (!msg) return std::nullopt;
    if (auto* value = std::get_if<T>(&*msg)) return *value;
    ADD_FAILURE() << "unexpected relay frame: " << last_text_;
    return std::nullopt;
  }

  std::optional<nostr::RelayOk> publish(const nostr::Event& ev) {
    send(event_frame(ev));
    return next_as<nostr::RelayOk>();
  }

  /// Sends a REQ and collects the stored events up to EOSE.
  std::optional<std::vector<nostr::Event>> query(const std::string& subid,
                                                 const std::string& filters_json) {
    send("[\"REQ\",\"" + subid + "\"," + filters_json + "]");
    std::vector<nostr::Event> events;
    while (true) {
      auto msg = next();
      if (!msg) return std::nullopt;
      if (auto* ev = std::get_if<nostr::RelayEvent>(&*msg)) {
        EXPECT_EQ(ev->subscription_id, subid);
        events.push_back(ev->event);
        continue;
      }
      if (auto* eose = std::get_if<nostr::RelayEose>(&*msg)) {
        EXPECT_EQ(eose->subscription_id, subid);
        return events;
      }
      ADD_FAILURE() << "unexpected frame before EOSE: " << last_text_;
      return std::nullopt;
    }
  }

  const std::string& last_text() const { return last_text_; }

 private:
  explicit TestClient(std::unique_ptr<runtime::WsClient> ws) : ws_(std::move(ws)) {}
  std::unique_ptr<runtime::WsClient> ws_;
  std::string last_text_;
};

}  // namespace graspd::test
