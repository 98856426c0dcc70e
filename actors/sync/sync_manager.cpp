#include "actors/sync/sync_manager.hpp"
#include "messages/unix_clock.hpp"

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>
#include <caf/typed_event_based_actor.hpp>

#include <ctime>

#include "runtime/ops/log.hpp"

namespace graspd {

struct SyncMetrics {
  explicit SyncMetrics(prometheus::Registry& r)
      : relays(prometheus::BuildGauge()
                   .Name("graspd_sync_relays")
                   .Help("Tracked relays by connection status")
                   .Register(r)),
        health(prometheus::BuildGauge()
                   .Name("graspd_sync_relay_health")
                   .Help("Tracked relays by health")
                   .Register(r)),
        totals(prometheus::BuildCounter()
                   .Name("graspd_sync_total")
                   .Help("Sync activity: connection_attempts, events_received, events_stored, "
                         "events_invalid, events_known, events_unrequested, pages, bytes_received, "
                         "consolidations, "
                         "daily_syncs, evictions, over_value_budget, and the GRASP-03 fetch path: "
                         "plus_fetches, "
                         "plus_fetch_failures, plus_control_dials, plus_promotions")
                   .Register(r)),
        open(prometheus::BuildGauge()
                 .Name("graspd_sync_open")
                 .Help("Open sync work: subscriptions, filters, pending_batches")
                 .Register(r)) {}

  void add(const char* what, std::uint64_t n) {
    if (n) totals.Add({{"what", what}}).Increment(static_cast<double>(n));
  }

