// Wiring of the relay's own identity (docs/identity.md): its kind 0 and 10002, signed with the
// relay key, handed to the relay profile publisher, which stores them and publishes them to the
// user-index relays (NGIT_SYNC_PLUS_USER_INDEX_RELAYS).
#pragma once

#include <memory>
#include <vector>

#include "messages/interfaces.hpp"
#include "messages/nostr/event.hpp"
#include "runtime/boot/services.hpp"
#include "runtime/boot/wire_store.hpp"
#include "runtime/net/relay_client.hpp"

namespace graspd::boot {

struct WiredIdentity {
  relay_profile_actor publisher;  ///< null without a relay key; quits once done
  /// Its outbound connections, closed at shutdown.
  std::shared_ptr<runtime::RelayClientRegistry> clients;
};

/// The relay's kind 0 and 10002 for `config`, signed with its relay key at `created_at`; empty
/// without a key.
std::vector<nostr::Event> relay_profile(const runtime::Config& config, std::int64_t created_at);

WiredIdentity wire_identity(const Services& services, const WiredStore& store);

/// Shutdown, before the network threads drain: closes the publisher's connection.
void close_connections(const WiredIdentity& wired);

void stop(const WiredIdentity& wired);

}  // namespace graspd::boot
