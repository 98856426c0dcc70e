#include "store/git/purgatory.hpp"

#include <algorithm>
#include <cctype>

#include "messages/client_address.hpp"
#include "messages/nostr/nip34.hpp"
#include "messages/nostr/nip62.hpp"

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

bool superseded_in(const StoreView& store, const nostr::Event& ev) {
  if (!nostr::is_addressable(ev.kind)) return false;
  nostr::Filter f;
  f.kinds = std::vector<std::uint32_t>{ev.kind};
  f.authors = std::vector<nostr::Pubkey>{ev.pubkey};
  f.tags['d'] = {std::string(ev.d_tag())};
  f.normalize();
  bool found = false;
  store.scan({f}, [&](const nostr::Event& stored) {
    found = stored.d_tag() == ev.d_tag() && (stored.id == ev.id || !newer(ev, stored));
    return !found;
  });
  return found;
}

Purgatory::HoldResult Purgatory::hold(nostr::EventPtr event, HeldKind kind, std::int64_t now,
                                      std::string source) {
  HoldResult result;
  if (held_.count(event->id)) return {Hold::duplicate, std::nullopt};
  HeldEvent entry{std::move(event), kind, now + limits_.hold_seconds, std::move(source)};
  auto address = address_of(*entry.event);
  const HeldEvent* replaced = nullptr;
  if (auto it = address.empty() ? by_address_.end() : by_address_.find(address);
      it != by_address_.end()) {
    replaced = &held_.at(it->second);
    if (!newer(*entry.event, *replaced->event)) return {Hold::duplicate, std::nullopt};
  }
  if (auto refused = over_limit(entry, replaced)) return {*refused, std::nullopt};
  if (replaced) {
    result.replaced = *replaced;
    remove(replaced->event->id);
  }
  forget(entry.event->id);
  insert(std::move(entry));
  return result;
}

std::size_t Purgatory::held_bytes(const nostr::Event& ev) {
  std::size_t bytes = 256 + ev.content.size();
  for (const auto& tag : ev.tags)
    for (const auto& value : tag) bytes += value.size() + 4;
  return bytes;
}

PurgatoryUsage Purgatory::cost(const HeldEvent& entry) {
  return {1, held_bytes(*entry.event), entry.kind == HeldKind::announcement ? 1u : 0u};
}

namespace {

constexpr std::string_view client_prefix = "ip:";
constexpr std::string_view peer_prefix = "relay:";
/// The share key of the sync peers together.
const std::string sync_key = "sync";

bool starts_with(std::string_view text, std::string_view prefix) {
  return text.substr(0, prefix.size()) == prefix;
}

/// The first 64 bits of an IPv6 address in text, or nullopt when it is none ("::" expanded).
/// True when `used` plus `added` passes `share` of `limit` in any bound.
bool passes(const PurgatoryUsage& used, const PurgatoryUsage& added, const PurgatoryUsage& limit,
            double share) {
  auto part = [share](std::size_t bound) {
    if (share >= 1.0) return bound;
    return std::max<std::size_t>(1, static_cast<std::size_t>(static_cast<double>(bound) * share));
  };
  return (added.events && used.events + added.events > part(limit.events)) ||
         (added.bytes && used.bytes + added.bytes > part(limit.bytes)) ||
         (added.repositories && used.repositories + added.repositories > part(limit.repositories));
}

/// `used` minus what `entry` costs when it counts there (a replaced version leaves).
PurgatoryUsage without(PurgatoryUsage used, const PurgatoryUsage* freed) {
  if (!freed) return used;
  used.events -= std::min(used.events, freed->events);
  used.bytes -= std::min(used.bytes, freed->bytes);
  used.repositories -= std::min(used.repositories, freed->repositories);
  return used;
}

}  // namespace

std::string Purgatory::share_key(const std::string& source) {
  if (starts_with(source, peer_prefix)) return source;
  if (!starts_with(source, client_prefix)) return {};
  auto address = std::string_view(source).substr(client_prefix.size());
  if (auto prefix = ipv6_prefix64(address)) return std::string(client_prefix) + *prefix;
  return source;
}

std::optional<Purgatory::Hold> Purgatory::over_limit(const HeldEvent& entry,
                                                     const HeldEvent* replaced) const {
  const PurgatoryUsage limit{limits_.max_held, limits_.max_bytes, limits_.max_repositories};
  const auto added = cost(entry);
  std::optional<PurgatoryUsage> freed;
  if (replaced) freed = cost(*replaced);
  // What a group holds, less the replaced version when it counted there.
  auto used = [&](const std::map<std::string, PurgatoryUsage>& groups, const std::string& key,
                  bool replaced_counts) {
    auto it = groups.find(key);
    auto in_group = it == groups.end() ? PurgatoryUsage{} : it->second;
    return without(in_group, replaced_counts && freed ? &*freed : nullptr);
  };
  auto author = by_author_.find(entry.event->pubkey);
  auto author_used = without(author == by_author_.end() ? PurgatoryUsage{} : author->second,
                             freed ? &*freed : nullptr);  // a replaced version is the author's own
  if (passes(author_used, added, limit, limits_.author_share)) return Hold::author_share;
  auto key = share_key(entry.source);
  auto replaced_key = replaced ? share_key(replaced->source) : std::string{};
  if (!key.empty() &&
      passes(used(by_source_, key, replaced_key == key), added, limit, limits_.address_share))
    return Hold::address_share;
  if (starts_with(key, peer_prefix) &&
      passes(used(by_source_, sync_key, starts_with(replaced_key, peer_prefix)), added, limit,
             limits_.sync_share))
    return Hold::sync_share;
  if (passes(without(total_, freed ? &*freed : nullptr), added, limit, 1.0)) return Hold::full;
  return std::nullopt;
}