  prometheus::Family<prometheus::Gauge>& relays;
  prometheus::Family<prometheus::Gauge>& health;
  prometheus::Family<prometheus::Counter>& totals;
  prometheus::Family<prometheus::Gauge>& open;
};

namespace {

using Self = sync_manager_actor::stateful_pointer<SyncManagerState>;

constexpr std::string_view component = "sync_manager";

std::int64_t now(Self self) {
  return self->state.config.unix_now();
}

void spawn_connection(Self self, const std::string& relay, bool trusted = false) {
  auto& st = self->state;
  auto config = st.config.connection;
  // Operator-configured relays are trusted; relays from events are not.
  if (trusted || (st.config.bootstrap_relay && *st.config.bootstrap_relay == relay)) {
    config.client.allow_private_addresses = true;
    config.client.detailed_connect_errors = true;
  }
  // Linked: connections die with the manager; their normal quit leaves it be.
  auto handle = self->spawn<caf::linked>(relay_connection, relay, config, sync_manager_actor{self},
                                         st.acceptance, st.writer, st.clients);
  st.connections[relay] = handle;
  auto& figures = st.figures[relay];
  ++figures.connection_attempts;
  if (st.metrics) st.metrics->add("connection_attempts", 1);
  log::debug(component, "dialling " + relay);
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

void arm_publish(Self self) {
  auto& st = self->state;
  if (st.publish_armed) return;
  st.publish_armed = true;
  self->delayed_send(self, st.config.status_interval, atom::publish::value);
}

/// /api/sync is refreshed within one status interval of any change.
void status_changed(Self self) {
  self->state.status_dirty = true;
  arm_publish(self);
}

bool has_fetches(const SyncManagerState& st, const std::string& relay) {
  for (const auto& [id, fetch] : st.fetches)
    if (fetch.relay == relay) return true;
  return false;
}

void execute(Self self, const sync::Commands& commands) {
  auto& st = self->state;
  std::vector<std::string> promoted;
  for (const auto& command : commands) {
    std::visit(
        [&](const auto& c) {
          using T = std::decay_t<decltype(c)>;
          if constexpr (std::is_same_v<T, sync::Dial>) {
            // A control-plane connection becomes a repository source: no second connection.
            if (st.connections.count(c.relay)) {
              st.control.erase(c.relay);
              ++st.fetch_counts.promotions;
              if (st.metrics) st.metrics->add("plus_promotions", 1);
              if (st.open_connections.count(c.relay)) promoted.push_back(c.relay);
              log::info(component, "promoted " + c.relay + " to a repository source");
            } else {
              spawn_connection(self, c.relay);
            }
          } else if constexpr (std::is_same_v<T, sync::HangUp>) {
            if (has_fetches(st, c.relay)) {
              // Fetches still run on it: it stays, as a control-plane connection.
              st.control.emplace(c.relay, ControlConnection{});
            } else if (auto it = st.connections.find(c.relay); it != st.connections.end()) {
              self->send(it->second, atom::shutdown::value);
              st.connections.erase(it);
            }
            if (!st.control.count(c.relay)) {
              st.open_connections.erase(c.relay);
              st.figures.erase(c.relay);
            }
            log::info(component, "stopped syncing with " + c.relay);
          } else if constexpr (std::is_same_v<T, sync::OpenSubscription>) {
            if (auto it = st.connections.find(c.relay); it != st.connections.end())
              self->send(it->second, SyncSubscribe{c.subscription_id, c.filters, c.negentropy});
          } else if constexpr (std::is_same_v<T, sync::CloseSubscription>) {
            if (auto it = st.connections.find(c.relay); it != st.connections.end())
              self->send(it->second, SyncUnsubscribe{c.subscription_id});
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
  for (const auto& relay : promoted) {
    auto up = st.open_connections.at(relay);
    execute(self,
            st.plan->on_connected(relay, up.max_message_bytes, up.max_filters, now(self),
                                  up.nip77(), up.max_subscriptions, up.max_subscription_values));
  }
}

/// Reports from a connection that was already replaced are ignored.
bool from_current(Self self, const std::string& relay) {
  auto it = self->state.connections.find(relay);
  return it != self->state.connections.end() &&
         caf::actor_cast<caf::actor_addr>(it->second) == self->current_sender();
}

// -- GRASP-03 fetch path -------------------------------------------------------

const char* role_name(FetchRole role) {
  return role == FetchRole::discovery ? "discovery" : "history";
}

void count_fetch(Self self, const char* what) {
  if (self->state.metrics) self->state.metrics->add(what, 1);
}

/// Hands a fetch to its relay's open connection, packed so that every REQ fits the peer's NIP-11
/// limits (64 KiB and 10 filters when it does not say).
void send_fetch(Self self, const std::string& id, PlusFetch& fetch) {
  auto& st = self->state;
  auto connection = st.connections.find(fetch.relay);
  auto up = st.open_connections.find(fetch.relay);
  if (connection == st.connections.end() || up == st.open_connections.end()) return;
  fetch.sent = true;
  const bool negentropy = st.config.plan.negentropy && up->second.nip77() != false;
  const auto& peer = up->second;
  auto groups = sync::pack_filters(
      fetch.filters,
      peer.max_message_bytes ? peer.max_message_bytes : st.config.plan.default_max_message_bytes,
      peer.max_filters ? peer.max_filters : st.config.plan.default_max_filters);
  for (std::size_t k = 0; k < groups.size(); ++k) {
    auto part = groups.size() == 1 ? id : id + "." + std::to_string(k);
    fetch.parts.insert(part);
    st.fetch_parts[part] = id;
    self->send(connection->second, SyncSubscribe{part, std::move(groups[k]), negentropy});
  }
}

/// A control-plane connection with no fetch left retires after `control_idle`, unless a fetch
/// comes first.
void arm_idle(Self self, const std::string& relay) {
  auto& st = self->state;
  auto control = st.control.find(relay);
  if (control == st.control.end() || has_fetches(st, relay)) return;
  self->delayed_send(self, st.config.control_idle, FetchIdle{relay, ++control->second.generation});
}

void finish_fetch(Self self, const std::string& id, bool ok, std::string error) {
  auto& st = self->state;
  auto it = st.fetches.find(id);
  if (it == st.fetches.end()) return;
  auto fetch = std::move(it->second);
  st.fetches.erase(it);
  auto connection = st.connections.find(fetch.relay);
  for (const auto& part : fetch.parts) {
    st.fetch_parts.erase(part);
    if (connection != st.connections.end()) self->send(connection->second, SyncUnsubscribe{part});
  }
  if (!ok) {
    ++st.fetch_counts.fetch_failures;
    count_fetch(self, "plus_fetch_failures");
  }
  fetch.promise.deliver(FetchOutcome{ok, std::move(error)});
  arm_idle(self, fetch.relay);
  status_changed(self);
}

/// One part's history is complete: the fetch is once every part is (the part stays open until
/// then, and is closed with the others).
void on_fetch_part_done(Self self, const std::string& part) {
  auto& st = self->state;
  auto owner = st.fetch_parts.find(part);
  if (owner == st.fetch_parts.end()) return;
  const auto id = owner->second;
  auto& fetch = st.fetches.at(id);
  auto& done = fetch.done_parts;
  done.insert(part);
  if (done.size() == fetch.parts.size()) finish_fetch(self, id, true, {});
}

/// Every fetch on `relay` fails (its connection ended).
void fail_fetches(Self self, const std::string& relay, const std::string& reason) {
  std::vector<std::string> ids;
  for (const auto& [id, fetch] : self->state.fetches)
    if (fetch.relay == relay) ids.push_back(id);
  for (const auto& id : ids) finish_fetch(self, id, false, reason);
  self->state.control.erase(relay);
}

caf::result<FetchOutcome> on_fetch(Self self, RelayFetch& request) {
  auto& st = self->state;
  auto promise = self->make_response_promise<FetchOutcome>();
  const auto& relay = request.relay;
  const bool connected = st.connections.count(relay) > 0;
  if (st.config.plan.own_relays.count(relay) || (!connected && st.plan->relays().count(relay))) {
    // Ourselves, or a repository relay waiting for its reconnect: the plan owns that timing.
    promise.deliver(FetchOutcome{false, "relay not available"});
    return promise;
  }
  auto id = "plus-" + std::to_string(st.next_fetch++);
  ++st.fetch_counts.fetches;
  count_fetch(self, "plus_fetches");
  auto& fetch = st.fetches[id];
  fetch = PlusFetch{.relay = relay,
                    .filters = std::move(request.filters),
                    .promise = promise,
                    .role = request.role,
                    .started = now(self)};
  if (!connected) {
    st.control[relay] = ControlConnection{request.role, 0};
    ++st.fetch_counts.control_dials;
    count_fetch(self, "plus_control_dials");
    spawn_connection(self, relay, request.trusted);
    log::debug(component, std::string("dialling ") + relay + " for " + role_name(request.role));
  } else if (auto control = st.control.find(relay); control != st.control.end()) {
    ++control->second.generation;  // no longer idle
  }
  send_fetch(self, id, fetch);
  self->delayed_send(self, st.config.fetch_timeout, FetchTimeout{id});
  status_changed(self);
  return promise;
}

/// A control-plane connection still without a fetch after its idle time retires.
void on_fetch_idle(Self self, const FetchIdle& idle) {
  auto& st = self->state;
  auto control = st.control.find(idle.relay);
  if (control == st.control.end() || control->second.generation != idle.generation ||
      has_fetches(st, idle.relay) || st.plan->relays().count(idle.relay))
    return;
  st.control.erase(control);
  if (auto it = st.connections.find(idle.relay); it != st.connections.end()) {
    self->send(it->second, atom::shutdown::value);
    st.connections.erase(it);
  }
  st.open_connections.erase(idle.relay);
  st.figures.erase(idle.relay);
  ++st.fetch_counts.control_retired;
  status_changed(self);
  log::debug(component, "retired idle control connection to " + idle.relay);
}

/// The connection of `relay` opened: fetches waiting for it go out.
void send_waiting_fetches(Self self, const std::string& relay) {
  for (auto& [id, fetch] : self->state.fetches)
    if (fetch.relay == relay && !fetch.sent) send_fetch(self, id, fetch);
}

void update_gauges(Self self) {
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

void publish_status(Self self) {
  auto& st = self->state;
  auto purgatory = purgatory_figures(st);
  if (purgatory != st.purgatory_shown) st.status_dirty = true;
  if (!st.status_dirty) return;
  st.purgatory_shown = purgatory;
  st.status_dirty = false;
  update_gauges(self);
  if (st.board) st.board->publish("sync", sync_status_json(st, now(self)));
}

void load_state(Self self) {
  auto& st = self->state;
  if (st.config.state_file.empty()) return;
  auto text = sync::read_state_file(st.config.state_file);
  if (!text) return;
  if (st.plan->restore_json(*text))
    log::info(component, "resumed sync state of ", st.plan->relays().size(), " relays");
  else
    log::warn(component, "ignoring unreadable sync state ", st.config.state_file);
}

void save_state(SyncManagerState& st, std::int64_t t) {
  if (st.config.state_file.empty()) return;
  std::string error;
  if (!sync::write_state_file(st.config.state_file, st.plan->snapshot_json(t), error)) {
    log::warn(component, error);
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
void on_exit(Self self, caf::exit_msg& msg) {
  auto& st = self->state;
  for (auto it = st.connections.begin(); it != st.connections.end(); ++it) {
    if (caf::actor_cast<caf::actor_addr>(it->second) != msg.source) continue;
    auto relay = it->first;
    st.connections.erase(it);
    st.open_connections.erase(relay);
    fail_fetches(self, relay, "connection actor ended");
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

void on_relay_down(Self self, RelayDown& down) {
  if (!from_current(self, down.relay)) return;
  auto& st = self->state;
  st.connections.erase(down.relay);
  st.open_connections.erase(down.relay);
  const bool control_only = st.control.count(down.relay) > 0;
  fail_fetches(self, down.relay, down.reason.empty() ? "connection lost" : down.reason);
  if (control_only && !st.plan->relays().count(down.relay)) {
    st.figures.erase(down.relay);
    log::debug(component, "control connection to " + down.relay + " ended: " + down.reason);
    return;
  }
  auto& figures = st.figures[down.relay];
  figures.last_error = down.reason;
  if (down.was_open) {
    figures.last_disconnect = now(self);
    log::info(component, "lost " + down.relay + ": " + down.reason);
    execute(self, st.plan->on_disconnected(down.relay, down.reason, now(self)));
  } else {
    log::debug(component, "cannot connect to " + down.relay + ": " + down.reason);
    execute(self, st.plan->on_connect_failed(down.relay, down.reason, now(self)));
  }
}

/// A fetch that made no progress for fetch_timeout, or that ran fetch_max_duration, fails;
/// one whose relay progressed meanwhile waits another fetch_timeout.
void on_fetch_timeout(Self self, const FetchTimeout& timeout) {
  auto& st = self->state;
  auto it = st.fetches.find(timeout.subscription_id);
  if (it == st.fetches.end()) return;
  auto& fetch = it->second;
  if (fetch.progressed && now(self) - fetch.started < st.config.fetch_max_duration.count()) {
    fetch.progressed = false;
    self->delayed_send(self, st.config.fetch_timeout, timeout);
    return;
  }
  finish_fetch(self, timeout.subscription_id, false, "timed out");
}

/// Pages, NIP-77 rounds and requested events from a relay are progress for its fetches (unrequested
/// or invalid events are not: a peer cannot keep a fetch open with noise).
void note_fetch_progress(Self self, const RelayTraffic& traffic) {
  auto requested = traffic.events_received - traffic.events_unrequested - traffic.events_invalid;
  if (traffic.pages + traffic.negentropy_rounds + requested == 0) return;
  for (auto& [id, fetch] : self->state.fetches)
    if (fetch.relay == traffic.relay && fetch.sent) fetch.progressed = true;
}

void on_traffic(Self self, const RelayTraffic& traffic) {
  auto& st = self->state;
  note_fetch_progress(self, traffic);
  st.figures[traffic.relay] += traffic;
  if (st.metrics)
    traffic.for_each([&](const char* what, std::uint64_t n) { st.metrics->add(what, n); });
  status_changed(self);
}

}  // namespace

namespace {

void init_state(Self self, SyncManagerConfig config, acceptance_actor acceptance,
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
}

void on_relay_up(Self self, const RelayUp& up) {
  if (!from_current(self, up.relay)) return;
  self->state.open_connections[up.relay] = up;
  self->state.figures[up.relay].last_connect = now(self);
  log::info(component, "connected to " + up.relay);
  send_waiting_fetches(self, up.relay);
  execute(self, self->state.plan->on_connected(up.relay, up.max_message_bytes, up.max_filters,
                                               now(self), up.nip77(), up.max_subscriptions,
                                               up.max_subscription_values));
}

void on_subscription_closed(Self self, const RelaySubscriptionClosed& closed) {
  if (!from_current(self, closed.relay)) return;
  if (auto part = self->state.fetch_parts.find(closed.subscription_id);
      part != self->state.fetch_parts.end())
    return finish_fetch(self, std::string(part->second), false, "closed: " + closed.message);
  log::debug(component, "relay " + closed.relay + " closed a subscription: " + closed.message);
  execute(self, self->state.plan->on_closed(closed.relay, closed.subscription_id,
                                            closed.rate_limited, now(self)));
}

void on_negentropy_answer(Self self, const RelayNegentropy& answer) {
  if (!from_current(self, answer.relay)) return;
  log::info(component,
            answer.relay + (answer.supported ? " answers NIP-77: history by negentropy"
                                             : " does not answer NIP-77: history by REQ"));
  self->state.plan->on_negentropy(answer.relay, answer.supported);
  status_changed(self);
}

/// Refreshes /api/sync and saves the state file when it changed and is due. The timer stays armed
/// while relays are tracked (their health ages with time) or a save is pending; an idle manager
/// with no relays sleeps until something changes.
void on_publish(Self self) {
  auto& st = self->state;
  st.publish_armed = false;
  publish_status(self);
  if (st.state_dirty && now(self) - st.last_state_save >= st.config.state_save_interval.count())
    save_state(st, now(self));
  if (st.state_dirty || !st.plan->relays().empty()) arm_publish(self);
}

}  // namespace

sync_manager_actor::behavior_type sync_manager(Self self, SyncManagerConfig config,
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
      [=](RelaySubscriptionDone& done) {
        if (!from_current(self, done.relay)) return;
        if (self->state.fetch_parts.count(done.subscription_id))
          return on_fetch_part_done(self, done.subscription_id);
        execute(self, self->state.plan->on_eose(done.relay, done.subscription_id, now(self)));
      },
      [=](RelaySubscriptionClosed& closed) { on_subscription_closed(self, closed); },
      [=](RelayRateLimited& limited) {
        if (!from_current(self, limited.relay)) return;
        log::info(component, "rate limited by " + limited.relay);
        execute(self, self->state.plan->on_rate_limited(limited.relay, now(self)));
      },
      [=](RelayNegentropy& answer) { on_negentropy_answer(self, answer); },
      [=](RelayTraffic& traffic) { on_traffic(self, traffic); },
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
      [=](FetchTimeout& timeout) { on_fetch_timeout(self, timeout); },
      [=](FetchIdle& idle) { on_fetch_idle(self, idle); },
  };
}

}  // namespace graspd
