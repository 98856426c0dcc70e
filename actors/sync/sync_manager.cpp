#include "actors/sync/sync_manager.hpp"
#include "messages/unix_clock.hpp"

#include <caf/typed_event_based_actor.hpp>

#include <ctime>

#include "actors/sync/sync_manager_peers.hpp"
#include "actors/sync/sync_metrics.hpp"
#include "runtime/ops/log.hpp"

namespace graspd {

namespace {

using sync_manager_detail::forget_peer_acks;
using sync_manager_detail::on_held_for_peers;
using sync_manager_detail::on_peer_ack_due;
using sync_manager_detail::on_relay_published;
using sync_manager_detail::send_held_to_peer;
using sync_manager_detail::SyncManagerSelf;

std::int64_t now(SyncManagerSelf self) {
  return self->state.config.unix_now();
}

bool is_peer(const SyncManagerState& st, const std::string& relay) {
  auto it = st.plan->relays().find(relay);
  return it != st.plan->relays().end() && it->second.is_peer;
}

void spawn_connection(SyncManagerSelf self, const std::string& relay, bool trusted = false) {
  auto& st = self->state;
  auto config = st.config.connection;
  config.history_slots = st.config.plan.reserved_subscriptions;
  // Operator-configured relays (the bootstrap relay, the cluster peers) are trusted; relays from
  // events are not.
  if (trusted || (st.config.bootstrap_relay && *st.config.bootstrap_relay == relay) ||
      is_peer(st, relay)) {
    config.client.allow_private_addresses = true;
    config.client.detailed_connect_errors = true;
  }
  // Cluster peers sit on the operator's own network, where bandwidth is cheap: compressing what
  // every node serves its peers would cost each of them CPU per event (docs/sync.md).
  if (is_peer(st, relay)) config.client.compression = false;
  // Linked: connections die with the manager; their normal quit leaves it be.
  auto handle = self->spawn<caf::linked>(relay_connection, relay, config, sync_manager_actor{self},
                                         st.acceptance, st.writer, st.clients);
  st.connections[relay] = handle;
  auto& figures = st.figures[relay];
  ++figures.connection_attempts;
  if (st.metrics) st.metrics->add("connection_attempts", 1);
  log::debug(log::components::sync_manager, "dialling " + relay);
}

/// Adds what the plan counted since the last call to the metrics.
void report_totals(SyncManagerState& st) {
  const auto& now = st.plan->totals();
  if (st.metrics) {
    st.metrics->add("consolidations", now.consolidations - st.reported.consolidations);
    st.metrics->add("daily_syncs", now.daily_syncs - st.reported.daily_syncs);
    st.metrics->add("evictions", now.evictions - st.reported.evictions);
    st.metrics->add("over_value_budget", now.over_value_budget - st.reported.over_value_budget);
  }
  st.reported = now;
}

void arm_publish(SyncManagerSelf self) {
  auto& st = self->state;
  if (st.publish_armed) return;
  st.publish_armed = true;
  self->delayed_send(self, st.config.status_interval, atom::publish::value);
}

/// /api/sync is refreshed within one status interval of any change.
void status_changed(SyncManagerSelf self) {
  self->state.status_dirty = true;
  arm_publish(self);
}

/// Reports from a connection that was already replaced are ignored.
bool from_current(SyncManagerSelf self, const std::string& relay) {
  auto it = self->state.connections.find(relay);
  return it != self->state.connections.end() &&
         caf::actor_cast<caf::actor_addr>(it->second) == self->current_sender();
}

bool tracks(const SyncManagerState& st, const std::string& relay) {
  return st.plan->relays().count(relay) > 0;
}

bool has_connection(const SyncManagerState& st, const std::string& relay) {
  return st.connections.count(relay) > 0;
}

// -- Commands: the plan's and the FetchRouter's (GRASP-03 fetches) ------------------------------

void subscribe(SyncManagerSelf self, const sync::OpenSubscription& c) {
  if (auto it = self->state.connections.find(c.relay); it != self->state.connections.end())
    self->send(it->second, SyncSubscribe{c.subscription_id, c.filters, c.negentropy});
}

void unsubscribe(SyncManagerSelf self, const sync::CloseSubscription& c) {
  if (auto it = self->state.connections.find(c.relay); it != self->state.connections.end())
    self->send(it->second, SyncUnsubscribe{c.subscription_id});
}

void shut_down(SyncManagerSelf self, const std::string& relay) {
  auto& st = self->state;
  if (auto it = st.connections.find(relay); it != st.connections.end()) {
    self->send(it->second, atom::shutdown::value);
    st.connections.erase(it);
  }
}

void plan_connected(SyncManagerSelf self, const std::string& relay,
                    const sync::ConnectionLimits& limits);

/// Adds what the router counted since the last call to the metrics.
void report_fetch_counts(SyncManagerState& st) {
  const auto& now = st.router.counts();
  if (st.metrics) st.metrics->add_fetch_counts(now, st.reported_fetches);
  st.reported_fetches = now;
}

void answer(SyncManagerSelf self, const sync::AnswerFetch& c) {
  auto& answers = self->state.answers;
  auto it = answers.find(c.fetch_id);
  if (it == answers.end()) return;
  it->second.deliver(FetchOutcome{c.ok, c.error});
  answers.erase(it);
}

void carry_out(SyncManagerSelf self, const sync::FetchCommand& command) {
  auto& st = self->state;
  std::visit(
      [&](const auto& c) {
        using T = std::decay_t<decltype(c)>;
        if constexpr (std::is_same_v<T, sync::Connect>) {
          spawn_connection(self, c.relay);
        } else if constexpr (std::is_same_v<T, sync::ConnectForFetches>) {
          spawn_connection(self, c.relay, c.trusted);
          log::debug(log::components::sync_manager, "dialling " + c.relay + " for " + c.role);
        } else if constexpr (std::is_same_v<T, sync::Promoted>) {
          log::info(log::components::sync_manager,
                    "promoted " + c.relay + " to a repository source");
        } else if constexpr (std::is_same_v<T, sync::Disconnect>) {
          shut_down(self, c.relay);
        } else if constexpr (std::is_same_v<T, sync::ForgetRelay>) {
          st.figures.erase(c.relay);
        } else if constexpr (std::is_same_v<T, sync::Retire>) {
          shut_down(self, c.relay);
          st.figures.erase(c.relay);
          log::debug(log::components::sync_manager,
                     "retired idle control connection to " + c.relay);
        } else if constexpr (std::is_same_v<T, sync::OpenSubscription>) {
          subscribe(self, c);
        } else if constexpr (std::is_same_v<T, sync::CloseSubscription>) {
          unsubscribe(self, c);
        } else if constexpr (std::is_same_v<T, sync::AnswerFetch>) {
          answer(self, c);
        } else if constexpr (std::is_same_v<T, sync::ArmFetchTimeout>) {
          self->delayed_send(self, std::chrono::seconds(c.delay_seconds), FetchTimeout{c.fetch_id});
        } else if constexpr (std::is_same_v<T, sync::ArmIdle>) {
          self->delayed_send(self, std::chrono::seconds(c.delay_seconds),
                             FetchIdle{c.relay, c.generation});
        } else if constexpr (std::is_same_v<T, sync::RefreshStatus>) {
          status_changed(self);
        }
      },
      command);
}

/// Carries out the router's commands; promotions of open connections are left in `promoted`
/// for the plan to hear of.
void execute(SyncManagerSelf self, const sync::FetchCommands& commands,
             std::vector<sync::Promoted>& promoted) {
  for (const auto& command : commands) {
    carry_out(self, command);
    if (auto* promotion = std::get_if<sync::Promoted>(&command); promotion && promotion->open)
      promoted.push_back(*promotion);
  }
  report_fetch_counts(self->state);
}

/// The plan connects the promoted relays whose connection is open.
void connect_promoted(SyncManagerSelf self, const std::vector<sync::Promoted>& promoted) {
  for (const auto& promotion : promoted) plan_connected(self, promotion.relay, *promotion.open);
}

void execute(SyncManagerSelf self, const sync::FetchCommands& commands) {
  std::vector<sync::Promoted> promoted;
  execute(self, commands, promoted);
  connect_promoted(self, promoted);
}

void execute(SyncManagerSelf self, const sync::Commands& commands) {
  auto& st = self->state;
  std::vector<sync::Promoted> promoted;
  for (const auto& command : commands) {
    std::visit(
        [&](const auto& c) {
          using T = std::decay_t<decltype(c)>;
          if constexpr (std::is_same_v<T, sync::Dial>) {
            execute(self, st.router.on_plan_dial(c.relay, has_connection(st, c.relay)), promoted);
          } else if constexpr (std::is_same_v<T, sync::HangUp>) {
            execute(self, st.router.on_plan_hang_up(c.relay), promoted);
            log::info(log::components::sync_manager, "stopped syncing with " + c.relay);
          } else if constexpr (std::is_same_v<T, sync::OpenSubscription>) {
            subscribe(self, c);
          } else if constexpr (std::is_same_v<T, sync::CloseSubscription>) {
            unsubscribe(self, c);
          } else if constexpr (std::is_same_v<T, sync::ArmRetry>) {
            self->delayed_send(self, std::chrono::seconds(c.delay_seconds), RetryTimer{c.relay});
          } else if constexpr (std::is_same_v<T, sync::ArmDaily>) {
            std::uniform_int_distribution<std::int64_t> pick(st.config.daily_min.count(),
                                                             st.config.daily_max.count());
            self->delayed_send(self, std::chrono::seconds(pick(st.rng)),
                               DailyTick{c.relay, c.generation});
          }
        },
        command);
  }
  report_totals(st);
  st.state_dirty = true;
  status_changed(self);
  connect_promoted(self, promoted);
}

void plan_connected(SyncManagerSelf self, const std::string& relay,
                    const sync::ConnectionLimits& limits) {
  execute(self, self->state.plan->on_connected(relay, limits.max_message_bytes, limits.max_filters,
                                               now(self), limits.nip77, limits.max_subscriptions,
                                               limits.max_subscription_values));
}

// -- GRASP-03 fetch path: facts for the FetchRouter ---------------------------------------------

const char* role_name(FetchRole role) {
  return role == FetchRole::discovery ? "discovery" : "history";
}

caf::result<FetchOutcome> on_fetch(SyncManagerSelf self, RelayFetch& request) {
  auto& st = self->state;
  auto promise = self->make_response_promise<FetchOutcome>();
  const sync::RelayFacts facts{.ours = st.config.plan.own_relays.count(request.relay) > 0,
                               .tracked = tracks(st, request.relay),
                               .connected = has_connection(st, request.relay)};
  auto start = st.router.on_fetch(
      sync::FetchRequest{request.relay, std::move(request.filters), request.trusted,
                         role_name(request.role), request.budget_seconds},
      facts, now(self));
  st.answers.emplace(start.id, promise);
  execute(self, start.commands);
  return promise;
}

sync::ConnectionLimits limits_of(const RelayUp& up) {
  return {up.max_message_bytes, up.max_filters, up.nip77(), up.max_subscriptions,
          up.max_subscription_values};
}

sync::RelayProgress progress_of(const RelayTraffic& traffic) {
  return {traffic.pages, traffic.negentropy_rounds, traffic.events_received,
          traffic.events_unrequested, traffic.events_invalid};
}

void update_gauges(SyncManagerSelf self) {
  auto& st = self->state;
  if (!st.metrics) return;
  std::map<std::string, double> by_status{{"connected", 0}, {"connecting", 0}, {"disconnected", 0}};
  std::map<std::string, double> by_health{{"healthy", 0}, {"degraded", 0}, {"dead", 0}};
  double subscriptions = 0, filters = 0, pending = 0;
  auto t = now(self);
  for (const auto& [relay, state] : st.plan->relays()) {
    by_status[sync::to_string(state.status)] += 1;
    by_health[sync::to_string(st.plan->health_of(state, t))] += 1;
    subscriptions += static_cast<double>(state.subscriptions.size());
    filters += static_cast<double>(state.open_filter_count());
    pending += static_cast<double>(state.pending.size());
  }
  for (const auto& [k, v] : by_status) st.metrics->relays.Add({{"status", k}}).Set(v);
  for (const auto& [k, v] : by_health) st.metrics->health.Add({{"health", k}}).Set(v);
  st.metrics->open.Add({{"what", "subscriptions"}}).Set(subscriptions);
  st.metrics->open.Add({{"what", "filters"}}).Set(filters);
  st.metrics->open.Add({{"what", "pending_batches"}}).Set(pending);
}

/// The purgatory figures as /api/sync would show them.
std::array<std::uint64_t, policy::held_kind_count + 2> purgatory_figures(
    const SyncManagerState& st) {
  std::array<std::uint64_t, policy::held_kind_count + 2> out{};
  if (!st.config.purgatory) return out;
  const auto& p = *st.config.purgatory;
  for (std::size_t i = 0; i < policy::held_kind_count; ++i) out[i] = p.held[i];
  out[policy::held_kind_count] = p.released;
  out[policy::held_kind_count + 1] = p.expired;
  return out;
}

void publish_status(SyncManagerSelf self) {
  auto& st = self->state;
  auto purgatory = purgatory_figures(st);
  if (purgatory != st.purgatory_shown) st.status_dirty = true;
  if (!st.status_dirty) return;
  st.purgatory_shown = purgatory;
  st.status_dirty = false;
  update_gauges(self);
  if (st.board) st.board->publish("sync", sync_status_json(st, now(self)));
}

void load_state(SyncManagerSelf self) {
  auto& st = self->state;
  if (st.config.state_file.empty()) return;
  auto text = sync::read_state_file(st.config.state_file);
  if (!text) return;
  if (st.plan->restore_json(*text))
    log::info(log::components::sync_manager, "resumed sync state of ", st.plan->relays().size(),
              " relays");
  else
    log::warn(log::components::sync_manager, "ignoring unreadable sync state ",
              st.config.state_file);
}

void save_state(SyncManagerState& st, std::int64_t t) {
  if (st.config.state_file.empty()) return;
  std::string error;
  if (!sync::write_state_file(st.config.state_file, st.plan->snapshot_json(t), error)) {
    log::warn(log::components::sync_manager, error);
    return;
  }
  st.state_dirty = false;
  st.last_state_save = t;
}

std::vector<sync::RepoUpdate> to_updates(RepoDiscovery& discovery) {
  std::vector<sync::RepoUpdate> out;
  out.reserve(discovery.repos.size());
  for (auto& repo : discovery.repos)
    out.push_back(sync::RepoUpdate{std::move(repo.repo), std::move(repo.relays),
                                   std::move(repo.roots), repo.removed, repo.level});
  return out;
}

/// Exit messages come from linked connections (their normal quit follows a
/// RelayDown; a crash must not take the manager down: it counts as a lost
/// connection) or from the daemon stopping us: then save before quitting.
void on_exit(SyncManagerSelf self, caf::exit_msg& msg) {
  auto& st = self->state;
  for (auto it = st.connections.begin(); it != st.connections.end(); ++it) {
    if (caf::actor_cast<caf::actor_addr>(it->second) != msg.source) continue;
    auto relay = it->first;
    st.connections.erase(it);
    execute(self, st.router.on_connection_lost(relay, "connection actor ended"));
    if (msg.reason != caf::exit_reason::normal)
      execute(self, st.plan->on_disconnected(relay, "connection actor failed", now(self)));
    return;
  }
  // anon_send_exit names the receiver itself as the source; any other
  // source is a connection already forgotten.
  if (msg.source && msg.source != self->address()) return;
  save_state(st, now(self));
  self->quit(msg.reason);
}

void on_relay_down(SyncManagerSelf self, RelayDown& down) {
  if (!from_current(self, down.relay)) return;
  auto& st = self->state;
  st.connections.erase(down.relay);
  forget_peer_acks(self, down.relay);
  const bool fetches_only = st.router.serves_fetches_only(down.relay, tracks(st, down.relay));
  execute(self, st.router.on_connection_lost(
                    down.relay, down.reason.empty() ? "connection lost" : down.reason));
  if (fetches_only) {
    st.figures.erase(down.relay);
    log::debug(log::components::sync_manager,
               "control connection to " + down.relay + " ended: " + down.reason);
    return;
  }
  auto& figures = st.figures[down.relay];
  figures.last_error = down.reason;
  if (down.was_open) {
    figures.last_disconnect = now(self);
    log::info(log::components::sync_manager, "lost " + down.relay + ": " + down.reason);
    execute(self, st.plan->on_disconnected(down.relay, down.reason, now(self)));
  } else if (is_peer(st, down.relay)) {
    // Operator input, retried every base backoff: the operator is told which option names it.
    log::warn(log::components::sync_manager, "cannot connect to cluster peer " + down.relay +
                                                 " (NGIT_SYNC_PEERS): " + down.reason);
    execute(self, st.plan->on_connect_failed(down.relay, down.reason, now(self)));
  } else {
    log::debug(log::components::sync_manager,
               "cannot connect to " + down.relay + ": " + down.reason);
    execute(self, st.plan->on_connect_failed(down.relay, down.reason, now(self)));
  }
}

void on_traffic(SyncManagerSelf self, const RelayTraffic& traffic) {
  auto& st = self->state;
  st.router.on_traffic(traffic.relay, progress_of(traffic));
  st.figures[traffic.relay] += traffic;
  if (st.metrics)
    traffic.for_each([&](const char* what, std::uint64_t n) { st.metrics->add(what, n); });
  status_changed(self);
}

}  // namespace

namespace {

sync::FetchRouterConfig fetch_router_config(const SyncManagerConfig& config) {
  return {.fetch_timeout_seconds = config.fetch_timeout.count(),
          .fetch_max_duration_seconds = config.fetch_max_duration.count(),
          .control_idle_seconds = config.control_idle.count(),
          .negentropy = config.plan.negentropy,
          .default_max_message_bytes = config.plan.default_max_message_bytes,
          .default_max_filters = config.plan.default_max_filters};
}

void init_state(SyncManagerSelf self, SyncManagerConfig config, acceptance_actor acceptance,
                store_writer_actor writer, RelayClientFactory clients,
                std::shared_ptr<runtime::StatusBoard> board,
                const std::shared_ptr<prometheus::Registry>& registry) {
  auto& st = self->state;
  config.unix_now = or_system_clock(std::move(config.unix_now));
  st.config = std::move(config);
  st.plan = std::make_unique<sync::SyncPlan>(st.config.plan);
  st.acceptance = std::move(acceptance);
  st.writer = std::move(writer);
  st.clients = std::move(clients);
  st.board = std::move(board);
  st.rng.seed(st.config.random_seed);
  if (registry) st.metrics = std::make_shared<SyncMetrics>(*registry);
  st.router = sync::FetchRouter(fetch_router_config(st.config));
}

void on_relay_up(SyncManagerSelf self, const RelayUp& up) {
  if (!from_current(self, up.relay)) return;
  auto& figures = self->state.figures[up.relay];
  figures.last_connect = now(self);
  figures.compressed = up.compressed;
  log::info(log::components::sync_manager, "connected to " + up.relay);
  const auto limits = limits_of(up);
  execute(self, self->state.router.on_relay_up(up.relay, limits));
  plan_connected(self, up.relay, limits);
  if (is_peer(self->state, up.relay)) send_held_to_peer(self, up.relay);
}

void on_subscription_done(SyncManagerSelf self, const RelaySubscriptionDone& done) {
  if (!from_current(self, done.relay)) return;
  if (auto routed = self->state.router.on_part_done(done.subscription_id))
    return execute(self, *routed);
  execute(self, self->state.plan->on_eose(done.relay, done.subscription_id, now(self)));
}

void on_subscription_closed(SyncManagerSelf self, const RelaySubscriptionClosed& closed) {
  if (!from_current(self, closed.relay)) return;
  if (auto routed = self->state.router.on_part_closed(closed.subscription_id, closed.message))
    return execute(self, *routed);
  log::debug(log::components::sync_manager,
             "relay " + closed.relay + " closed a subscription: " + closed.message);
  execute(self, self->state.plan->on_closed(closed.relay, closed.subscription_id,
                                            closed.rate_limited, now(self)));
}

void on_negentropy_answer(SyncManagerSelf self, const RelayNegentropy& answer) {
  if (!from_current(self, answer.relay)) return;
  log::info(log::components::sync_manager,
            answer.relay + (answer.supported ? " answers NIP-77: history by negentropy"
                                             : " does not answer NIP-77: history by REQ"));
  self->state.plan->on_negentropy(answer.relay, answer.supported);
  status_changed(self);
}

/// Refreshes /api/sync and saves the state file when it changed and is due. The timer stays armed
/// while relays are tracked (their health ages with time) or a save is pending; an idle manager
/// with no relays sleeps until something changes.
void on_publish(SyncManagerSelf self) {
  auto& st = self->state;
  st.publish_armed = false;
  publish_status(self);
  if (st.state_dirty && now(self) - st.last_state_save >= st.config.state_save_interval.count())
    save_state(st, now(self));
  if (st.state_dirty || !st.plan->relays().empty()) arm_publish(self);
}

}  // namespace

sync_manager_actor::behavior_type sync_manager(SyncManagerSelf self, SyncManagerConfig config,
                                               acceptance_actor acceptance,
                                               store_writer_actor writer,
                                               RelayClientFactory clients,
                                               std::shared_ptr<runtime::StatusBoard> board,
                                               std::shared_ptr<prometheus::Registry> registry) {
  init_state(self, std::move(config), std::move(acceptance), std::move(writer), std::move(clients),
             std::move(board), registry);
  load_state(self);
  auto& st = self->state;
  if (st.config.bootstrap_relay)
    execute(self, st.plan->add_bootstrap_relay(*st.config.bootstrap_relay, now(self)));
  for (const auto& peer : st.config.peers) execute(self, st.plan->add_peer_relay(peer, now(self)));
  if (!st.config.peers.empty() && st.acceptance)
    self->send(st.acceptance, atom::feed_subscribe::value, caf::actor_cast<peer_feed_actor>(self));
  self->set_exit_handler([self](caf::exit_msg& msg) { on_exit(self, msg); });
  self->delayed_send(self, st.config.disconnect_check_interval, atom::tick::value);
  st.publish_armed = true;
  self->send(self, atom::publish::value);
  return {
      [=](RepoDiscovery& discovery) {
        execute(self, self->state.plan->on_repositories(to_updates(discovery), now(self)));
      },
      [=](RelayUp& up) { on_relay_up(self, up); },
      [=](RelayDown& down) { on_relay_down(self, down); },
      [=](RelaySubscriptionDone& done) { on_subscription_done(self, done); },
      [=](RelaySubscriptionClosed& closed) { on_subscription_closed(self, closed); },
      [=](RelayRateLimited& limited) {
        if (!from_current(self, limited.relay)) return;
        log::info(log::components::sync_manager, "rate limited by " + limited.relay);
        execute(self, self->state.plan->on_rate_limited(limited.relay, now(self)));
      },
      [=](RelayNegentropy& answer) { on_negentropy_answer(self, answer); },
      [=](RelayTraffic& traffic) { on_traffic(self, traffic); },
      [=](HeldForPeers& held) { return on_held_for_peers(self, held); },
      [=](RelayPublished& published) { on_relay_published(self, published); },
      [=](PeerAckDue& due) { on_peer_ack_due(self, due); },
      [=](RetryTimer& timer) {
        execute(self, self->state.plan->on_retry_timer(timer.relay, now(self)));
      },
      [=](DailyTick& tick) {
        execute(self, self->state.plan->on_daily_tick(tick.relay, tick.generation, now(self)));
      },
      [=](atom::tick) {
        execute(self, self->state.plan->on_disconnect_check(now(self)));
        self->delayed_send(self, self->state.config.disconnect_check_interval, atom::tick::value);
      },
      [=](atom::publish) { on_publish(self); },
      [=](atom::status) -> std::string { return sync_status_json(self->state, now(self)); },
      [=](RelayFetch& fetch) -> caf::result<FetchOutcome> { return on_fetch(self, fetch); },
      [=](PlusCoverage& coverage) {
        execute(self, self->state.plan->on_plus_coverage(std::move(coverage.roots), now(self)));
      },
      [=](SyncPlusStatus& status) {
        self->state.plus_status = std::move(status.json);
        status_changed(self);
      },
      [=](FetchTimeout& timeout) {
        execute(self, self->state.router.on_timeout(timeout.subscription_id, now(self)));
      },
      [=](FetchIdle& idle) {
        const bool tracked = tracks(self->state, idle.relay);
        execute(self, self->state.router.on_idle(idle.relay, idle.generation, tracked));
      },
  };
}

}  // namespace graspd
