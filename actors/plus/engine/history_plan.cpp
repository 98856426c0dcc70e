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

std::map<std::string, HistoryPlan::Relay>::const_iterator HistoryPlan::next_due(
    std::int64_t now) const {
  auto best = relays_.end();
  if (active_workers() >= config_.max_workers) return best;
  for (auto it = relays_.begin(); it != relays_.end(); ++it) {
    const auto& state = it->second;
    if (state.worker || state.groups.empty() || state.due > now) continue;
    if (best == relays_.end() || state.due < best->second.due) best = it;
  }
  return best;
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
  if (!state.groups.empty()) state.cursor = (state.cursor + 1) % state.groups.size();
  ++state.done_in_rotation;
  if (!ok) {
    state.worker = false;
    state.due = now + config_.retry_seconds;
    return false;
  }
  if (state.done_in_rotation >= state.groups.size()) {
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
