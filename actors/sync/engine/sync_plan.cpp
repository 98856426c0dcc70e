#include "actors/sync/engine/sync_plan.hpp"

#include <algorithm>
#include <cstdint>

namespace graspd::sync {

const char* to_string(ConnectionStatus status) {
  switch (status) {
    case ConnectionStatus::disconnected:
      return "disconnected";
    case ConnectionStatus::connecting:
      return "connecting";
    case ConnectionStatus::connected:
      return "connected";
  }
  return "unknown";
}

const char* to_string(Health health) {
  switch (health) {
    case Health::healthy:
      return "healthy";
    case Health::degraded:
      return "degraded";
    case Health::dead:
      return "dead";
  }
  return "unknown";
}

const char* history_method(const RelayState& state) {
  if (!state.negentropy && state.advertised_nip77 != false) return "unknown";
  return state.uses_negentropy() ? "negentropy" : "req";
}

std::size_t RelayState::open_filter_count() const {
  std::size_t count = 0;
  for (const auto& [id, sub] : subscriptions) count += sub.filters.size();
  return count;
}

// -- SyncPlan -----------------------------------------------------------------

RelayState& SyncPlan::ensure_relay(const RelayUrl& relay) {
  return relays_[relay];
}

RelayState* SyncPlan::tracked(const RelayUrl& relay) {
  auto it = relays_.find(relay);
  return it == relays_.end() ? nullptr : &it->second;
}

SyncItems SyncPlan::targets_for(const RelayUrl& relay) const {
  auto it = targets_.find(relay);
  return it == targets_.end() ? SyncItems{} : it->second;
}

SyncItems SyncPlan::pending_items(const RelayState& state) const {
  SyncItems out;
  for (const auto& batch : state.pending) out.merge(batch.items);
  return out;
}

std::size_t SyncPlan::max_bytes(const RelayState& state) const {
  return state.max_message_bytes ? state.max_message_bytes : config_.default_max_message_bytes;
}

std::size_t SyncPlan::max_filters(const RelayState& state) const {
  return state.max_filters ? state.max_filters : config_.default_max_filters;
}

std::size_t SyncPlan::subscription_budget(const RelayState& state) const {
  auto cap = state.max_subscriptions ? state.max_subscriptions : config_.default_max_subscriptions;
  return cap > config_.reserved_subscriptions ? cap - config_.reserved_subscriptions : 1;
}

std::size_t SyncPlan::refs_per_filter(const RelayState& state) const {
  return std::max(state.refs_per_filter, config_.refs_per_filter);
}

std::size_t SyncPlan::groups(const RelayState& state, const nostr::Filters& filters) const {
  return pack_filters(filters, max_bytes(state), max_filters(state)).size();
}

bool SyncPlan::fits_budget(const RelayState& state, const SyncItems& items) const {
  auto added = groups(state, item_filters(items, std::nullopt, refs_per_filter(state)));
  return state.subscriptions.size() + added <= subscription_budget(state);
}

bool SyncPlan::widen_to_fit(RelayState& state, const SyncItems& items) const {
  // A reference costs ~70 bytes of JSON (64 hex digits or a repository address, quotes, comma).
  const std::size_t widest = std::max(config_.refs_per_filter, max_bytes(state) / 2 / 70);
  const auto announcements = groups(state, announcement_filters(std::nullopt));
  for (auto refs = refs_per_filter(state);; refs = std::min(refs * 2, widest)) {
    state.refs_per_filter = refs;
    // +1: confirmed and new items are packed apart, each may leave one REQ part-filled.
    auto needed = announcements + groups(state, item_filters(items, std::nullopt, refs)) + 1;
    if (needed <= subscription_budget(state)) return true;
    if (refs == widest) return false;
  }
}

bool SyncPlan::has_work(const RelayUrl& relay, const RelayState& state) const {
  return state.is_bootstrap || state.is_peer || !targets_for(relay).empty();
}

Commands SyncPlan::add_bootstrap_relay(const RelayUrl& relay, std::int64_t) {
  Commands out;
  auto& state = ensure_relay(relay);
  state.is_bootstrap = true;
  if (state.status == ConnectionStatus::disconnected && !state.retry_armed) dial(relay, state, out);
  return out;
}

Commands SyncPlan::add_peer_relay(const RelayUrl& relay, std::int64_t now) {
  peers_.insert(relay);
  ensure_relay(relay).is_peer = true;
  refresh_targets();
  Commands out;
  recompute(relay, ensure_relay(relay), now, out);
  return out;
}

void SyncPlan::forget(const RepoRef& repo, std::optional<SyncLevel> level) {
  for (auto& [relay, state] : relays_)
    for (auto* items : {&state.confirmed, &state.refused}) {
      if (level != SyncLevel::state_only) items->repos.erase(repo);
      if (level != SyncLevel::full) items->states.erase(repo);
    }
}

void SyncPlan::apply(const RepoUpdate& update) {
  if (update.removed) {
    // A relay left with nothing confirmed and nothing to do becomes idle: the disconnect check
    // hangs up. Its open subscriptions are not closed one by one (they may cover other items).
    repos_.erase(update.repo);
    forget(update.repo, std::nullopt);
    return;
  }
  auto& known = repos_[update.repo];
  if (update.relays) {
    known.relays.clear();
    for (const auto& relay : *update.relays)
      if (!config_.own_relays.contains(relay)) known.relays.insert(relay);
  }
  known.roots.insert(update.roots.begin(), update.roots.end());
  if (update.level && *update.level != known.level) {
    // Promotion, normally: the old level's coverage is no longer wanted, so it is neither caught
    // up nor counted as confirmed any more (its open subscriptions drain with the connection).
    forget(update.repo, known.level);
    known.level = *update.level;
  }
}

std::size_t SyncPlan::repositories_at(SyncLevel level) const {
  return static_cast<std::size_t>(
      std::count_if(repos_.begin(), repos_.end(),
                    [&](const auto& entry) { return entry.second.level == level; }));
}

Commands SyncPlan::on_repositories(const std::vector<RepoUpdate>& updates, std::int64_t now) {
  for (const auto& update : updates) apply(update);
  refresh_targets();
  Commands out;
  for (auto& [relay, state] : relays_) recompute(relay, state, now, out);
  admit_targets(now, out);
  return out;
}

void SyncPlan::refresh_targets() {
  targets_ = derive_relay_targets(repos_);
  ranks_ = rank_relays(repos_);
  for (const auto& [relay, roots] : plus_)
    if (!config_.own_relays.contains(relay) && !roots.empty())
      targets_[relay].roots.insert(roots.begin(), roots.end());
  // Everything a peer holds covers whatever repositories list it.
  for (const auto& peer : peers_) targets_[peer] = SyncItems::all();
}

Commands SyncPlan::on_plus_coverage(std::map<RelayUrl, std::set<EventId>> roots, std::int64_t now) {
  plus_ = std::move(roots);
  refresh_targets();
  Commands out;
  for (auto& [relay, state] : relays_) recompute(relay, state, now, out);
  admit_targets(now, out);
  return out;
}

AdmissionRank SyncPlan::rank_of(const RelayUrl& relay) const {
  auto it = ranks_.find(relay);
  // Tracked relays no repository lists any more are idle: they rank last.
  return it == ranks_.end() ? AdmissionRank{SIZE_MAX, 0} : it->second;
}

void SyncPlan::admit_targets(std::int64_t now, Commands& out) {
  using Ranked = std::pair<AdmissionRank, RelayUrl>;
  std::vector<Ranked> waiting, evictable;
  for (const auto& [relay, target] : targets_)
    if (!relays_.count(relay)) waiting.emplace_back(rank_of(relay), relay);
  if (waiting.empty()) return;
  std::sort(waiting.begin(), waiting.end());
  for (const auto& [relay, state] : relays_)
    if (!state.is_bootstrap && !state.is_peer) evictable.emplace_back(rank_of(relay), relay);
  std::sort(evictable.rbegin(), evictable.rend());  // worst first
  std::size_t next_victim = 0;
  for (const auto& [rank, relay] : waiting) {
    if (relays_.size() >= config_.max_relays) {
      if (next_victim == evictable.size() || !(rank < evictable[next_victim].first)) return;
      evict(evictable[next_victim++].second, out);
    }
    recompute(relay, ensure_relay(relay), now, out);
  }
}

void SyncPlan::evict(const RelayUrl& relay, Commands& out) {
  auto it = relays_.find(relay);
  if (it == relays_.end()) return;
  if (it->second.status != ConnectionStatus::disconnected) out.push_back(HangUp{relay});
  relays_.erase(it);
  ++totals_.evictions;
}

std::size_t SyncPlan::untracked_targets() const {
  std::size_t count = 0;
  for (const auto& [relay, target] : targets_) count += relays_.count(relay) ? 0 : 1;
  return count;
}

void SyncPlan::recompute(const RelayUrl& relay, RelayState& state, std::int64_t now,
                         Commands& out) {
  auto wanted = targets_for(relay).minus(state.confirmed, pending_items(state));
  wanted = wanted.minus(state.refused, SyncItems{});
  if (!wanted.empty() || state.status == ConnectionStatus::disconnected)
    add_items(relay, state, std::move(wanted), now, out);
}

void SyncPlan::add_items(const RelayUrl& relay, RelayState& state, SyncItems items,
                         std::int64_t now, Commands& out) {
  if (state.status == ConnectionStatus::disconnected) {
    // compute_actions skips disconnected relays: everything is recomputed on
    // connect. A relay with work and no retry pending is dialled now.
    if (!state.retry_armed && has_work(relay, state)) dial(relay, state, out);
    return;
  }
  if (state.status != ConnectionStatus::connected || items.empty()) return;
  if (state.rate_limited_until && *state.rate_limited_until > now) return;
  if (state.consolidation_wanted) return;  // recomputed when consolidation runs
  items = within_value_budget(state, std::move(items));
  if (items.empty()) return;
  if (!fits_budget(state, items)) {
    SyncItems everything = state.confirmed;
    everything.merge(pending_items(state));
    everything.merge(items);
    const auto before = refs_per_filter(state);
    // Past the widest filters the budget cannot be met: subscribing anyway beats not syncing.
    const bool fits = widen_to_fit(state, everything);
    // Many small batches' REQs also merge into fewer when repacked together.
    const bool repacking_helps = refs_per_filter(state) > before || (fits && !state.consolidating);
    if (repacking_helps &&
        state.subscriptions.size() > groups(state, announcement_filters(std::nullopt))) {
      // Live coverage already open is repacked at the new width with the rest.
      state.consolidation_wanted = true;
      if (state.pending.empty()) consolidate(relay, state, now, out);
      return;
    }
  }
  auto new_filters = item_filters(items, std::nullopt, refs_per_filter(state)).size();
  if (state.open_filter_count() + new_filters > config_.consolidation_threshold) {
    SyncItems everything = state.confirmed;
    everything.merge(pending_items(state));
    auto minimal = announcement_filters(std::nullopt).size() +
                   item_filters(everything, std::nullopt, refs_per_filter(state)).size();
    // Only consolidate when it frees filters; otherwise the threshold cannot
    // be met and refusing to sync would be worse than exceeding it.
    if (minimal < state.open_filter_count()) {
      state.consolidation_wanted = true;
      if (state.pending.empty()) consolidate(relay, state, now, out);
      return;
    }
  }
  subscribe_items(relay, state, items, out);
}

std::vector<std::string> SyncPlan::open(const RelayUrl& relay, RelayState& state, Layer layer,
                                        const nostr::Filters& filters,
                                        std::optional<std::uint64_t> batch, Commands& out) {
  std::vector<std::string> ids;
  for (auto& group : pack_filters(filters, max_bytes(state), max_filters(state))) {
    auto id = "gs" + std::to_string(next_subscription_++);
    state.subscriptions[id] = Subscription{layer, group, batch};
    out.push_back(OpenSubscription{relay, id, std::move(group),
                                   config_.negentropy && state.uses_negentropy()});
    ids.push_back(std::move(id));
  }
  return ids;
}

void SyncPlan::subscribe_items(const RelayUrl& relay, RelayState& state, const SyncItems& items,
                               Commands& out) {
  PendingBatch batch{next_batch_++, items, {}};
  auto filters = item_filters(items, std::nullopt, refs_per_filter(state));
  for (auto& id : open(relay, state, Layer::items, filters, batch.id, out))
    batch.outstanding.insert(std::move(id));
  state.pending.push_back(std::move(batch));
}

void SyncPlan::subscribe_catch_up(const RelayUrl& relay, RelayState& state, const SyncItems& items,
                                  std::int64_t since, Commands& out) {
  if (items.empty()) return;
  open(relay, state, Layer::catch_up, item_filters(items, since, refs_per_filter(state)),
       std::nullopt, out);
}

void SyncPlan::subscribe_announcements(const RelayUrl& relay, RelayState& state,
                                       std::optional<std::int64_t> since, Commands& out) {
  open(relay, state, Layer::announcements, announcement_filters(since), std::nullopt, out);
}

void SyncPlan::consolidate(const RelayUrl& relay, RelayState& state, std::int64_t now,
                           Commands& out) {
  state.consolidation_wanted = false;
  state.consolidating = true;  // what it subscribes is not consolidated again
  ++state.consolidations;
  ++totals_.consolidations;
  for (auto it = state.subscriptions.begin(); it != state.subscriptions.end();) {
    if (it->second.layer == Layer::announcements) {
      ++it;
      continue;
    }
    out.push_back(CloseSubscription{relay, it->first});
    it = state.subscriptions.erase(it);
  }
  subscribe_catch_up(relay, state, state.confirmed, now - config_.quick_reconnect_seconds, out);
  recompute(relay, state, now, out);
  state.consolidating = false;
}

void SyncPlan::close_all(const RelayUrl& relay, RelayState& state, Commands& out) {
  for (const auto& [id, sub] : state.subscriptions) out.push_back(CloseSubscription{relay, id});
  state.subscriptions.clear();
  state.deferred.clear();
  state.pending.clear();
  state.consolidation_wanted = false;
}

void SyncPlan::dial(const RelayUrl& relay, RelayState& state, Commands& out) {
  state.status = ConnectionStatus::connecting;
  out.push_back(Dial{relay});
}

Commands SyncPlan::on_connected(const RelayUrl& relay, std::size_t max_message_bytes,
                                std::size_t max_filters, std::int64_t now,
                                std::optional<bool> advertised_nip77, std::size_t max_subscriptions,
                                std::size_t max_subscription_values) {
  auto* state = tracked(relay);
  if (!state) return {};
  Commands out;
  state->status = ConnectionStatus::connected;
  state->advertised_nip77 = advertised_nip77;
  state->max_message_bytes = max_message_bytes;
  state->max_filters = max_filters;
  state->max_subscriptions = max_subscriptions;
  state->max_subscription_values = max_subscription_values;
  state->health = RelayHealth{};
  state->subscriptions.clear();
  const bool fresh = !state->last_connected || !state->disconnected_at ||
                     now - *state->disconnected_at > config_.quick_reconnect_seconds;
  if (state->is_peer) {
    // Reconciled whole every time (NIP-77 moves only what differs): an event accepted by the
    // peer while we were away may carry any created_at, which a catch-up `since` would miss.
    state->confirmed = {};
    state->refused = {};
  } else if (fresh) {
    state->confirmed = {};
    state->refused = {};
    subscribe_announcements(relay, *state, std::nullopt, out);
  } else {
    // Quick reconnect: catch up on what was published while we were away.
    auto since = *state->last_connected - config_.quick_reconnect_seconds;
    subscribe_announcements(relay, *state, since, out);
    subscribe_catch_up(relay, *state, state->confirmed, since, out);
  }
  state->last_connected = now;
  state->disconnected_at.reset();
  if (!state->daily_generation) {
    state->daily_generation = next_daily_generation_++;
    out.push_back(ArmDaily{relay, *state->daily_generation});
  }
  recompute(relay, *state, now, out);
  return out;
}

void SyncPlan::record_failure(RelayState& state, const std::string& error, std::int64_t now) {
  ++state.health.failures;
  if (!state.health.failing_since) state.health.failing_since = now;
  state.health.last_error = error;
}

void SyncPlan::arm_retry(const RelayUrl& relay, RelayState& state, std::int64_t now,
                         Commands& out) {
  if (state.retry_armed) return;
  state.retry_armed = true;
  out.push_back(ArmRetry{relay, backoff_seconds(state, now)});
}

Commands SyncPlan::on_connect_failed(const RelayUrl& relay, const std::string& error,
                                     std::int64_t now) {
  auto* state = tracked(relay);
  if (!state) return {};
  Commands out;
  state->status = ConnectionStatus::disconnected;
  record_failure(*state, error, now);
  if (has_work(relay, *state)) arm_retry(relay, *state, now, out);
  return out;
}

Commands SyncPlan::on_disconnected(const RelayUrl& relay, const std::string& reason,
                                   std::int64_t now) {
  auto* state = tracked(relay);
  if (!state) return {};
  Commands out;
  if (state->status == ConnectionStatus::connected) {
    state->last_connected = now;
    state->disconnected_at = now;
  }
  state->status = ConnectionStatus::disconnected;
  // PendingSyncIndex is cleared at the disconnect, not at the reconnect.
  state->subscriptions.clear();
  state->pending.clear();
  state->deferred.clear();
  state->consolidation_wanted = false;
  state->rate_limited_until.reset();
  record_failure(*state, reason, now);
  if (has_work(relay, *state)) arm_retry(relay, *state, now, out);
  return out;
}

Commands SyncPlan::on_eose(const RelayUrl& relay, const std::string& subscription_id,
                           std::int64_t now) {
  auto* state = tracked(relay);
  if (!state) return {};
  Commands out;
  auto sub = state->subscriptions.find(subscription_id);
  if (sub == state->subscriptions.end() || !sub->second.batch) return out;
  auto batch_id = *sub->second.batch;
  auto batch = std::find_if(state->pending.begin(), state->pending.end(),
                            [&](const PendingBatch& b) { return b.id == batch_id; });
  if (batch == state->pending.end()) return out;
  batch->outstanding.erase(subscription_id);
  if (batch->outstanding.empty()) {
    state->confirmed.merge(batch->items);
    state->pending.erase(batch);
  }
  if (state->consolidation_wanted && state->pending.empty()) consolidate(relay, *state, now, out);
  return out;
}

void SyncPlan::drop_batch(const RelayUrl& relay, RelayState& state, std::uint64_t batch_id,
                          Commands& out) {
  auto batch = std::find_if(state.pending.begin(), state.pending.end(),
                            [&](const PendingBatch& b) { return b.id == batch_id; });
  if (batch == state.pending.end()) return;
  state.refused.merge(batch->items);
  for (const auto& id : batch->outstanding) {
    if (state.subscriptions.erase(id)) out.push_back(CloseSubscription{relay, id});
    state.deferred.erase(id);
  }
  state.pending.erase(batch);
}

Commands SyncPlan::on_closed(const RelayUrl& relay, const std::string& subscription_id,
                             bool rate_limited, std::int64_t now) {
  auto* state = tracked(relay);
  if (!state) return {};
  Commands out;
  auto sub = state->subscriptions.find(subscription_id);
  if (sub == state->subscriptions.end()) return out;
  if (rate_limited) {
    state->deferred.insert(*sub);
    state->subscriptions.erase(sub);
    auto more = on_rate_limited(relay, now);
    out.insert(out.end(), more.begin(), more.end());
    return out;
  }
  auto batch = sub->second.batch;
  state->subscriptions.erase(sub);
  if (batch) drop_batch(relay, *state, *batch, out);
  if (state->consolidation_wanted && state->pending.empty()) consolidate(relay, *state, now, out);
  return out;
}

Commands SyncPlan::on_rate_limited(const RelayUrl& relay, std::int64_t now) {
  auto* state = tracked(relay);
  if (!state) return {};
  Commands out;
  state->rate_limited_until = now + config_.rate_limit_cooldown_seconds;
  if (!state->retry_armed) {
    state->retry_armed = true;
    out.push_back(ArmRetry{relay, config_.rate_limit_cooldown_seconds});
  }
  return out;
}

void SyncPlan::resend_deferred(const RelayUrl& relay, RelayState& state, Commands& out) {
  auto deferred = std::move(state.deferred);
  state.deferred.clear();
  for (auto& [old_id, sub] : deferred) {
    auto ids = open(relay, state, sub.layer, sub.filters, sub.batch, out);
    if (!sub.batch) continue;
    for (auto& batch : state.pending)
      if (batch.id == *sub.batch) {
        batch.outstanding.erase(old_id);
        batch.outstanding.insert(ids.begin(), ids.end());
      }
  }
}

Commands SyncPlan::on_retry_timer(const RelayUrl& relay, std::int64_t now) {
  auto* state = tracked(relay);
  if (!state) return {};
  Commands out;
  state->retry_armed = false;
  if (state->rate_limited_until && *state->rate_limited_until > now) {
    state->retry_armed = true;
    out.push_back(ArmRetry{relay, *state->rate_limited_until - now});
    return out;
  }
  state->rate_limited_until.reset();
  if (state->status == ConnectionStatus::connected) {
    resend_deferred(relay, *state, out);
    recompute(relay, *state, now, out);
  } else if (state->status == ConnectionStatus::disconnected && has_work(relay, *state)) {
    dial(relay, *state, out);
  }
  return out;
}

void SyncPlan::on_negentropy(const RelayUrl& relay, bool supported) {
  if (auto* state = tracked(relay)) state->negentropy = supported;
}

Commands SyncPlan::on_daily_tick(const RelayUrl& relay, std::uint64_t generation,
                                 std::int64_t now) {
  auto* state = tracked(relay);
  if (!state || state->daily_generation != generation) return {};
  Commands out;
  ++totals_.daily_syncs;
  out.push_back(ArmDaily{relay, generation});
  close_all(relay, *state, out);
  state->confirmed = {};
  state->refused = {};
  state->negentropy.reset();
  if (state->status == ConnectionStatus::connected) {
    if (!state->is_peer) subscribe_announcements(relay, *state, std::nullopt, out);
    recompute(relay, *state, now, out);
  }
  return out;
}

Commands SyncPlan::on_disconnect_check(std::int64_t now) {
  Commands out;
  for (auto it = relays_.begin(); it != relays_.end();) {
    auto& [relay, state] = *it;
    const bool idle = !has_work(relay, state) && state.confirmed.empty() && state.pending.empty();
    if (idle) {
      if (state.status != ConnectionStatus::disconnected) out.push_back(HangUp{relay});
      it = relays_.erase(it);
      continue;
    }
    if (state.status == ConnectionStatus::disconnected && !state.retry_armed)
      dial(relay, state, out);
    else if (state.status == ConnectionStatus::connected)
      recompute(relay, state, now, out);
    ++it;
  }
  admit_targets(now, out);
  return out;
}

Health SyncPlan::health_of(const RelayState& state, std::int64_t now) const {
  if (state.health.failures == 0) return Health::healthy;
  if (state.health.failing_since && now - *state.health.failing_since >= config_.dead_after_seconds)
    return Health::dead;
  return Health::degraded;
}

std::int64_t SyncPlan::backoff_seconds(const RelayState& state, std::int64_t now) const {
  // A peer is a node of this cluster that is down or restarting: what it accepted before it
  // went is wanted here as soon as it is back.
  if (state.is_peer) return config_.base_backoff_seconds;
  if (health_of(state, now) == Health::dead) return 86400;  // dead relays: daily retry
  auto failures = std::max<std::uint32_t>(state.health.failures, 1);
  auto exponent = std::min<std::uint32_t>(failures - 1, 30);
  auto delay = config_.base_backoff_seconds << exponent;
  return std::min(delay, config_.max_backoff_seconds);
}

}  // namespace graspd::sync
