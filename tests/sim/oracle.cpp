#include "tests/sim/oracle.hpp"

#include <algorithm>

#include "messages/nostr/nip34.hpp"
#include "messages/relay_url.hpp"

namespace graspd::sim {

namespace {

/// The committed events, in memory (the sim publishes one version of each announcement, so no
/// replacement is needed), with the store's NIP-09 rules (store/lmdb/write_rules.cpp): a committed
/// deletion removes each event its `e` tags name when it has the deletion's author and is no
/// deletion itself, and refuses that (id, author) forever after, even when the event never came.
/// The schedule draws no `a` deletions, so addresses are not modelled.
class VectorView final : public policy::StoreView {
 public:
  void scan(const nostr::Filters& filters,
            const std::function<bool(const nostr::Event&)>& visit) const override {
    for (const auto& ev : events_)
      if (nostr::matches_any(filters, ev) && !visit(ev)) return;
  }
  /// Commits `ev` (never one `refused`), applying it when it is a deletion.
  void add(const nostr::Event& ev) {
    events_.push_back(ev);
    ids_.insert(ev.id);
    if (ev.kind == nostr::nip34::kind::deletion) apply_deletion(ev);
  }
  bool contains(const nostr::EventId& id) const { return ids_.count(id) > 0; }
  bool refused(const nostr::Event& ev) const { return deleted_.count({ev.id, ev.pubkey}) > 0; }
  const std::set<nostr::EventId>& ids() const { return ids_; }

 private:
  void apply_deletion(const nostr::Event& request) {
    for (const auto& tag : request.tags) {
      nostr::EventId id;
      if (tag.size() < 2 || tag[0] != "e" || !nostr::from_hex(tag[1], id)) continue;
      deleted_.insert({id, request.pubkey});
      auto target = std::find_if(events_.begin(), events_.end(), [&](const nostr::Event& ev) {
        return ev.id == id && ev.pubkey == request.pubkey &&
               ev.kind != nostr::nip34::kind::deletion;
      });
      if (target == events_.end()) continue;
      ids_.erase(id);
      events_.erase(target);
    }
  }

  std::vector<nostr::Event> events_;
  std::set<nostr::EventId> ids_;
  std::set<std::pair<nostr::EventId, nostr::Pubkey>> deleted_;
};

/// The relays (by index) an accepted announcement makes the node dial.
void add_named_relays(const nostr::Event& announcement, const std::vector<const SimRelay*>& relays,
                      std::set<std::size_t>& reachable) {
  for (const auto& tag : announcement.tags) {
    if (tag.empty() || tag[0] != "relays") continue;
    for (std::size_t v = 1; v < tag.size(); ++v) {
      auto url = canonical_relay_url(tag[v]);
      if (!url) continue;
      for (std::size_t i = 0; i < relays.size(); ++i)
        if (relays[i]->url == *url && !relays[i]->private_address) reachable.insert(i);
    }
  }
}

RepositoryRef repository_of(const nostr::Event& ev) {
  return {ev.pubkey, std::string(ev.d_tag())};
}

/// Whether purgatory keeps `ev` out of the store for good (its git data never arrives).
bool held_for_good(const nostr::Event& ev, const Released* released) {
  if (!released) return false;
  if (ev.kind == nostr::nip34::kind::repo_announcement)
    return !released->commits.count(repository_of(ev));
  if (ev.kind != nostr::nip34::kind::repo_state) return false;
  auto it = released->commits.find(repository_of(ev));
  if (it == released->commits.end()) return true;
  for (const auto& tag : ev.tags)
    if (tag.size() >= 2 && tag[0].rfind("refs/", 0) == 0 && tag[1] != it->second) return true;
  return false;
}

}  // namespace

std::set<RepositoryRef> accepted_repositories(const policy::PolicyConfig& config,
                                              const std::vector<const SimRelay*>& relays,
                                              std::size_t bootstrap) {
  // Without purgatory every accepted announcement is stored: the same fixed point, read back.
  std::set<RepositoryRef> out;
  auto ids = expected_events(config, relays, bootstrap);
  for (const auto* relay : relays)
    for (const auto& [id, entry] : relay->events)
      if (entry.first.kind == nostr::nip34::kind::repo_announcement && ids.count(id))
        out.insert(repository_of(entry.first));
  return out;
}

std::set<nostr::EventId> expected_events(const policy::PolicyConfig& config,
                                         const std::vector<const SimRelay*>& relays,
                                         std::size_t bootstrap, const Released* released) {
  VectorView view;
  policy::AcceptancePolicy policy(config, view);
  std::set<std::size_t> reachable{bootstrap};
  std::set<nostr::EventId> held;  // accepted, never stored: judged once
  for (bool changed = true; changed;) {
    changed = false;
    // Oldest first: the same order every time, whatever the relays' map order.
    std::vector<const nostr::Event*> candidates;
    for (auto i : reachable)
      for (const auto& [id, entry] : relays[i]->events)
        if (!view.contains(id) && !held.count(id)) candidates.push_back(&entry.first);
    std::stable_sort(candidates.begin(), candidates.end(),
                     [](auto* a, auto* b) { return a->created_at < b->created_at; });
    for (const auto* ev : candidates) {
      if (view.contains(ev->id) || held.count(ev->id) || view.refused(*ev) ||
          !policy.evaluate(*ev).accepted())
        continue;
      changed = true;
      if (ev->kind == nostr::nip34::kind::repo_announcement)
        add_named_relays(*ev, relays, reachable);
      if (held_for_good(*ev, released)) {
        held.insert(ev->id);
        continue;
      }
      view.add(*ev);
      policy.on_committed(*ev);
    }
  }
  return view.ids();
}

}  // namespace graspd::sim
