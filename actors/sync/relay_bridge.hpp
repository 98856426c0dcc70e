// Transport -> actor bridge of an outbound relay connection: runs on the io thread and only sends
// messages (relay_open with the peer's NIP-11 limits, relay_msg, relay_gone) to the actor that
// owns the connection (the sync's relay connections, the replication probes, the relay profile
// publisher).
#pragma once

#include <caf/send.hpp>

#include <string>
#include <utility>

#include "messages/atoms.hpp"
#include "messages/sync_messages.hpp"
#include "runtime/net/relay_client.hpp"

namespace graspd {

template <class Handle>
class RelayBridge final : public runtime::RelayClientHandler {
 public:
  explicit RelayBridge(Handle target) : target_(std::move(target)) {}
  void on_open(runtime::PeerLimits peer, bool compressed) override {
    caf::anon_send(target_, atom::relay_open::value,
                   RelayUp{{},
                           peer.max_message_bytes,
                           peer.max_filters,
                           peer.max_limit,
                           peer.nip77.has_value(),
                           peer.nip77.value_or(false),
                           peer.max_subscriptions,
                           peer.max_subscription_values,
                           compressed});
  }
  void on_message(std::string&& text) override {
    caf::anon_send(target_, atom::relay_msg::value, std::move(text));
  }
  void on_close(bool was_open, std::string reason) override {
    caf::anon_send(target_, atom::relay_gone::value, was_open, std::move(reason));
  }

 private:
  Handle target_;
};

}  // namespace graspd
