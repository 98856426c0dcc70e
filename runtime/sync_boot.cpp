#include "runtime/sync_boot.hpp"

#include <caf/actor_cast.hpp>
#include <caf/actor_system.hpp>
#include <caf/scheduler/abstract_coordinator.hpp>
#include <caf/send.hpp>

#include <stdexcept>

#include "actors/acceptance.hpp"
#include "actors/self_subscriber.hpp"
#include "actors/sync_manager.hpp"
#include "actors/verifier.hpp"
#include "messages/relay_url.hpp"
#include "runtime/daemon.hpp"
#include "runtime/log.hpp"
#include "runtime/metrics.hpp"
#include "store/event_store.hpp"

namespace graspd::runtime {

namespace {

constexpr std::string_view component = "sync";

/// Every spelling of this service as a relay URL (NGIT_DOMAIN and the bind
/// address, ws and wss), canonical: never dialled.
std::set<std::string> own_relay_urls(const Config& config) {
  std::set<std::string> out;
  for (const auto& host : {config.domain.text, config.bind_address.text})
    for (const char* scheme : {"ws://", "wss://"})
      if (auto url = canonical_relay_url(scheme + host)) out.insert(*url);
  return out;
}

SyncManagerConfig sync_manager_config(const Config& config) {
  SyncManagerConfig out;
  auto& plan = out.plan;
  plan.quick_reconnect_seconds = static_cast<std::int64_t>(config.sync_quick_reconnect_secs);
  plan.consolidation_threshold = config.sync_consolidation_threshold;
  plan.base_backoff_seconds = static_cast<std::int64_t>(config.sync_base_backoff_secs);
  plan.max_backoff_seconds = static_cast<std::int64_t>(config.sync_max_backoff_secs);
  plan.dead_after_seconds = static_cast<std::int64_t>(config.sync_dead_after_secs);
  plan.rate_limit_cooldown_seconds =
      static_cast<std::int64_t>(config.sync_rate_limit_cooldown_secs);
  plan.own_relays = own_relay_urls(config);
  plan.max_relays = config.sync_max_relays;
  auto& connection = out.connection;
  connection.client.allow_private_addresses = config.sync_allow_private_addresses;
  connection.client.max_message_bytes = config.max_message_bytes;
  connection.client.own_endpoint =
      config.bind_address.host + ":" + std::to_string(config.bind_address.port);
  connection.limits.max_message_bytes = config.max_message_bytes;
  connection.limits.max_event_bytes = config.max_event_bytes;
  if (config.sync_bootstrap_relay_url) out.bootstrap_relay = config.sync_bootstrap_relay_url->str();
  out.daily_min = std::chrono::seconds(config.sync_daily_resync_min_secs);
  out.daily_max = std::chrono::seconds(config.sync_daily_resync_max_secs);
  out.disconnect_check_interval = std::chrono::seconds(config.sync_disconnect_check_interval_secs);
  out.state_file = config.data_path + "/sync-state.json";
  return out;
}

}  // namespace

policy::PolicyConfig policy_config(const Config& config) {
  policy::PolicyConfig out;
  out.service = config.domain.address;
  out.event_blacklist = config.event_blacklist;
  out.repository_whitelist = config.repository_whitelist;
  out.repository_blacklist = config.repository_blacklist;
  return out;
}

acceptance_actor start_acceptance(Services& services, std::shared_ptr<store::EventStore> store,
                                  store_writer_actor writer) {
  AcceptanceConfig config;
  config.policy = policy_config(services.config);
  auto handle = services.system.spawn(acceptance, std::move(config),
                                      std::shared_ptr<const store::EventStore>(store), writer,
                                      services.metrics.shared_registry());
  caf::anon_send(writer, atom::feed_subscribe::value, caf::actor_cast<store_feed_actor>(handle));
  log::info("acceptance", "GRASP-01 acceptance policy for ", services.config.domain.text);
  return handle;
}

sync_manager_actor start_sync(Services& services, std::shared_ptr<store::EventStore> store,
                              store_writer_actor writer, acceptance_actor acceptance,
                              std::shared_ptr<StatusBoard> board) {
  auto clients = std::make_shared<RelayClientRegistry>();
  // Outbound connections close with the listener, before the io threads stop.
  services.on_shutdown([clients] { clients->close_all(); });
  auto config = sync_manager_config(services.config);
  // A read transaction on the connection's worker; LMDB readers never wait for the writer.
  config.connection.already_stored = [store](const nostr::EventId& id) {
    return store->contains(id);
  };
  // Their own verifiers, not the client sessions': a large history then queues behind these, and
  // the scheduler still gives the clients' verifiers their turn.
  auto verifiers = spawn_verifiers(services.system, services.system.scheduler().num_workers());
  config.connection.verifiers = verifiers;
  auto manager = services.system.spawn(sync_manager, std::move(config), std::move(acceptance),
                                       writer, network_relay_clients(services.io, clients),
                                       std::move(board), services.metrics.shared_registry());
  auto subscriber = services.system.spawn(
      self_subscriber, std::shared_ptr<const store::EventStore>(store), manager,
      std::chrono::milliseconds(services.config.sync_batch_window_ms));
  caf::anon_send(writer, atom::feed_subscribe::value,
                 caf::actor_cast<store_feed_actor>(subscriber));
  // The subscriber lives as long as the manager.
  manager->attach_functor([subscriber, verifiers](const caf::error&) {
    caf::anon_send_exit(subscriber, caf::exit_reason::user_shutdown);
    for (const auto& verifier : verifiers)
      caf::anon_send_exit(verifier, caf::exit_reason::user_shutdown);
  });
  log::info(component, "GRASP-02 proactive sync running");
  return manager;
}

}  // namespace graspd::runtime
