#include "actors/sync/engine/fetch_router.hpp"

#include <algorithm>
#include <utility>

namespace graspd::sync {

FetchStart FetchRouter::on_fetch(FetchRequest request, const RelayFacts& relay, std::int64_t now) {
  if (relay.ours || (!relay.connected && relay.tracked))
    return {{}, {AnswerFetch{{}, false, "relay not available"}}};
  FetchStart start{"plus-" + std::to_string(next_fetch_++), {}};
  ++counts_.started;
  auto& fetch = fetches_[start.id];
  fetch = PlusFetch{.relay = request.relay, .filters = std::move(request.filters), .started = now};
  const auto longest = config_.fetch_max_duration_seconds;
  fetch.budget = request.budget_seconds > 0 && request.budget_seconds < longest;
  fetch.deadline = now + (fetch.budget ? request.budget_seconds : longest);
  if (!relay.connected) {
    control_[request.relay] = ControlConnection{request.role, 0};
    ++counts_.control_dials;
    start.commands.push_back(
        ConnectForFetches{request.relay, request.trusted, std::move(request.role)});
  } else if (auto control = control_.find(request.relay); control != control_.end()) {
    ++control->second.generation;  // no longer idle
  }
  send(start.id, fetch, start.commands);
  start.commands.push_back(ArmFetchTimeout{start.id, next_timer(fetch, now)});
  start.commands.push_back(RefreshStatus{});
  return start;
}

FetchCommands FetchRouter::on_relay_up(const RelayUrl& relay, const ConnectionLimits& limits) {
  open_[relay] = limits;
  FetchCommands out;
  for (auto& [id, fetch] : fetches_)
    if (fetch.relay == relay && !fetch.sent) send(id, fetch, out);
  return out;
}

FetchCommands FetchRouter::on_connection_lost(const RelayUrl& relay, const std::string& reason) {
  open_.erase(relay);
  FetchCommands out;
  fail_fetches(relay, reason, out);
  return out;
}

bool FetchRouter::serves_fetches_only(const RelayUrl& relay, bool tracked) const {
  return control_.count(relay) > 0 && !tracked;
}

std::optional<FetchCommands> FetchRouter::on_part_done(const std::string& subscription_id) {
  auto owner = parts_.find(subscription_id);
  if (owner == parts_.end()) return std::nullopt;
  const auto id = owner->second;
  auto& fetch = fetches_.at(id);
  fetch.done_parts.insert(subscription_id);
  FetchCommands out;
  // The part stays open until every part is done, and is closed with the others.
  if (fetch.done_parts.size() == fetch.parts.size()) finish(id, true, {}, out);
  return out;
}

std::optional<FetchCommands> FetchRouter::on_part_closed(const std::string& subscription_id,
                                                         const std::string& message) {
  auto owner = parts_.find(subscription_id);
  if (owner == parts_.end()) return std::nullopt;
  FetchCommands out;
  finish(std::string(owner->second), false, "closed: " + message, out);
  return out;
}

void FetchRouter::on_traffic(const RelayUrl& relay, const RelayProgress& traffic) {
  auto requested = traffic.events_received - traffic.events_unrequested - traffic.events_invalid;
  if (traffic.pages + traffic.negentropy_rounds + requested == 0) return;
  for (auto& [id, fetch] : fetches_)
    if (fetch.relay == relay && fetch.sent) fetch.progressed = true;
}

FetchCommands FetchRouter::on_timeout(const std::string& fetch_id, std::int64_t now) {
  auto it = fetches_.find(fetch_id);
  if (it == fetches_.end()) return {};
  auto& fetch = it->second;
  FetchCommands out;
  if (now >= fetch.deadline && fetch.budget) {
    // A relay trickling just enough progress to outlive every idle timeout: cut at the budget.
    finish(fetch_id, false, "budget spent: the relay's time budget ran out", out);
    return out;
  }
  if (fetch.progressed && now < fetch.deadline) {
    fetch.progressed = false;
    return {ArmFetchTimeout{fetch_id, next_timer(fetch, now)}};
  }
  finish(fetch_id, false, "timed out", out);
  return out;
}

FetchCommands FetchRouter::on_idle(const RelayUrl& relay, std::uint64_t generation, bool tracked) {
  auto control = control_.find(relay);
  if (control == control_.end() || control->second.generation != generation || has_fetches(relay) ||
      tracked)
    return {};
  control_.erase(control);
  open_.erase(relay);
  ++counts_.control_retired;
  return {Retire{relay}, RefreshStatus{}};
}

FetchCommands FetchRouter::on_plan_dial(const RelayUrl& relay, bool connected) {
  if (!connected) return {Connect{relay}};
  // A control-plane connection becomes a repository source: no second connection.
  control_.erase(relay);
  ++counts_.promotions;
  auto up = open_.find(relay);
  return {Promoted{relay, up == open_.end() ? std::nullopt : std::optional(up->second)}};
}

FetchCommands FetchRouter::on_plan_hang_up(const RelayUrl& relay) {
  FetchCommands out;
  if (has_fetches(relay))
    control_.emplace(relay, ControlConnection{});
  else
    out.push_back(Disconnect{relay});
  if (!control_.count(relay)) {
    open_.erase(relay);
    out.push_back(ForgetRelay{relay});
  }
  return out;
}

std::int64_t FetchRouter::next_timer(const PlusFetch& fetch, std::int64_t now) const {
  return std::max<std::int64_t>(1, std::min(config_.fetch_timeout_seconds, fetch.deadline - now));
}

std::size_t FetchRouter::fetches_on(const RelayUrl& relay) const {
  std::size_t n = 0;
  for (const auto& [id, fetch] : fetches_) n += fetch.relay == relay ? 1 : 0;
  return n;
}

void FetchRouter::send(const std::string& id, PlusFetch& fetch, FetchCommands& out) {
  auto up = open_.find(fetch.relay);
  if (up == open_.end()) return;
  fetch.sent = true;
  const auto& peer = up->second;
  const bool negentropy = config_.negentropy && peer.nip77 != false;
  auto groups = pack_filters(
      fetch.filters,
      peer.max_message_bytes ? peer.max_message_bytes : config_.default_max_message_bytes,
      peer.max_filters ? peer.max_filters : config_.default_max_filters);
  for (std::size_t k = 0; k < groups.size(); ++k) {
    auto part = groups.size() == 1 ? id : id + "." + std::to_string(k);
    fetch.parts.insert(part);
    parts_[part] = id;
    out.push_back(OpenSubscription{fetch.relay, part, std::move(groups[k]), negentropy});
  }
}

void FetchRouter::finish(const std::string& id, bool ok, std::string error, FetchCommands& out) {
  auto it = fetches_.find(id);
  if (it == fetches_.end()) return;
  auto fetch = std::move(it->second);
  fetches_.erase(it);
  for (const auto& part : fetch.parts) {
    parts_.erase(part);
    out.push_back(CloseSubscription{fetch.relay, part});
  }
  if (!ok) ++counts_.failed;
  out.push_back(AnswerFetch{id, ok, std::move(error)});
  arm_idle(fetch.relay, out);
  out.push_back(RefreshStatus{});
}

void FetchRouter::fail_fetches(const RelayUrl& relay, const std::string& reason,
                               FetchCommands& out) {
  std::vector<std::string> ids;
  for (const auto& [id, fetch] : fetches_)
    if (fetch.relay == relay) ids.push_back(id);
  for (const auto& id : ids) finish(id, false, reason, out);
  control_.erase(relay);
}

void FetchRouter::arm_idle(const RelayUrl& relay, FetchCommands& out) {
  auto control = control_.find(relay);
  if (control == control_.end() || has_fetches(relay)) return;
  out.push_back(ArmIdle{relay, ++control->second.generation, config_.control_idle_seconds});
}

}  // namespace graspd::sync
