// The Sync+ section of /api/sync: retained-state figures, discovery and history counters, and one
// entry per relay Sync+ tracks with its roles and why (counts of authors, never the authors).

#include "actors/ops/status_json.hpp"
#include "actors/plus/sync_plus.hpp"

namespace graspd {

std::string sync_plus_status_json(const SyncPlusState& st, std::int64_t now) {
  rapidjson::StringBuffer buffer;
  JsonWriter w(buffer);
  static const sync::PlusSnapshot none;
  const auto& snap = st.snapshot ? *st.snapshot : none;
  const auto& history = *st.history;
  w.StartObject();
  w.Key("enabled");
  w.Bool(true);
  write_count(w, "eligible_authors", snap.eligible.size());
  write_count(w, "relay_lists", snap.relay_lists.size());
  write_count(w, "descendants", snap.descendants);
  write_count(w, "descendants_dropped", snap.descendants_dropped);
  write_count(w, "refused_urls", st.refused_urls);
  write_count(w, "live_inbox_relays", st.coverage.size());
  write_count(w, "desired_history_relays", history.relays().size());
  write_count(w, "cursors", history.cursors());
  write_count(w, "active_workers", history.active_workers());
  w.Key("discovery");
  w.StartObject();
  write_count(w, "batches", st.counts.discovery_batches);
  write_count(w, "failures", st.counts.discovery_failures);
  write_count(w, "budget_spent", st.counts.discovery_budget_spent);
  w.Key("in_flight");
  w.Bool(st.discovery->in_flight());
  write_count(w, "batches_in_flight", st.discovery->batches_in_flight());
  write_count(w, "sources_backed_off", st.discovery->sources_backed_off(now));
  write_count(w, "due_authors", st.discovery->due_authors(now));
  w.EndObject();
  w.Key("history");
  w.StartObject();
  write_count(w, "groups", st.counts.history_groups);
  write_count(w, "failures", st.counts.history_failures);
  write_count(w, "budget_spent", st.counts.history_budget_spent);
  write_count(w, "workers_started", st.counts.workers_started);
  w.EndObject();
  w.Key("relays");
  w.StartArray();
  for (const auto& [relay, why] : st.reasons) {
    w.StartObject();
    w.Key("url");
    w.String(relay.c_str(), static_cast<rapidjson::SizeType>(relay.size()));
    w.Key("roles");
    w.StartArray();
    if (why.discovery_authors) w.String("discovery");
    if (st.coverage.count(relay)) w.String("repository");
    if (history.relays().count(relay)) w.String("history");
    w.EndArray();
    write_count(w, "discovery_authors", why.discovery_authors);
    write_count(w, "live_root_authors", why.live_root_authors);
    write_count(w, "history_participants", why.history_participants);
    write_count(w, "history_members", why.history_members);
    write_count(w, "fallback_authors", why.fallback_authors);
    if (auto it = history.relays().find(relay); it != history.relays().end()) {
      write_count(w, "groups", it->second.groups.size());
      write_count(w, "cursor", it->second.cursor);
      w.Key("worker");
      w.Bool(it->second.worker);
      w.Key("next_due");
      w.Int64(it->second.due);
      write_count(w, "groups_ok", it->second.groups_ok);
      write_count(w, "groups_failed", it->second.groups_failed);
      write_count(w, "budgets_spent_in_a_row", it->second.spent);
    }
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  return {buffer.GetString(), buffer.GetSize()};
}

}  // namespace graspd