PurgatoryUsage Purgatory::usage_of(const nostr::Pubkey& author) const {
  auto it = by_author_.find(author);
  return it == by_author_.end() ? PurgatoryUsage{} : it->second;
}

PurgatoryUsage Purgatory::usage_of_source(const std::string& source) const {
  auto it = by_source_.find(source);
  return it == by_source_.end() ? PurgatoryUsage{} : it->second;
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
  insert(std::move(entry));
}

/// Adds a held event and counts it (what was held before a restart counts even past a bound).
void Purgatory::insert(HeldEvent entry) {
  auto address = address_of(*entry.event);
  if (!address.empty()) by_address_[address] = entry.event->id;
  auto add = [c = cost(entry)](PurgatoryUsage& usage) {
    usage.events += c.events;
    usage.bytes += c.bytes;
    usage.repositories += c.repositories;
  };
  add(total_);
  add(by_author_[entry.event->pubkey]);
  auto key = share_key(entry.source);
  if (!key.empty()) add(by_source_[key]);
  if (starts_with(key, peer_prefix)) add(by_source_[sync_key]);
  auto id = entry.event->id;
  if (entry.kind == HeldKind::pull_request) index_pull_request(entry);
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
    const auto& repositories = pr_repositories_.at(entry.event->id);  // parsed once, when held
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
  auto it = pull_requests_by_repository_.find(repository);
  if (it == pull_requests_by_repository_.end()) return out;
  for (const auto& id : it->second) out.push_back(held_.at(id).event);
  return out;
}

Purgatory::Expired Purgatory::expire(
    std::int64_t now, const std::function<bool(const HeldEvent&)>& remember_expired) {
  Expired out;
  while (!expired_by_time_.empty() && expired_by_time_.begin()->first <= now) {
    auto id = expired_by_time_.begin()->second;
    out.forgotten.push_back(id);
    forget(id);
  }
  for (const auto& [id, entry] : held_)
    if (entry.expires_at <= now) out.events.push_back(entry);
  for (const auto& entry : out.events) {
    remove(entry.event->id);
    if (!remember_expired || remember_expired(entry))
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
  if (deletion.kind == nostr::nip62::kind_request_to_vanish) return withdraw_vanished(deletion);
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

std::vector<HeldEvent> Purgatory::withdraw_vanished(const nostr::Event& request) {
  std::vector<nostr::EventId> ids;
  for (const auto& [id, entry] : held_)
    if (entry.event->pubkey == request.pubkey && entry.event->created_at <= request.created_at)
      ids.push_back(id);
  std::vector<HeldEvent> out;
  for (const auto& id : ids) {
    out.push_back(held_.at(id));
    remove(id);
  }
  return out;
}

std::optional<HeldEvent> Purgatory::drop(const nostr::EventId& id) {
  auto it = held_.find(id);
  if (it == held_.end()) return std::nullopt;
  auto entry = it->second;
  remove(id);
  return entry;
}

void Purgatory::remove(const nostr::EventId& id) {
  auto it = held_.find(id);
  if (it == held_.end()) return;
  const auto& entry = it->second;
  if (auto address = address_of(*entry.event); !address.empty()) by_address_.erase(address);
  const auto c = cost(entry);
  auto take = [&c](auto& groups, const auto& key) {
    auto group = groups.find(key);
    if (group == groups.end()) return;
    group->second = without(group->second, &c);
    if (group->second.events == 0) groups.erase(group);
  };
  total_ = without(total_, &c);
  take(by_author_, entry.event->pubkey);
  auto key = share_key(entry.source);
  if (!key.empty()) take(by_source_, key);
  if (starts_with(key, peer_prefix)) take(by_source_, sync_key);
  if (entry.kind == HeldKind::pull_request) unindex_pull_request(id);
  held_.erase(it);
}

void Purgatory::index_pull_request(const HeldEvent& entry) {
  const auto& id = entry.event->id;
  auto repositories = pr_repositories(*entry.event, limits_.max_pr_repositories);
  for (const auto& repository : repositories) pull_requests_by_repository_[repository].insert(id);
  pr_repositories_[id] = std::move(repositories);
}

void Purgatory::unindex_pull_request(const nostr::EventId& id) {
  auto it = pr_repositories_.find(id);
  if (it == pr_repositories_.end()) return;
  for (const auto& repository : it->second) {
    auto held = pull_requests_by_repository_.find(repository);
    if (held == pull_requests_by_repository_.end()) continue;
    held->second.erase(id);
    if (held->second.empty()) pull_requests_by_repository_.erase(held);
  }
  pr_repositories_.erase(it);
}

void Purgatory::remember(const nostr::EventId& id, std::int64_t forget_at) {
  forget(id);
  // At the bound the id forgotten soonest goes: the time index finds it in O(log n).
  while (!expired_by_time_.empty() && expired_.size() >= limits_.max_remembered) {
    expired_.erase(expired_by_time_.begin()->second);
    expired_by_time_.erase(expired_by_time_.begin());
  }
  if (limits_.max_remembered == 0) return;
  expired_[id] = forget_at;
  expired_by_time_.emplace(forget_at, id);
}

void Purgatory::forget(const nostr::EventId& id) {
  auto it = expired_.find(id);
  if (it == expired_.end()) return;
  expired_by_time_.erase({it->second, id});
  expired_.erase(it);
}

}  // namespace graspd::policy
