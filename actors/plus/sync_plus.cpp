#include "actors/plus/sync_plus.hpp"
#include "messages/unix_clock.hpp"

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>
#include <caf/typed_event_based_actor.hpp>

#include <algorithm>
#include <ctime>

#include "actors/plus/history_worker.hpp"
#include "messages/nostr/nip34.hpp"
#include "runtime/ops/log.hpp"

namespace graspd {

struct SyncPlusMetrics {
  explicit SyncPlusMetrics(prometheus::Registry& r)
      : retained(prometheus::BuildGauge()
                     .Name("graspd_sync_plus_retained")
                     .Help("GRASP-03 Sync+ retained state: eligible_authors, "
                           "desired_history_relays, cursors, active_workers")
                     .Register(r)),
        totals(prometheus::BuildCounter()
                   .Name("graspd_sync_plus_total")
                   .Help("GRASP-03 Sync+ activity: discovery_batches, discovery_failures, "
                         "discovery_budget_spent, history_groups, history_failures, "
                         "history_budget_spent, workers_started")
                   .Register(r)) {}

  void add(const char* what) { totals.Add({{"what", what}}).Increment(); }

  prometheus::Family<prometheus::Gauge>& retained;
  prometheus::Family<prometheus::Counter>& totals;
};

namespace {

using SyncPlusSelf = sync_plus_actor::stateful_pointer<SyncPlusState>;
using nostr::Pubkey;
using Roots = std::set<nostr::EventId>;

std::int64_t now(SyncPlusSelf self) {
  return self->state.config.unix_now();
}

void count(SyncPlusSelf self, std::uint64_t& counter, const char* what) {
  ++counter;
  if (self->state.metrics) self->state.metrics->add(what);
}

const sync::PlusSnapshot& snapshot(const SyncPlusState& st) {
  static const sync::PlusSnapshot empty;
  return st.snapshot ? *st.snapshot : empty;
}

/// User-index relays and the bootstrap relay: where authors without a relay list are looked up.
std::set<std::string> index_sources(const SyncPlusConfig& config) {
  std::set<std::string> out(config.user_index_relays.begin(), config.user_index_relays.end());
  if (config.bootstrap_relay) out.insert(*config.bootstrap_relay);
  return out;
}

std::vector<std::string> ordered_index_sources(const SyncPlusConfig& config) {
  std::vector<std::string> out = config.user_index_relays;
  if (config.bootstrap_relay &&
      std::find(out.begin(), out.end(), *config.bootstrap_relay) == out.end())
    out.push_back(*config.bootstrap_relay);
  return out;
}

bool trusted(const SyncPlusConfig& config, const std::string& relay) {
  auto listed = [&](const std::vector<std::string>& relays) {
    return std::find(relays.begin(), relays.end(), relay) != relays.end();
  };
  return listed(config.user_index_relays) || listed(config.fallback_relays) ||
         (config.bootstrap_relay && *config.bootstrap_relay == relay);
}

/// An author without a retained relay list whose index query succeeded: the fallback relays
/// stand in for their mailboxes.
bool uses_fallback(const SyncPlusState& st, const Pubkey& author) {
  return !st.config.fallback_relays.empty() && !snapshot(st).relay_lists.count(author) &&
         st.discovery->index_answered(author);
}

void update_gauges(SyncPlusSelf self) {
  auto& st = self->state;
  if (!st.metrics) return;
  auto set = [&](const char* what, std::size_t n) {
    st.metrics->retained.Add({{"what", what}}).Set(static_cast<double>(n));
  };
  set("eligible_authors", snapshot(st).eligible.size());
  set("desired_history_relays", st.history->relays().size());
  set("cursors", st.history->cursors());
  set("active_workers", st.history->active_workers());
}

void publish_status(SyncPlusSelf self) {
  update_gauges(self);
  self->send(self->state.manager, SyncPlusStatus{sync_plus_status_json(self->state, now(self))});
}

void select_mailboxes(SyncPlusState& st) {
  st.mailboxes.clear();
  st.refused_urls = 0;
  for (const auto& [author, list] : snapshot(st).relay_lists) {
    auto selected = sync::select_mailboxes(list, st.config.hygiene);
    st.refused_urls += selected.refused;
    st.mailboxes.emplace(author, std::move(selected));
  }
}

void reconcile_discovery(SyncPlusState& st) {
  const auto& snap = snapshot(st);
  const auto index = ordered_index_sources(st.config);
  std::map<Pubkey, sync::DiscoveryAuthor> authors;
  for (const auto& author : snap.eligible) {
    sync::DiscoveryAuthor entry;
    entry.found = snap.relay_lists.count(author) || snap.profiles.count(author);
    if (auto it = st.mailboxes.find(author); it != st.mailboxes.end())
      entry.sources = it->second.outboxes;
    else
      entry.sources = index;
    for (const auto& source : entry.sources) ++st.reasons[source].discovery_authors;
    authors.emplace(author, std::move(entry));
  }
  st.discovery->set_index_sources(index_sources(st.config));
  st.discovery->set_authors(std::move(authors));
}

void reconcile_coverage(SyncPlusSelf self) {
  auto& st = self->state;
  std::map<std::string, Roots> coverage;
  for (const auto& [author, roots] : snapshot(st).roots_by_author) {
    const std::vector<std::string>* relays = nullptr;
    if (auto it = st.mailboxes.find(author); it != st.mailboxes.end())
      relays = &it->second.inboxes;
    else if (uses_fallback(st, author))
      relays = &st.config.fallback_relays;
    if (!relays) continue;
    for (const auto& relay : *relays) {
      coverage[relay].insert(roots.begin(), roots.end());
      ++st.reasons[relay].live_root_authors;
      if (relays == &st.config.fallback_relays) ++st.reasons[relay].fallback_authors;
    }
  }
  if (coverage == st.coverage) return;
  st.coverage = coverage;
  self->send(st.manager, PlusCoverage{std::move(coverage)});
}

void reconcile_history(SyncPlusSelf self) {
  auto& st = self->state;
  const auto& snap = snapshot(st);
  std::map<std::string, sync::SyncItems> desired;
  // Whose mailboxes each relay is: the plan's per-author share of the workers.
  std::map<std::string, std::set<Pubkey>> authors;
  for (const auto& [author, roots] : snap.threads_by_participant) {
    if (auto it = st.mailboxes.find(author); it != st.mailboxes.end()) {
      for (const auto& relay : it->second.history) {
        desired[relay].roots.insert(roots.begin(), roots.end());
        authors[relay].insert(author);
        ++st.reasons[relay].history_participants;
      }
    } else if (uses_fallback(st, author)) {
      // Their own roots are covered live on the fallback relays; the others are probed.
      Roots others;
      auto own = snap.roots_by_author.find(author);
      for (const auto& root : roots)
        if (own == snap.roots_by_author.end() || !own->second.count(root)) others.insert(root);
      if (others.empty()) continue;
      for (const auto& relay : st.config.fallback_relays) {
        desired[relay].roots.insert(others.begin(), others.end());
        authors[relay].insert(author);
        ++st.reasons[relay].history_participants;
        ++st.reasons[relay].fallback_authors;
      }
    }
  }
  if (st.config.repository_probes) {
    for (const auto& [member, repos] : snap.repos_by_member) {
      auto it = st.mailboxes.find(member);
      if (it == st.mailboxes.end()) continue;
      for (const auto& relay : it->second.inboxes) {
        auto& items = desired[relay];
        authors[relay].insert(member);
        for (const auto& repo : repos) {
          items.repos.insert(repo);
          if (auto roots = snap.roots_by_repo.find(repo); roots != snap.roots_by_repo.end())
            items.roots.insert(roots->second.begin(), roots->second.end());
        }
        ++st.reasons[relay].history_members;
      }
    }
  }
  st.history->set_desired(desired, now(self));
  st.history->set_authors(authors);
}

/// Derives sources, live coverage and history work from the current inventory.
void reconcile(SyncPlusSelf self) {
  auto& st = self->state;
  st.reasons.clear();
  select_mailboxes(st);
  reconcile_discovery(st);
  reconcile_coverage(self);
  reconcile_history(self);
}

void send_batch(SyncPlusSelf self, const sync::DiscoveryBatch& batch);
bool maintain_now(SyncPlusSelf self);
void act(SyncPlusSelf self);

/// A discovery answer takes effect when it arrives: an author the index answered for may now
/// use the fallback relays (live coverage, history), and the ended batch freed a slot for a new
/// source. Waiting for the next reconciliation delayed a reply found only on a fallback relay by
/// up to `reconcile_interval`.
void on_batch_done(SyncPlusSelf self, std::uint64_t id, bool ok) {
  auto& st = self->state;
  if (!ok) count(self, st.counts.discovery_failures, "discovery_failures");
  const auto spent = st.discovery->budgets_spent();
  const auto answers = st.discovery->index_answers();
  auto next = st.discovery->on_done(id, ok, now(self));
  if (st.discovery->budgets_spent() != spent)
    count(self, st.counts.discovery_budget_spent, "discovery_budget_spent");
  if (next) send_batch(self, *next);
  if (st.discovery->index_answers() != answers && !st.config.fallback_relays.empty())
    return act(self);
  if (maintain_now(self)) publish_status(self);
}

void send_batch(SyncPlusSelf self, const sync::DiscoveryBatch& batch) {
  auto& st = self->state;
  count(self, st.counts.discovery_batches, "discovery_batches");
  nostr::Filter filter;
  filter.kinds =
      std::vector<std::uint32_t>{nostr::nip34::kind::metadata, nostr::nip34::kind::relay_list};
  filter.authors = batch.authors;
  filter.normalize();
  const auto id = batch.id;
  self->request(st.manager, caf::infinite,
                RelayFetch{batch.source,
                           {filter},
                           trusted(st.config, batch.source),
                           FetchRole::discovery,
                           st.config.discovery.source_budget_seconds})
      .then([=](const FetchOutcome& outcome) { on_batch_done(self, id, outcome.ok); },
            [=](caf::error&) { on_batch_done(self, id, false); });
}

void start_worker(SyncPlusSelf self, const std::string& relay) {
  auto& st = self->state;
  auto worker = self->spawn<caf::linked>(history_worker, relay, sync_plus_actor{self}, st.manager);
  self->monitor(worker);
  st.workers[relay] = worker;
  count(self, st.counts.workers_started, "workers_started");
  log::debug(log::components::sync_plus, "history worker for " + relay);
}

void arm_maintenance(SyncPlusSelf self, bool started) {
  auto& st = self->state;
  if (st.maintenance_armed || !(started || st.history->admissible(now(self)))) return;
  st.maintenance_armed = true;
  self->delayed_send(self, st.config.maintenance_interval, atom::maintain::value);
}

/// A maintenance pass: one discovery batch on a new source, one history relay; repeated every
/// maintenance interval while it starts something or a relay is admissible, and run at once by
/// the facts that may make work startable (maintain_now). True when it started something: the
/// caller publishes the status once (a pass after a reconciliation did it twice).
bool maintain(SyncPlusSelf self) {
  auto& st = self->state;
  ++st.counts.passes;
  bool started = false;
  if (auto batch = st.discovery->on_pass(now(self))) {
    send_batch(self, *batch);
    started = true;
  }
  if (auto relay = st.history->admit(now(self))) {
    start_worker(self, *relay);
    started = true;
  }
  arm_maintenance(self, started);
  return started;
}

/// A fact that may make work startable (an answer, a worker gone, a new inventory) runs the pass
/// at once, unless the timer's pass is already out: it comes within the maintenance interval, and
/// relays still join at most one per interval.
bool maintain_now(SyncPlusSelf self) {
  return !self->state.maintenance_armed && maintain(self);
}

void on_maintenance_timer(SyncPlusSelf self) {
  self->state.maintenance_armed = false;
  if (maintain(self)) publish_status(self);
}

/// What the current facts say, carried out now: reconciliation (coverage goes to the sync
/// manager as soon as it changes), then a maintenance pass.
void act(SyncPlusSelf self) {
  reconcile(self);
  maintain_now(self);
  publish_status(self);
}

/// Every inventory acts at once, the start-up one (sent right after the store load) included:
/// new eligible authors are asked for at once rather than at the next reconciliation.
void on_inventory(SyncPlusSelf self, PlusInventoryUpdate& update) {
  self->state.snapshot = std::move(update.snapshot);
  act(self);
}

void on_history_next(SyncPlusSelf self, const HistoryNext& next) {
  auto& st = self->state;
  auto worker = st.workers.find(next.relay);
  if (worker == st.workers.end()) return;
  bool go_on = true;
  if (next.has_previous) {
    count(self, st.counts.history_groups, "history_groups");
    if (!next.previous_ok) count(self, st.counts.history_failures, "history_failures");
    const auto spent = st.history->budgets_spent();
    go_on = st.history->on_group_done(next.relay, next.previous_ok, now(self));
    if (st.history->budgets_spent() != spent)
      count(self, st.counts.history_budget_spent, "history_budget_spent");
  }
  auto group = go_on ? st.history->next_group(next.relay) : std::nullopt;
  if (!group) {
    st.history->on_worker_gone(next.relay);
    self->send(worker->second, HistoryGroup{true, {}, false});
    st.workers.erase(worker);
    // The freed slot may go to the next relay now.
    if (maintain_now(self))
      publish_status(self);
    else
      update_gauges(self);
    return;
  }
  self->send(worker->second, HistoryGroup{false, std::move(*group), trusted(st.config, next.relay),
                                          st.history->budget_left(next.relay, now(self))});
}

void on_worker_down(SyncPlusSelf self, const caf::down_msg& down) {
  auto& st = self->state;
  for (auto it = st.workers.begin(); it != st.workers.end(); ++it) {
    if (caf::actor_cast<caf::actor_addr>(it->second) != down.source) continue;
    st.history->on_worker_gone(it->first);
    st.workers.erase(it);
    if (maintain_now(self)) publish_status(self);
    return;
  }
}

/// The periodic reconciliation: what time alone makes due (a round to refresh or retry, a
/// back-off that ended, a history relay due again).
/// The relays Sync+ follows for `repo`'s threads: inboxes (or fallback relays) covering one of its
/// roots live, and history relays asked for the repository or one of its roots.
std::vector<std::string> repository_relays(const SyncPlusState& st, const std::string& repo) {
  const auto& snap = snapshot(st);
  auto roots = snap.roots_by_repo.find(repo);
  auto holds_a_root = [&](const Roots& covered) {
    return roots != snap.roots_by_repo.end() &&
           std::any_of(roots->second.begin(), roots->second.end(),
                       [&](const auto& root) { return covered.contains(root); });
  };
  std::set<std::string> out;
  for (const auto& [relay, covered] : st.coverage)
    if (holds_a_root(covered)) out.insert(relay);
  for (const auto& [relay, entry] : st.history->relays())
    if (entry.items.repos.contains(repo) || holds_a_root(entry.items.roots)) out.insert(relay);
  return {out.begin(), out.end()};
}

void on_tick(SyncPlusSelf self) {
  act(self);
  self->delayed_send(self, self->state.config.reconcile_interval, atom::tick::value);
}

}  // namespace

sync_plus_actor::behavior_type sync_plus(SyncPlusSelf self, SyncPlusConfig config,
                                         sync_manager_actor manager,
                                         std::shared_ptr<prometheus::Registry> registry) {
  auto& st = self->state;
  config.unix_now = or_system_clock(std::move(config.unix_now));
  st.config = std::move(config);
  st.manager = std::move(manager);
  st.discovery = std::make_unique<sync::DiscoveryPlan>(st.config.discovery);
  st.history = std::make_unique<sync::HistoryPlan>(st.config.history);
  if (registry) st.metrics = std::make_shared<SyncPlusMetrics>(*registry);
  self->set_down_handler([self](caf::down_msg& down) { on_worker_down(self, down); });
  // Linked workers end normally, or their down message cleans up: neither ends the controller.
  self->set_exit_handler([self](caf::exit_msg& msg) {
    if (msg.reason == caf::exit_reason::normal) return;
    for (const auto& [relay, worker] : self->state.workers)
      if (caf::actor_cast<caf::actor_addr>(worker) == msg.source) return;
    self->quit(msg.reason);
  });
  self->delayed_send(self, st.config.reconcile_interval, atom::tick::value);
  return {
      [=](PlusInventoryUpdate& update) { on_inventory(self, update); },
      [=](HistoryNext& next) { on_history_next(self, next); },
      [=](atom::tick) { on_tick(self); },
      [=](atom::maintain) { on_maintenance_timer(self); },
      [=](atom::status) -> std::string { return sync_plus_status_json(self->state, now(self)); },
      [=](const PlusRepositoryRelays& query) { return repository_relays(self->state, query.repo); },
  };
}

}  // namespace graspd
