#include "actors/plus/engine/history_plan.hpp"

#include <algorithm>

#include "messages/nostr/json.hpp"

namespace graspd::sync {

std::vector<nostr::Filters> history_groups(const SyncItems& items, const HistoryConfig& config) {
  auto filters = item_filters(items, std::nullopt, config.refs_per_filter);
  std::vector<std::pair<std::string, nostr::Filter>> keyed;
  keyed.reserve(filters.size());
  for (auto& filter : filters)
    keyed.emplace_back(nostr::serialize_filter(filter), std::move(filter));
  std::stable_sort(keyed.begin(), keyed.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  nostr::Filters sorted;
  for (auto& [text, filter] : keyed) sorted.push_back(std::move(filter));
  return pack_filters(sorted, config.max_message_bytes, config.max_filters);
}

void HistoryPlan::set_desired(const std::map<std::string, SyncItems>& desired, std::int64_t now) {
  for (auto it = relays_.begin(); it != relays_.end();) {
    if (desired.count(it->first)) {
      ++it;
      continue;
    }
    if (it->second.worker) leaving_.insert(*it);
    it = relays_.erase(it);
  }
  for (const auto& [relay, items] : desired) {
    auto [it, added] = relays_.try_emplace(relay);
    auto& state = it->second;
    if (added) {
      if (auto gone = leaving_.find(relay); gone != leaving_.end()) {
        state = std::move(gone->second);
        leaving_.erase(gone);
      } else {
        state.due = now;
      }
    }
    if (!added && state.items == items) continue;
    state.items = items;
    state.groups = history_groups(items, config_);
    state.cursor = state.groups.empty() ? 0 : state.cursor % state.groups.size();
    state.done_in_rotation = 0;
    state.due = std::min(state.due, now);
  }
}

void HistoryPlan::set_authors(const std::map<std::string, std::set<nostr::Pubkey>>& authors) {
  for (auto& [relay, state] : relays_) {
    auto it = authors.find(relay);
    state.authors = it == authors.end() ? std::set<nostr::Pubkey>{} : it->second;
  }
}

std::map<nostr::Pubkey, std::size_t> HistoryPlan::author_load() const {
  std::map<nostr::Pubkey, std::size_t> load;
  for (const auto* relays : {&relays_, &leaving_})
    for (const auto& [relay, state] : *relays)
      if (state.worker || relays == &leaving_)
        for (const auto& author : state.authors) ++load[author];
  return load;
}

std::size_t HistoryPlan::workers_of(const nostr::Pubkey& author) const {
  auto load = author_load();
  auto it = load.find(author);
  return it == load.end() ? 0 : it->second;
}

std::map<std::string, HistoryPlan::Relay>::const_iterator HistoryPlan::next_due(
    std::int64_t now) const {
  auto best = relays_.end();
  if (active_workers() >= config_.max_workers) return best;
  const auto load = author_load();
  // The least-served author of a relay: its load. A relay none of whose authors is below the
  // share waits; one with no author recorded is not limited.
  auto lightest = [&](const Relay& state) -> std::optional<std::size_t> {
    if (state.authors.empty()) return 0;
    std::optional<std::size_t> least;
    for (const auto& author : state.authors) {
      auto it = load.find(author);
      const std::size_t n = it == load.end() ? 0 : it->second;
      if (!least || n < *least) least = n;
    }
    if (*least >= config_.author_workers) return std::nullopt;
    return least;
  };
  std::size_t best_load = 0;
  for (auto it = relays_.begin(); it != relays_.end(); ++it) {
    const auto& state = it->second;
    if (state.worker || state.groups.empty() || state.due > now) continue;
    auto n = lightest(state);
    if (!n) continue;
    if (best == relays_.end() || *n < best_load ||
        (*n == best_load && state.due < best->second.due)) {
      best = it;
      best_load = *n;
    }
  }
  return best;
}

std::int64_t HistoryPlan::budget_left(const std::string& relay, std::int64_t now) const {
  if (config_.relay_budget_seconds <= 0) return 0;
  auto it = relays_.find(relay);
  if (it == relays_.end()) return 1;  // leaving: its in-flight group may finish, nothing more
  return std::max<std::int64_t>(1, it->second.admitted_at + config_.relay_budget_seconds - now);
}

void HistoryPlan::on_budget_spent(Relay& state, std::int64_t now) {
  ++budgets_spent_;
  state.worker = false;
  if (state.ok_in_admission > 0) {
    // A large but honest relay: the rest of its rotation continues from the cursor.
    state.spent = 0;
    state.due = now + config_.retry_seconds;
    return;
  }
  // Nothing completed in the whole budget: a trickling or dead relay, backed off.
  ++state.spent;
  std::int64_t backoff = config_.retry_seconds;
  for (std::uint32_t i = 1; i < state.spent && backoff < config_.refresh_seconds; ++i) backoff *= 2;
  state.due = now + std::min(backoff, config_.refresh_seconds);
}

bool HistoryPlan::admissible(std::int64_t now) const {
  return next_due(now) != relays_.end();
}

std::optional<std::string> HistoryPlan::admit(std::int64_t now) {
  auto found = next_due(now);
  if (found == relays_.end()) return std::nullopt;
  auto& state = relays_.at(found->first);
  state.worker = true;
  state.done_in_rotation = 0;
  state.admitted_at = now;
  state.ok_in_admission = 0;
  return found->first;
}

std::optional<nostr::Filters> HistoryPlan::next_group(const std::string& relay) const {
  auto it = relays_.find(relay);
  if (it == relays_.end() || !it->second.worker) return std::nullopt;
  const auto& state = it->second;
  if (state.groups.empty() || state.done_in_rotation >= state.groups.size()) return std::nullopt;
  return state.groups[state.cursor % state.groups.size()];
}

bool HistoryPlan::on_group_done(const std::string& relay, bool ok, std::int64_t now) {
  auto it = relays_.find(relay);
  if (it == relays_.end()) {
    leaving_.erase(relay);
    return false;
  }
  auto& state = it->second;
  ok ? ++state.groups_ok : ++state.groups_failed;
  if (ok) ++state.ok_in_admission;
  if (!state.groups.empty()) state.cursor = (state.cursor + 1) % state.groups.size();
  ++state.done_in_rotation;
  const bool rotation_done = state.done_in_rotation >= state.groups.size();
  if (config_.relay_budget_seconds > 0 && !(ok && rotation_done) &&
      now >= state.admitted_at + config_.relay_budget_seconds) {
    on_budget_spent(state, now);
    return false;
  }
  if (ok) state.spent = 0;
  if (!ok) {
    state.worker = false;
    state.due = now + config_.retry_seconds;
    return false;
  }
  if (rotation_done) {
    state.worker = false;
    state.due = now + config_.refresh_seconds;
    return false;
  }
  return true;
}

void HistoryPlan::on_worker_gone(const std::string& relay) {
  leaving_.erase(relay);
  if (auto it = relays_.find(relay); it != relays_.end()) it->second.worker = false;
}

std::size_t HistoryPlan::active_workers() const {
  std::size_t n = leaving_.size();
  for (const auto& [relay, state] : relays_) n += state.worker ? 1 : 0;
  return n;
}

std::size_t HistoryPlan::cursors() const {
  std::size_t n = 0;
  for (const auto& [relay, state] : relays_) n += state.groups.empty() ? 0 : 1;
  return n;
}

}  // namespace graspd::sync
