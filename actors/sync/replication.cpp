#include "actors/sync/replication.hpp"

#include <caf/actor_cast.hpp>
#include <caf/send.hpp>

#include <algorithm>

#include "messages/nostr/nip34.hpp"
#include "messages/unix_clock.hpp"
#include "store/git/git_push.hpp"

namespace graspd {

namespace {

namespace nip34 = nostr::nip34;
using ReplicationSelf = replication_actor::stateful_pointer<ReplicationState>;
using Probe = ReplicationState::Probe;

std::set<nostr::EventId> newest_roots(const policy::StoreView& view, const std::string& repo,
                                      std::size_t max_roots) {
  nostr::Filter filter;
  filter.kinds = std::vector<std::uint32_t>(nip34::root_kinds.begin(), nip34::root_kinds.end());
  filter.tags['a'] = {repo};
  filter.limit = max_roots;
  filter.normalize();
  std::set<nostr::EventId> roots;
  view.scan({filter}, [&](const nostr::Event& ev) {
    roots.insert(ev.id);
    return roots.size() < max_roots;
  });
  return roots;
}

void add_state(const policy::StoreView& view, sync::RepositoryTargets& targets) {
  auto state = git::push_authority(view, targets.owner, targets.identifier, {}).state;
  if (!state) return;
  targets.state_id = state->event_id;
  targets.wanted_refs = state->refs;
  nostr::EventId id{};
  if (!nostr::from_hex(state->event_id, id)) return;
  nostr::Filter filter;
  filter.ids = std::vector<nostr::EventId>{id};
  view.scan({filter}, [&](const nostr::Event& ev) {
    targets.state_created_at = ev.created_at;
    return false;
  });
}

std::int64_t now(ReplicationSelf self) {
  return self->state.config.unix_now();
}

void publish(ReplicationSelf self) {
  if (self->state.config.publish) self->state.config.publish(self->state.cache->summary_json());
}

void start_probe(ReplicationSelf self, std::uint64_t id, const Probe& probe) {
  auto& st = self->state;
  auto* entry = st.cache->find(probe.repo);
  auto me = caf::actor_cast<replication_actor>(self);
  if (probe.relay) {
    // Linked: the probes end with the actor that owns them (their own end is a down message).
    auto actor =
        self->spawn<caf::linked>(replication_probe, st.config.probe, probe.url,
                                 entry ? entry->targets.filters : nostr::Filters{}, id, me);
    self->monitor(actor);
    st.probe_actors[caf::actor_cast<caf::actor_addr>(actor)] = id;
    return;
  }
  ServerProbeRequest request{probe.url,
                             st.config.is_own_server && st.config.is_own_server(probe.url),
                             entry ? entry->targets.owner : nostr::Pubkey{},
                             entry ? entry->targets.identifier : std::string{}};
  st.config.probe_server(std::move(request), [me, id](ServerProbeOutcome outcome) {
    outcome.probe = id;
    caf::anon_send(me, std::move(outcome));
  });
}

void pump(ReplicationSelf self) {
  auto& st = self->state;
  while (st.running.size() < st.config.max_running && !st.queued.empty()) {
    auto [id, probe] = std::move(st.queued.front());
    st.queued.pop_front();
    st.running.emplace(id, probe);
    start_probe(self, id, probe);
  }
}

/// Queues the due measurements of `entry`, at most the per-request budget.
void schedule(ReplicationSelf self, sync::RepositoryReplication& entry) {
  auto& st = self->state;
  const auto at = now(self);
  std::size_t budget = st.config.probes_per_request;
  auto queue = [&](sync::Measurement& m, const std::string& url, bool relay) {
    if (budget == 0 || !m.due(at) || st.queued.size() >= st.config.max_queued) return;
    --budget;
    m.pending = true;
    st.queued.emplace_back(st.next_id++, Probe{entry.targets.repo, url, relay});
  };
  for (const auto& [url, source] : entry.targets.relays) queue(entry.relays[url], url, true);
  if (st.config.probe_server) {
    for (const auto& url : entry.targets.servers) queue(entry.servers[url], url, false);
  } else {
    for (const auto& url : entry.targets.servers)
      entry.servers[url].reason = "git hosting is off here";
  }
  pump(self);
}

ReplicationAnswer answer_for(ReplicationSelf self, const std::string& repo) {
  auto* entry = self->state.cache->find(repo);
  if (!entry) return {404, {}};
  return {200, sync::replication_json(*entry)};
}

/// Answers every request waiting for `repo` once none of its measurements is under way.
void deliver_ready(ReplicationSelf self, const std::string& repo) {
  auto& st = self->state;
  auto* entry = st.cache->find(repo);
  if (entry && entry->pending()) return;
  for (auto it = st.waiters.begin(); it != st.waiters.end();) {
    if (it->second.repo != repo) {
      ++it;
      continue;
    }
    it->second.promise.deliver(answer_for(self, repo));
    it = st.waiters.erase(it);
  }
}

void measured(sync::Measurement& m, std::int64_t at, const std::string& reason) {
  m.pending = false;
  m.measured_at = at;
  m.reason = reason;
}

/// The probe `id` is over: its record, if it was still running.
std::optional<Probe> take_probe(ReplicationSelf self, std::uint64_t id) {
  auto& st = self->state;
  auto it = st.running.find(id);
  if (it == st.running.end()) return std::nullopt;
  auto probe = std::move(it->second);
  st.running.erase(it);
  return probe;
}

/// After a probe: the next ones start, the requests it completes are answered, the page learns.
void after_probe(ReplicationSelf self, const std::string& repo) {
  pump(self);
  deliver_ready(self, repo);
  publish(self);
}

void on_relay_outcome(ReplicationSelf self, const RelayProbeOutcome& outcome) {
  auto probe = take_probe(self, outcome.probe);
  if (!probe) return;
  auto* entry = self->state.cache->find(probe->repo);
  if (auto it = entry ? entry->relays.find(probe->url) : decltype(entry->relays.end()){};
      entry && it != entry->relays.end()) {
    auto& figures = it->second;
    measured(figures, now(self), outcome.ok ? std::string{} : outcome.reason);
    figures.only_there = outcome.ok ? std::optional(outcome.only_there) : std::nullopt;
    figures.only_here = outcome.ok ? std::optional(outcome.only_here) : std::nullopt;
  }
  after_probe(self, probe->repo);
}

void on_server_outcome(ReplicationSelf self, ServerProbeOutcome& outcome) {
  auto probe = take_probe(self, outcome.probe);
  if (!probe) return;
  auto* entry = self->state.cache->find(probe->repo);
  if (auto it = entry ? entry->servers.find(probe->url) : decltype(entry->servers.end()){};
      entry && it != entry->servers.end()) {
    measured(it->second, now(self), outcome.ok ? std::string{} : outcome.reason);
    it->second.refs = outcome.ok ? std::optional(std::move(outcome.refs)) : std::nullopt;
  }
  after_probe(self, probe->repo);
}

/// A probe actor that ended without reporting (it failed) counts as a failed measurement.
void on_probe_down(ReplicationSelf self, const caf::down_msg& down) {
  auto& st = self->state;
  auto it = st.probe_actors.find(down.source);
  if (it == st.probe_actors.end()) return;
  auto id = it->second;
  st.probe_actors.erase(it);
  on_relay_outcome(self, RelayProbeOutcome{id, false, "the comparison failed", 0, 0});
}

/// Reads the repository, refreshes its entry and queues what is due; null when it is not here.
sync::RepositoryReplication* check(ReplicationSelf self, const ReplicationQuery& query,
                                   const std::vector<std::string>& mailboxes) {
  auto& st = self->state;
  auto targets = read_repository_targets(st.config, query.owner, query.identifier, mailboxes);
  if (!targets) return nullptr;
  auto& entry = st.cache->refresh(std::move(*targets));
  schedule(self, entry);
  return &entry;
}

using Checked = std::function<void(sync::RepositoryReplication*)>;

/// check() once Sync+ said which mailboxes it follows for the repository (at once without Sync+;
/// without them when it does not answer in time).
void check_with_mailboxes(ReplicationSelf self, ReplicationQuery query, Checked then) {
  auto& st = self->state;
  if (!st.config.plus) return then(check(self, query, {}));
  auto repo =
      nip34::format_address({nip34::kind::repo_announcement, query.owner, query.identifier});
  self->request(st.config.plus, std::chrono::seconds(2), PlusRepositoryRelays{std::move(repo)})
      .then([=](const std::vector<std::string>& mailboxes) { then(check(self, query, mailboxes)); },
            [=](caf::error&) { then(check(self, query, {})); });
}

/// Answers now when nothing is being measured, else once it is (or at the request's deadline).
void answer_when_measured(ReplicationSelf self, sync::RepositoryReplication* entry,
                          caf::typed_response_promise<ReplicationAnswer> promise) {
  auto& st = self->state;
  if (!entry) return void(promise.deliver(ReplicationAnswer{404, {}}));
  if (!entry->pending()) return void(promise.deliver(answer_for(self, entry->targets.repo)));
  auto id = st.next_id++;
  st.waiters.emplace(id, ReplicationState::Waiter{entry->targets.repo, promise});
  self->delayed_send(self, st.config.answer_wait, atom::replication_wait::value, id);
}

caf::result<ReplicationAnswer> on_query(ReplicationSelf self, const ReplicationQuery& query) {
  auto promise = self->make_response_promise<ReplicationAnswer>();
  check_with_mailboxes(self, query, [self, promise](sync::RepositoryReplication* entry) {
    answer_when_measured(self, entry, promise);
  });
  return promise;
}

void on_wait_over(ReplicationSelf self, std::uint64_t id) {
  auto& st = self->state;
  auto it = st.waiters.find(id);
  if (it == st.waiters.end()) return;
  it->second.promise.deliver(answer_for(self, it->second.repo));
  st.waiters.erase(it);
}

/// The hosted repository measured longest ago (never measured first) among the newest ones.
std::optional<std::pair<nostr::Pubkey, std::string>> sweep_candidate(ReplicationSelf self) {
  auto& st = self->state;
  nostr::Filter filter;
  filter.kinds = std::vector<std::uint32_t>{nip34::kind::repo_announcement};
  filter.limit = st.config.sweep_repositories;
  std::optional<std::pair<nostr::Pubkey, std::string>> best;
  std::int64_t best_at = 0;
  std::size_t seen = 0;
  st.config.view->scan({filter}, [&](const nostr::Event& ev) {
    auto repo = nostr::address_of(ev);
    auto* entry = st.cache->find(repo);
    if (entry && entry->pending()) return ++seen < st.config.sweep_repositories;
    auto at = entry ? entry->summary().measured_at.value_or(0) : 0;
    if (!best || at < best_at) {
      best = std::make_pair(ev.pubkey, std::string(ev.d_tag()));
      best_at = at;
    }
    return at != 0 && ++seen < st.config.sweep_repositories;  // never measured: take it
  });
  if (best && best_at != 0 && now(self) - best_at < sync::replication_refresh_seconds)
    return std::nullopt;
  return best;
}

void on_sweep(ReplicationSelf self) {
  auto& st = self->state;
  // One at a time: the sweep waits while probes are still running.
  if (st.running.empty() && st.queued.empty())
    if (auto candidate = sweep_candidate(self))
      check_with_mailboxes(self, {candidate->first, candidate->second},
                           [](sync::RepositoryReplication*) {});
  self->delayed_send(self, st.config.sweep_interval, atom::tick::value);
}

}  // namespace

std::optional<sync::RepositoryTargets> read_repository_targets(
    const ReplicationConfig& config, const nostr::Pubkey& owner, const std::string& identifier,
    const std::vector<std::string>& mailboxes) {
  const auto& view = *config.view;
  auto announcement = git::newest_announcement(view, owner, identifier);
  if (!announcement) return std::nullopt;
  sync::RepositoryTargets targets;
  targets.repo = nostr::address_of(*announcement);
  targets.owner = owner;
  targets.identifier = identifier;
  auto add_relay = [&](std::string url, sync::RelaySource source) {
    bool listed = std::any_of(targets.relays.begin(), targets.relays.end(),
                              [&](const auto& relay) { return relay.first == url; });
    if (targets.relays.size() == sync::max_replication_targets || listed ||
        config.own_relays.contains(url))
      return;
    targets.relays.emplace_back(std::move(url), source);
  };
  for (auto& url : sync::announced_relays(*announcement))
    add_relay(std::move(url), sync::RelaySource::announcement);
  for (const auto& url : mailboxes) add_relay(url, sync::RelaySource::sync_plus);
  for (auto& url : nip34::tag_values(*announcement, nip34::tag::clone)) {
    if (targets.servers.size() == sync::max_replication_targets) break;
    if (std::find(targets.servers.begin(), targets.servers.end(), url) != targets.servers.end())
      continue;
    if (config.is_own_server && config.is_own_server(url)) targets.own_servers.insert(url);
    targets.servers.push_back(std::move(url));
  }
  add_state(view, targets);
  targets.filters = sync::replication_filters(targets.repo, identifier,
                                              git::maintainer_closure(view, owner, identifier),
                                              newest_roots(view, targets.repo, config.max_roots));
  return targets;
}

replication_actor::behavior_type replication(ReplicationSelf self, ReplicationConfig config) {
  auto& st = self->state;
  config.unix_now = or_system_clock(std::move(config.unix_now));
  st.cache = std::make_unique<sync::ReplicationCache>(config.max_repositories);
  st.config = std::move(config);
  self->set_down_handler([self](caf::down_msg& down) { on_probe_down(self, down); });
  // A probe that ends, however, is handled by its down message; anything else ends this actor.
  self->set_exit_handler([self](caf::exit_msg& msg) {
    if (self->state.probe_actors.contains(msg.source)) return;
    if (msg.reason != caf::exit_reason::normal) self->quit(msg.reason);
  });
  if (st.config.sweep_interval.count() > 0)
    self->delayed_send(self, st.config.sweep_interval, atom::tick::value);
  publish(self);
  return {
      [=](const ReplicationQuery& query) { return on_query(self, query); },
      [=](const RelayProbeOutcome& outcome) { on_relay_outcome(self, outcome); },
      [=](ServerProbeOutcome& outcome) { on_server_outcome(self, outcome); },
      [=](atom::replication_wait, std::uint64_t id) { on_wait_over(self, id); },
      [=](atom::tick) { on_sweep(self); },
  };
}

}  // namespace graspd
