#include "runtime/boot/wire_relay.hpp"

#include <caf/actor_cast.hpp>
#include <caf/send.hpp>

#include <algorithm>

#include "actors/relay/client_session.hpp"
#include "actors/relay/fanout.hpp"
#include "messages/nostr/relay_message.hpp"
#include "runtime/net/http_server.hpp"
#include "runtime/net/ws_metrics.hpp"
#include "runtime/ops/metrics.hpp"

namespace graspd::boot {

namespace {

runtime::WsObserver ws_observer(std::shared_ptr<runtime::RelayMetrics> metrics) {
  runtime::WsObserver observer;
  observer.on_connections_changed = [metrics](std::size_t open) { metrics->connections(open); };
  observer.on_refused = [metrics] { metrics->connection_refused(); };
  observer.on_overflow = [metrics] { metrics->slow_reader_closed(); };
  return observer;
}

}  // namespace

NegentropyBudgetLimits negentropy_budget_limits(const runtime::Config& config) {
  NegentropyBudgetLimits limits;
  // Saturating: the cap may be configured "unlimited".
  const auto per_session = config.negentropy_max_sync_events;
  limits.max_records = per_session > UINT64_MAX / 4 ? UINT64_MAX : 4 * per_session;
  const auto percent = config.negentropy_address_share_percent;
  limits.max_records_per_address =
      limits.max_records / 100 * percent + limits.max_records % 100 * percent / 100;
  limits.scan_records_per_second = static_cast<double>(config.negentropy_address_scan_rate);
  // Enough for one NEG-OPEN of the largest size (the store reads one record past the cap).
  limits.scan_burst = static_cast<double>(per_session) + 1;
  return limits;
}

runtime::RelayLimits relay_limits(const runtime::Config& config) {
  runtime::RelayLimits limits;
  limits.max_message_bytes = config.max_message_bytes;
  limits.max_event_bytes = config.max_event_bytes;
  limits.max_subscriptions = config.max_subscriptions;
  limits.max_count_examined = config.max_count_examined;
  limits.max_subscription_values = config.max_subscription_values;
  limits.negentropy_max_sync_events = config.negentropy_max_sync_events;
  limits.negentropy_max_sessions = config.negentropy_max_sessions;
  limits.negentropy_idle_timeout = std::chrono::seconds(config.negentropy_idle_secs);
  limits.negentropy_opens_per_second = static_cast<double>(config.negentropy_open_rate);
  limits.negentropy_open_burst = static_cast<double>(config.negentropy_open_burst);
  limits.max_filters = config.max_filters;
  limits.max_limit = config.max_limit;
  limits.default_limit = std::min(config.default_limit, config.max_limit);
  limits.max_subid_length = config.max_subid_length;
  limits.max_event_tags = config.max_event_tags;
  limits.max_content_length = config.max_content_length;
  limits.max_connections = config.max_connections;
  limits.max_connections_per_ip = config.max_connections_per_ip;
  limits.events_per_second = static_cast<double>(config.event_rate);
  limits.event_burst = static_cast<double>(std::max(config.event_burst, std::uint64_t{1}));
  limits.max_outbound_bytes = config.max_outbound_bytes;
  limits.idle_ping_interval = std::chrono::seconds(config.ping_interval_secs);
  return limits;
}

runtime::WsOptions ws_options(const runtime::RelayLimits& limits, bool compression,
                              std::size_t deflate_cache_bytes) {
  runtime::WsOptions options;
  options.max_message_bytes = limits.max_message_bytes;
  options.max_outbound_bytes = limits.max_outbound_bytes;
  // Room for a few messages of the largest size in flight, so pipelining clients are not slowed.
  options.max_inbound_backlog = std::max<std::size_t>(8u << 20, 4 * limits.max_message_bytes);
  options.idle_ping_interval = limits.idle_ping_interval;
  options.compression = compression;
  options.deflate_cache_bytes = deflate_cache_bytes;
  options.max_connections = limits.max_connections;
  options.max_connections_per_ip = limits.max_connections_per_ip;
  options.overflow_frame = std::make_shared<const std::string>(
      nostr::relay_notice("error: you are not reading fast enough, closing the connection"));
  options.refused_frame = std::make_shared<const std::string>(
      nostr::relay_notice("rate-limited: too many connections, try later"));
  return options;
}

std::shared_ptr<NegentropyScanner> spawn_negentropy_scanner(
    const runtime::Config& config, std::shared_ptr<const store::EventStore> events) {
  NegentropyScannerLimits limits;
  limits.threads = config.negentropy_scan_threads;
  limits.max_queued_per_address = config.negentropy_scan_queue_per_address;
  // Every connection's sessions may wait at once; the whole queue is a bound on memory only.
  limits.max_queued = std::max<std::size_t>(1024, 4 * limits.max_queued_per_address);
  return std::make_shared<NegentropyScanner>(
      limits, [events](const nostr::Filter& filter, std::uint64_t max) {
        return events->negentropy_items(filter, max);
      });
}

WiredRelay wire_relay(const Services& services, const WiredStore& store,
                      const WiredPolicy& policy) {
  WiredRelay wired;
  auto metrics = std::make_shared<runtime::RelayMetrics>(services.metrics.registry());
  FanoutOptions fanout_options;
  fanout_options.observe_latency = [metrics](double s) { metrics->fanout_latency(s); };
  wired.fanout = spawn_fanout(services.system, std::move(fanout_options));
  caf::anon_send(store.writer, atom::feed_subscribe::value,
                 caf::actor_cast<store_feed_actor>(wired.fanout));

  auto context = std::make_shared<RelayContext>();
  context->store = store.store;
  context->writer = store.writer;
  context->acceptance = policy.acceptance;
  context->fanout = wired.fanout;
  wired.verifiers = spawn_verifiers(services);
  context->verifiers = wired.verifiers.actors;
  context->limits = relay_limits(services.config);
  // NIP-42: AUTH events must name the public service (NGIT_DOMAIN), never a forwarded Host.
  context->service = services.config.domain.address;
  context->metrics = metrics;
  context->negentropy_budget =
      std::make_shared<NegentropyBudget>(negentropy_budget_limits(services.config));
  wired.negentropy_scanner = spawn_negentropy_scanner(services.config, store.store);
  context->negentropy_scanner = wired.negentropy_scanner;

  wired.endpoint = runtime::make_websocket_endpoint(
      ws_options(context->limits, services.config.websocket_compression,
                 services.config.websocket_deflate_cache_bytes),
      make_client_session_factory(services.system, context), ws_observer(metrics));
  services.http.set_websocket_handler(wired.endpoint->upgrade_handler());
  return wired;
}

void close_sessions(const WiredRelay& wired) {
  if (wired.endpoint) wired.endpoint->close_all();
  stop(wired.verifiers);
  // Scans still waiting are dropped (their connections are closing); the store outlives this.
  if (wired.negentropy_scanner) wired.negentropy_scanner->stop();
}

void stop(const WiredRelay& wired) {
  caf::anon_send_exit(wired.fanout, caf::exit_reason::user_shutdown);
}

}  // namespace graspd::boot
