#include "store/git/purgatory.hpp"

#include <algorithm>

#include "messages/nostr/nip34.hpp"

namespace graspd::policy {

namespace nip34 = nostr::nip34;

const char* to_string(HeldKind kind) {
  switch (kind) {
    case HeldKind::announcement:
      return "announcement";
    case HeldKind::state:
      return "state";
    case HeldKind::pull_request:
      return "pull_request";
  }
  return "unknown";
}

std::string Purgatory::address_of(const nostr::Event& ev) {
  if (!nostr::is_addressable(ev.kind)) return {};
  return nip34::format_address({ev.kind, ev.pubkey, std::string(ev.d_tag())});
}

/// Newer by created_at, ties to the lower id (NIP-01 replaceable order).
static bool newer(const nostr::Event& a, const nostr::Event& b) {
  if (a.created_at != b.created_at) return a.created_at > b.created_at;
  return a.id < b.id;
}

Purgatory::HoldResult Purgatory::hold(nostr::EventPtr event, HeldKind kind, std::int64_t now) {
  HoldResult result;
  if (held_.count(event->id)) return {Hold::duplicate, std::nullopt};
  auto address = address_of(*event);
  if (auto it = address.empty() ? by_address_.end() : by_address_.find(address);
      it != by_address_.end()) {
    if (!newer(*event, *held_.at(it->second).event)) return {Hold::duplicate, std::nullopt};
    result.replaced = held_.at(it->second);
    remove(it->second);
  } else if (held_.size() >= limits_.max_held) {
    return {Hold::full, std::nullopt};
  }
  expired_.erase(event->id);
  auto id = event->id;
  if (!address.empty()) by_address_[address] = id;
  held_[id] = HeldEvent{std::move(event), kind, now + limits_.hold_seconds};
  return result;
}

void Purgatory::undo_hold(const nostr::EventId& id, std::optional<HeldEvent> replaced) {
  remove(id);
  if (replaced) restore(std::move(*replaced));
}

void Purgatory::restore(HeldEvent entry) {
  auto address = address_of(*entry.event);
  if (auto it = address.empty() ? by_address_.end() : by_address_.find(address);
      it != by_address_.end()) {
    if (!newer(*entry.event, *held_.at(it->second).event)) return;
    remove(it->second);
  }
  if (!address.empty()) by_address_[address] = entry.event->id;
  auto id = entry.event->id;
  held_[id] = std::move(entry);
}

void Purgatory::restore_expired(const nostr::EventId& id, std::int64_t forget_at) {
  remember(id, forget_at);
}

const HeldEvent* Purgatory::find(const nostr::EventId& id) const {
  auto it = held_.find(id);
  return it == held_.end() ? nullptr : &it->second;
}

std::vector<HeldEvent> Purgatory::refresh(std::string_view identifier, std::int64_t now) {
  std::vector<HeldEvent> out;
  auto names_identifier = [&](const HeldEvent& entry) {
    if (entry.kind != HeldKind::pull_request) return entry.event->d_tag() == identifier;
    auto repositories = pr_repositories(*entry.event);
    return std::any_of(repositories.begin(), repositories.end(),
                       [&](const RepositoryRef& r) { return r.identifier == identifier; });
  };
  for (auto& [id, entry] : held_) {
    if (!names_identifier(entry)) continue;
    entry.expires_at = now + limits_.hold_seconds;
    out.push_back(entry);
  }
  return out;
}

std::vector<nostr::EventPtr> Purgatory::release(const nostr::Pubkey& owner,
                                                std::string_view identifier,
                                                const nostr::EventId& state_id) {
  std::vector<nostr::EventPtr> out;
  auto announcement = by_address_.find(
      nip34::format_address({nip34::kind::repo_announcement, owner, std::string(identifier)}));
  if (announcement != by_address_.end()) {
    out.push_back(held_.at(announcement->second).event);
    remove(announcement->second);
  }
  if (auto state = held_.find(state_id);
      state != held_.end() && state->second.event->d_tag() == identifier) {
    out.push_back(state->second.event);
    remove(state_id);
  }
  stats_.released += out.size();
  return out;
}

nostr::EventPtr Purgatory::release_pull_request(const nostr::EventId& id) {
  auto it = held_.find(id);
  if (it == held_.end() || it->second.kind != HeldKind::pull_request) return nullptr;
  auto ev = it->second.event;
  remove(id);
  ++stats_.released;
  return ev;
}

std::vector<nostr::EventPtr> Purgatory::pull_requests_of(const RepositoryRef& repository) const {
  std::vector<nostr::EventPtr> out;
  for (const auto& [id, entry] : held_) {
    if (entry.kind != HeldKind::pull_request) continue;
    auto repositories = pr_repositories(*entry.event);
    if (std::find(repositories.begin(), repositories.end(), repository) != repositories.end())
      out.push_back(entry.event);
  }
  return out;
}

Purgatory::Expired Purgatory::expire(std::int64_t now) {
  Expired out;
  for (auto it = expired_.begin(); it != expired_.end();) {
    if (it->second > now) {
      ++it;
      continue;
    }
    out.forgotten.push_back(it->first);
    it = expired_.erase(it);
  }
  for (const auto& [id, entry] : held_)
    if (entry.expires_at <= now) out.events.push_back(entry);
  for (const auto& entry : out.events) {
    remove(entry.event->id);
    remember(entry.event->id, now + limits_.remember_seconds);
  }
  stats_.expired += out.events.size();
  return out;
}

void Purgatory::scan(const nostr::Filters& filters,
                     const std::function<bool(const nostr::Event&)>& visit) const {
  for (const auto& [id, entry] : held_)
    if (nostr::matches_any(filters, *entry.event) && !visit(*entry.event)) return;
}

void Purgatory::AnnouncementView::scan(
    const nostr::Filters& filters, const std::function<bool(const nostr::Event&)>& visit) const {
  owner_.scan(filters, [&](const nostr::Event& ev) {
    return ev.kind != nip34::kind::repo_announcement || visit(ev);
  });
}

std::array<std::size_t, held_kind_count> Purgatory::counts() const {
  std::array<std::size_t, held_kind_count> out{};
  for (const auto& [id, entry] : held_) ++out[static_cast<std::size_t>(entry.kind)];
  return out;
}

std::vector<HeldEvent> Purgatory::withdraw(const nostr::Event& deletion) {
  std::vector<HeldEvent> out;
  // Only the author's own events; an address deletion spares versions newer than the request.
  auto take_if = [&](nostr::EventId id, bool by_address) {
    auto it = held_.find(id);
    if (it == held_.end() || it->second.event->pubkey != deletion.pubkey) return;
    if (by_address && it->second.event->created_at > deletion.created_at) return;
    out.push_back(it->second);
    remove(id);
  };
  for (const auto& tag : deletion.tags) {
    if (tag.size() < 2) continue;
    nostr::EventId id;
    if (tag[0] == "e" && nostr::from_hex(tag[1], id)) take_if(id, false);
    if (tag[0] == "a")
      if (auto held = by_address_.find(tag[1]); held != by_address_.end())
        take_if(held->second, true);
  }
  return out;
}

void Purgatory::remove(const nostr::EventId& id) {
  auto it = held_.find(id);
  if (it == held_.end()) return;
  if (auto address = address_of(*it->second.event); !address.empty()) by_address_.erase(address);
  held_.erase(it);
}

void Purgatory::remember(const nostr::EventId& id, std::int64_t forget_at) {
  if (expired_.size() >= limits_.max_remembered && !expired_.count(id)) {
    // Forget the one forgotten soonest: the bound holds without a second index.
    auto soonest = expired_.begin();
    for (auto it = expired_.begin(); it != expired_.end(); ++it)
      if (it->second < soonest->second) soonest = it;
    expired_.erase(soonest);
  }
  expired_[id] = forget_at;
}

}  // namespace graspd::policy
