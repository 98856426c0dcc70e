#include "runtime/boot/wire_identity.hpp"

#include <caf/actor_system.hpp>
#include <caf/send.hpp>

#include <chrono>

#include "actors/ops/relay_profile_publisher.hpp"
#include "messages/nostr/verify.hpp"
#include "runtime/boot/wire_sync.hpp"  // network_relay_clients
#include "runtime/net/nip05.hpp"
#include "runtime/net/nip11.hpp"
#include "runtime/ops/log.hpp"

namespace graspd::boot {

std::vector<nostr::Event> relay_profile(const runtime::Config& config, std::int64_t created_at) {
  if (!config.relay_key) return {};
  ops::RelayProfileContent content;
  content.name = config.relay_name.empty() ? config.domain.text : config.relay_name;
  content.about = runtime::relay_information(config).description;  // NIP-11's, default included
  content.domain = config.domain.text;
  content.relay_url = runtime::public_relay_url(config);
  auto events = ops::relay_profile_events(content, created_at);
  for (auto& ev : events) ev = nostr::sign_event(std::move(ev), config.relay_key->secret);
  return events;
}

WiredIdentity wire_identity(const Services& services, const WiredStore& store) {
  WiredIdentity wired;
  wired.clients = std::make_shared<runtime::RelayClientRegistry>();
  const auto& config = services.config;
  auto now = std::chrono::duration_cast<std::chrono::seconds>(
                 std::chrono::system_clock::now().time_since_epoch())
                 .count();
  RelayProfileConfig profile;
  profile.events = relay_profile(config, now);
  if (profile.events.empty()) return wired;
  // The list belongs to Sync+: with the overlay off, graspd dials none of it.
  if (config.sync_enabled && config.sync_plus_enabled)
    for (const auto& relay : config.sync_plus_user_index_relays)
      profile.index_relays.push_back(relay.str());
  if (profile.index_relays.empty()) {
    // Published nowhere, so not stored either: the store holds only what clients and peers gave.
    log::info(log::components::identity,
              "no user-index relays (NGIT_SYNC_PLUS_USER_INDEX_RELAYS, while Sync+ runs): the "
              "relay's kind 0 and 10002 are neither published nor stored");
    return wired;
  }
  // The operator named these relays: dialled like the configured sync relays.
  profile.client.allow_private_addresses = config.sync_allow_private_addresses;
  profile.client.max_message_bytes = config.max_message_bytes;
  profile.client.detailed_connect_errors = true;
  profile.client.own_endpoint =
      config.bind_address.host + ":" + std::to_string(config.bind_address.port);
  profile.limits.max_message_bytes = config.max_message_bytes;
  profile.limits.max_event_bytes = config.max_event_bytes;
  wired.publisher = services.system.spawn(relay_profile_publisher, std::move(profile), store.writer,
                                          network_relay_clients(services.io, wired.clients));
  return wired;
}

void close_connections(const WiredIdentity& wired) {
  if (wired.clients) wired.clients->close_all();
}

void stop(const WiredIdentity& wired) {
  if (wired.publisher) caf::anon_send_exit(wired.publisher, caf::exit_reason::user_shutdown);
}

}  // namespace graspd::boot
