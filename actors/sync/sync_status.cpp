// The /api/sync document the SyncManager publishes: the plan's totals and one
// entry per tracked relay. Counter keys are the metric labels of
// TrafficCounters and SyncTotals, so a figure has one name everywhere.
#include "actors/ops/status_json.hpp"
#include "actors/sync/sync_manager.hpp"

namespace graspd {

namespace {

void write_time(JsonWriter& w, const char* key, const std::optional<std::int64_t>& value) {
  w.Key(key);
  value ? w.Int64(*value) : w.Null();
}

void write_string(JsonWriter& w, const char* key, const std::string& value) {
  w.Key(key);
  value.empty() ? w.Null()
                : w.String(value.c_str(), static_cast<rapidjson::SizeType>(value.size()));
}

void write_relay(JsonWriter& w, const sync::SyncPlan& plan, const std::string& relay,
                 const sync::RelayState& state, const RelayFigures& figures, std::int64_t t) {
  w.StartObject();
  write_string(w, "url", relay);
  w.Key("status");
  w.String(sync::to_string(state.status));
  w.Key("health");
  w.String(sync::to_string(plan.health_of(state, t)));
  w.Key("bootstrap");
  w.Bool(state.is_bootstrap);
  w.Key("peer");
  w.Bool(state.is_peer);
  w.Key("role");
  w.String("repository");
  w.Key("history_method");
  w.String(sync::history_method(state));
  w.Key("compression");
  w.Bool(figures.compressed);
  write_time(w, "last_connect", figures.last_connect);
  write_time(w, "last_disconnect", figures.last_disconnect);
  write_count(w, "repos_confirmed", state.confirmed.repos.size());
  write_count(w, "roots_confirmed", state.confirmed.roots.size());
  write_count(w, "states_confirmed", state.confirmed.states.size());
  write_count(w, "pending_batches", state.pending.size());
  write_count(w, "open_subscriptions", state.subscriptions.size());
  write_count(w, "open_filters", state.open_filter_count());
  write_count(w, "consolidations", state.consolidations);
  write_count(w, "connection_attempts", figures.connection_attempts);
  figures.for_each([&](const char* name, std::uint64_t n) { write_count(w, name, n); });
  write_string(w, "last_error",
               state.health.last_error.empty() ? figures.last_error : state.health.last_error);
  w.EndObject();
}

}  // namespace

std::string sync_status_json(const SyncManagerState& st, std::int64_t t) {
  rapidjson::StringBuffer buffer;
  JsonWriter w(buffer);
  const auto& totals = st.plan->totals();
  w.StartObject();
  write_count(w, "repositories", st.plan->repositories().size());
  // Full: stored announcements; state_only: announcements held in purgatory.
  w.Key("repository_levels");
  w.StartObject();
  for (auto level : {SyncLevel::full, SyncLevel::state_only})
    write_count(w, to_string(level), st.plan->repositories_at(level));
  w.EndObject();
  write_count(w, "daily_syncs", totals.daily_syncs);
  write_count(w, "consolidations", totals.consolidations);
  write_count(w, "evictions", totals.evictions);
  write_count(w, "over_value_budget", totals.over_value_budget);
  write_count(w, "untracked_relays", st.plan->untracked_targets());
  w.Key("relays");
  w.StartArray();
  static const RelayFigures none;
  for (const auto& [relay, state] : st.plan->relays()) {
    auto it = st.figures.find(relay);
    write_relay(w, *st.plan, relay, state, it == st.figures.end() ? none : it->second, t);
  }
  w.EndArray();
  // GRASP-03: connections open for fetches only (the plan's relays are the repository ones).
  w.Key("control_connections");
  w.StartArray();
  const auto& router = st.router;
  for (const auto& [relay, control] : router.control()) {
    w.StartObject();
    write_string(w, "url", relay);
    write_string(w, "role", control.role);
    w.Key("open");
    w.Bool(router.is_open(relay));
    write_count(w, "fetches", router.fetches_on(relay));
    w.EndObject();
  }
  w.EndArray();
  const auto& counts = router.counts();
  w.Key("fetches");
  w.StartObject();
  write_count(w, "in_flight", router.fetches().size());
  write_count(w, "started", counts.started);
  write_count(w, "failed", counts.failed);
  write_count(w, "control_dials", counts.control_dials);
  write_count(w, "promotions", counts.promotions);
  write_count(w, "control_retired", counts.control_retired);
  w.EndObject();
  if (st.config.purgatory) {
    const auto& figures = st.purgatory_shown;
    w.Key("purgatory");
    w.StartObject();
    w.Key("held");
    w.StartObject();
    for (std::size_t i = 0; i < policy::held_kind_count; ++i)
      write_count(w, policy::to_string(static_cast<policy::HeldKind>(i)), figures[i]);
    w.EndObject();
    write_count(w, "released", figures[policy::held_kind_count]);
    write_count(w, "expired", figures[policy::held_kind_count + 1]);
    w.EndObject();
  }
  if (!st.plus_status.empty()) {
    w.Key("sync_plus");
    w.RawValue(st.plus_status.c_str(), st.plus_status.size(), rapidjson::kObjectType);
  }
  w.EndObject();
  return {buffer.GetString(), buffer.GetSize()};
}

}  // namespace graspd
