#include "runtime/boot/wire_sync.hpp"

#include <algorithm>

#include <caf/actor_cast.hpp>
#include <caf/actor_system.hpp>
#include <caf/send.hpp>

#include "actors/sync/self_subscriber.hpp"
#include "actors/sync/sync_metrics.hpp"
#include "runtime/ops/log.hpp"
#include "runtime/ops/metrics.hpp"

namespace graspd::boot {

namespace {}  // namespace

SyncManagerConfig sync_manager_config(const runtime::Config& config) {
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
  plan.negentropy = config.sync_negentropy;
  auto& connection = out.connection;
  connection.client.allow_private_addresses = config.sync_allow_private_addresses;
  connection.client.max_message_bytes = config.max_message_bytes;
  connection.client.compression = config.sync_websocket_compression;
  connection.client.own_endpoint =
      config.bind_address.host + ":" + std::to_string(config.bind_address.port);
  connection.limits.max_message_bytes = config.max_message_bytes;
  connection.limits.max_event_bytes = config.max_event_bytes;
  if (config.relay_key) connection.auth_key = config.relay_key->secret;
  if (config.sync_bootstrap_relay_url) out.bootstrap_relay = config.sync_bootstrap_relay_url->str();
  out.peers = sync_peer_urls(config, true);
  out.daily_min = std::chrono::seconds(config.sync_daily_resync_min_secs);
  out.daily_max = std::chrono::seconds(config.sync_daily_resync_max_secs);
  out.disconnect_check_interval = std::chrono::seconds(config.sync_disconnect_check_interval_secs);
  out.state_file = config.data_path + "/sync-state.json";
  return out;
}

SyncPlusConfig sync_plus_config(const runtime::Config& config) {
  SyncPlusConfig out;
  out.hygiene.own_relays = own_relay_urls(config);
  out.hygiene.allow_private_addresses = config.sync_allow_private_addresses;
  for (const auto& relay : config.sync_plus_user_index_relays)
    out.user_index_relays.push_back(relay.str());
  for (const auto& relay : config.sync_plus_fallback_relays)
    out.fallback_relays.push_back(relay.str());
  if (config.sync_bootstrap_relay_url) out.bootstrap_relay = config.sync_bootstrap_relay_url->str();
  // The table refuses 0; a Config built without it must not make the pass a busy loop.
  auto seconds = [](std::uint64_t value) {
    return static_cast<std::int64_t>(std::max<std::uint64_t>(value, 1));
  };
  out.reconcile_interval = std::chrono::seconds(seconds(config.sync_plus_reconcile_secs));
  out.discovery.refresh_seconds = seconds(config.sync_plus_refresh_secs);
  out.discovery.retry_seconds = seconds(config.sync_plus_retry_secs);
  out.history.refresh_seconds = out.discovery.refresh_seconds;
  out.history.retry_seconds = out.discovery.retry_seconds;
  out.history.max_workers = std::max<std::uint64_t>(config.sync_plus_history_workers, 1);
  out.history.author_workers = std::max<std::uint64_t>(config.sync_plus_author_workers, 1);
  out.history.relay_budget_seconds = static_cast<std::int64_t>(config.sync_plus_relay_budget_secs);
  out.discovery.max_batches = std::max<std::uint64_t>(config.sync_plus_discovery_batches, 1);
  out.discovery.source_budget_seconds =
      static_cast<std::int64_t>(config.sync_plus_discovery_budget_secs);
  return out;
}

RelayClientFactory network_relay_clients(boost::asio::io_context& io,
                                         std::shared_ptr<runtime::RelayClientRegistry> registry) {
  return [&io, registry](const ParsedUrl& url, const runtime::RelayClientOptions& options,
                         std::shared_ptr<runtime::RelayClientHandler> handler) {
    return registry->start(io, url, options, std::move(handler));
  };
}

std::optional<WiredSync> wire_sync(const Services& services, const WiredStore& store,
                                   const WiredPolicy& policy) {
  if (!services.config.sync_enabled) {
    log::info("relay", "GRASP-02 sync disabled (NGIT_SYNC_ENABLED=false)");
    // Its series exist anyway, at zero: the dashboard and the alerts query them on every graspd.
    SyncMetrics{services.metrics.registry()};
    return std::nullopt;
  }
  WiredSync wired;
  wired.clients = std::make_shared<runtime::RelayClientRegistry>();
  auto config = sync_manager_config(services.config);
  config.purgatory = policy.purgatory;
  // A read transaction on the connection's worker; LMDB readers never wait for the writer.
  config.connection.already_stored = [events = store.store](const nostr::EventId& id) {
    return events->contains(id);
  };
  // NIP-77 reconciles against our own records of the filter (index keys only, no JSON).
  config.connection.local_records = [events = store.store](const nostr::Filter& filter,
                                                           std::size_t max) {
    return events->negentropy_items(filter, max);
  };
  config.connection.negentropy.max_records = services.config.negentropy_max_sync_events;
  config.connection.negentropy.max_rounds = services.config.negentropy_max_rounds;
  wired.verifiers = spawn_verifiers(services);
  config.connection.verifiers = wired.verifiers.actors;
  wired.manager =
      services.system.spawn(sync_manager, std::move(config), policy.acceptance, store.writer,
                            network_relay_clients(services.io, wired.clients), services.status,
                            services.metrics.shared_registry());
  const auto window = std::chrono::milliseconds(services.config.sync_batch_window_ms);
  if (services.config.sync_plus_enabled) {
    wired.plus = services.system.spawn(sync_plus, sync_plus_config(services.config), wired.manager,
                                       services.metrics.shared_registry());
    wired.subscriber = services.system.spawn(self_subscriber_plus,
                                             std::shared_ptr<const store::EventStore>(store.store),
                                             wired.manager, window, wired.plus);
  } else {
    wired.subscriber = services.system.spawn(self_subscriber,
                                             std::shared_ptr<const store::EventStore>(store.store),
                                             wired.manager, window);
  }
  caf::anon_send(store.writer, atom::feed_subscribe::value,
                 caf::actor_cast<store_feed_actor>(wired.subscriber));
  // Held announcements (purgatory) are synced StateOnly until promoted; the subscription brings
  // the ones read back from the store's `held` database first.
  if (policy.acceptance)
    caf::anon_send(policy.acceptance, atom::feed_subscribe::value,
                   caf::actor_cast<held_feed_actor>(wired.subscriber));
  wired.manager->attach_functor(
      [subscriber = wired.subscriber, plus = wired.plus](const caf::error&) {
        caf::anon_send_exit(subscriber, caf::exit_reason::user_shutdown);
        if (plus) caf::anon_send_exit(plus, caf::exit_reason::user_shutdown);
      });
  log::info(log::components::sync, "GRASP-02 proactive sync running");
  if (wired.plus) log::info(log::components::sync, "GRASP-03 Sync+ overlay running");
  return wired;
}

void close_connections(const WiredSync& wired) {
  wired.clients->close_all();
}

void stop(const WiredSync& wired) {
  caf::anon_send_exit(wired.manager, caf::exit_reason::user_shutdown);
  stop(wired.verifiers);
}

}  // namespace graspd::boot
