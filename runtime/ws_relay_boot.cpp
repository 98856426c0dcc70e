#include "runtime/ws_relay_boot.hpp"

#include <caf/actor_cast.hpp>
#include <caf/actor_system.hpp>
#include <caf/scheduler/abstract_coordinator.hpp>
#include <caf/send.hpp>

#include <stdexcept>

#include "actors/client_session.hpp"
#include "actors/fanout.hpp"
#include "actors/store_writer.hpp"
#include "actors/verifier.hpp"
#include "messages/nostr/relay_message.hpp"
#include "runtime/daemon.hpp"
#include "runtime/http_server.hpp"
#include "runtime/log.hpp"
#include "runtime/metrics.hpp"
#include "runtime/store_metrics.hpp"
#include "runtime/sync_boot.hpp"
#include "runtime/ws_metrics.hpp"
#include "runtime/ws_session.hpp"
#include "store/event_store.hpp"

namespace graspd::runtime {

struct RelayBootState {
  std::shared_ptr<store::EventStore> store;
  store_writer_actor writer;
  acceptance_actor acceptance;
  std::shared_ptr<RelayMetrics> metrics;
  std::shared_ptr<WsEndpoint> endpoint;
};

namespace {

constexpr std::string_view component = "relay";

RelayLimits limits_of(const Config& config) {
  RelayLimits limits;
  limits.max_message_bytes = config.max_message_bytes;
  limits.max_event_bytes = config.max_event_bytes;
  limits.max_subscriptions = config.max_subscriptions;
  limits.max_count_examined = config.max_count_examined;
  limits.max_subscription_values = config.max_subscription_values;
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

WsOptions ws_options(const RelayLimits& limits, bool compression) {
  WsOptions options;
  options.max_message_bytes = limits.max_message_bytes;
  options.max_outbound_bytes = limits.max_outbound_bytes;
  // Room for a few messages of the largest size in flight, so pipelining clients are not slowed.
  options.max_inbound_backlog = std::max<std::size_t>(8u << 20, 4 * limits.max_message_bytes);
  options.idle_ping_interval = limits.idle_ping_interval;
  options.compression = compression;
  options.max_connections = limits.max_connections;
  options.max_connections_per_ip = limits.max_connections_per_ip;
  options.overflow_frame = std::make_shared<const std::string>(
      nostr::relay_notice("error: you are not reading fast enough, closing the connection"));
  options.refused_frame = std::make_shared<const std::string>(
      nostr::relay_notice("rate-limited: too many connections, try later"));
  return options;
}

}  // namespace

RelayBoot::RelayBoot() : state_(std::make_shared<RelayBootState>()) {}
RelayBoot::~RelayBoot() = default;

caf::actor RelayBoot::start_store_writer(Services& services) {
  store::StoreOptions options;
  options.path = services.config.data_path;
  try {
    state_->store = std::make_shared<store::EventStore>(std::move(options));
  } catch (const std::exception& failure) {
    throw std::runtime_error(std::string("event store: ") + failure.what());
  }
  log::info(component, "event store open at ", services.config.data_path, " (",
            state_->store->size(), " events)");
  StoreWriterConfig writer_config;
  writer_config.observe_commit = [metrics =
                                      std::make_shared<StoreMetrics>(services.metrics.registry())](
                                     std::size_t events, double seconds, bool failed) {
    metrics->commit(events, seconds, failed);
  };
  state_->writer = spawn_store_writer(services.system, state_->store, std::move(writer_config));
  return caf::actor_cast<caf::actor>(state_->writer);
}

caf::actor RelayBoot::start_relay(Services& services) {
  if (!state_->writer) throw std::logic_error("relay started before the store writer");
  state_->metrics = std::make_shared<RelayMetrics>(services.metrics.registry());
  FanoutOptions fanout_options;
  fanout_options.observe_latency = [metrics = state_->metrics](double s) {
    metrics->fanout_latency(s);
  };
  auto fanout = spawn_fanout(services.system, std::move(fanout_options));
  caf::anon_send(state_->writer, atom::feed_subscribe::value,
                 caf::actor_cast<store_feed_actor>(fanout));

  auto context = std::make_shared<RelayContext>();
  context->store = state_->store;
  context->writer = state_->writer;
  context->acceptance = state_->acceptance;
  context->fanout = fanout;
  context->verifiers = spawn_verifiers(services.system, services.system.scheduler().num_workers());
  context->limits = limits_of(services.config);
  context->metrics = state_->metrics;

  WsObserver observer;
  observer.on_connections_changed = [metrics = state_->metrics](std::size_t open) {
    metrics->connections(open);
  };
  observer.on_refused = [metrics = state_->metrics] { metrics->connection_refused(); };
  observer.on_overflow = [metrics = state_->metrics] { metrics->slow_reader_closed(); };
  state_->endpoint = make_websocket_endpoint(
      ws_options(context->limits, services.config.websocket_compression),
      make_client_session_factory(services.system, context), std::move(observer));
  services.http.set_websocket_handler(state_->endpoint->upgrade_handler());
  // Registered first, so it runs after close_all (hooks run in reverse); events still out for
  // verification then get "error:" answers on connections that are closing anyway.
  services.on_shutdown([verifiers = context->verifiers] {
    for (const auto& verifier : verifiers)
      caf::anon_send_exit(verifier, caf::exit_reason::user_shutdown);
  });
  services.on_shutdown([endpoint = state_->endpoint] { endpoint->close_all(); });
  return caf::actor_cast<caf::actor>(fanout);
}

caf::actor RelayBoot::start_acceptance(Services& services) {
  if (!state_->writer) throw std::logic_error("acceptance started before the store writer");
  if (services.config.acceptance_policy == AcceptanceMode::open) {
    log::warn(component, "NGIT_ACCEPTANCE_POLICY=open: every valid event is stored (no GRASP-01)");
    return {};
  }
  state_->acceptance = runtime::start_acceptance(services, state_->store, state_->writer);
  return caf::actor_cast<caf::actor>(state_->acceptance);
}

caf::actor RelayBoot::start_sync(Services& services) {
  if (!services.config.sync_enabled) {
    log::info(component, "GRASP-02 sync disabled (NGIT_SYNC_ENABLED=false)");
    return {};
  }
  return caf::actor_cast<caf::actor>(runtime::start_sync(services, state_->store, state_->writer,
                                                         state_->acceptance, services.status));
}

}  // namespace graspd::runtime
