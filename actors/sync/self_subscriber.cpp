#include "actors/sync/self_subscriber.hpp"

#include <caf/typed_event_based_actor.hpp>

#include <algorithm>

#include "actors/sync/engine/replication_view.hpp"
#include "messages/nostr/nip34.hpp"
#include "messages/relay_url.hpp"
#include "store/lmdb/store_view.hpp"

namespace graspd {

namespace {

using SelfSubscriberSelf = self_subscriber_actor::stateful_pointer<SelfSubscriberState>;

namespace nip34 = nostr::nip34;

std::set<std::string> announced_relay_set(const nostr::Event& announcement) {
  auto relays = sync::announced_relays(announcement);
  return {std::make_move_iterator(relays.begin()), std::make_move_iterator(relays.end())};
}

void send_inventory(SelfSubscriberSelf self) {
  auto& st = self->state;
  if (!st.inventory || !st.inventory_changed) return;
  st.inventory_changed = false;
  st.inventory->take_frontier();  // only the startup scan follows it
  self->send(st.plus, PlusInventoryUpdate{
                          std::make_shared<const sync::PlusSnapshot>(st.inventory->snapshot())});
}

void send_pending(SelfSubscriberSelf self) {
  auto& st = self->state;
  st.window_open = false;
  send_inventory(self);
  if (st.pending.empty()) return;
  RepoDiscovery discovery;
  for (auto& [repo, facts] : st.pending) discovery.repos.push_back(std::move(facts));
  st.pending.clear();
  ++st.batches_sent;
  self->send(st.manager, std::move(discovery));
}

/// Filters for events referencing `values` by the tag letters `letters`, a bounded number of
/// values per filter.
void add_reference_filters(nostr::Filters& out, const std::vector<std::string>& values,
                           std::initializer_list<char> letters) {
  constexpr std::size_t per_filter = 256;
  for (std::size_t i = 0; i < values.size(); i += per_filter) {
    std::vector<std::string> chunk(
        values.begin() + static_cast<std::ptrdiff_t>(i),
        values.begin() + static_cast<std::ptrdiff_t>(std::min(values.size(), i + per_filter)));
    for (char letter : letters) {
      nostr::Filter filter;
      filter.tags[letter] = chunk;
      filter.normalize();
      out.push_back(std::move(filter));
    }
  }
}

/// The bounded recursive scan: events referencing the thread nodes found so far, level by level.
void load_descendants(const store::EventStoreView& view, sync::PlusInventory& inventory) {
  for (int depth = 0; depth < max_descendant_depth; ++depth) {
    auto frontier = inventory.take_frontier();
    if (frontier.empty()) return;
    std::vector<std::string> ids;
    ids.reserve(frontier.ids.size());
    for (const auto& id : frontier.ids) ids.push_back(nostr::to_hex(id));
    nostr::Filters filters;
    add_reference_filters(filters, ids, {'e', 'E', 'q'});
    add_reference_filters(filters, frontier.addresses, {'a', 'A', 'q'});
    view.scan(filters, [&](const nostr::Event& ev) {
      inventory.add(ev);
      return true;
    });
  }
  inventory.take_frontier();
}

void load_from_store(SelfSubscriberSelf self, const store::EventStore& store) {
  store::EventStoreView view(
      std::shared_ptr<const store::EventStore>(&store, [](const store::EventStore*) {}));
  nostr::Filter announcements;
  announcements.kinds = std::vector<std::uint32_t>{nip34::kind::repo_announcement};
  nostr::Filter roots;
  roots.kinds = std::vector<std::uint32_t>(nip34::root_kinds.begin(), nip34::root_kinds.end());
  auto& st = self->state;
  view.scan({announcements, roots}, [&](const nostr::Event& ev) {
    collect_repository_facts(ev, st.pending);
    if (st.inventory) st.inventory_changed |= st.inventory->add(ev);
    return true;
  });
  if (!st.inventory) return;
  load_descendants(view, *st.inventory);
  nostr::Filter identities;
  identities.kinds = std::vector<std::uint32_t>{nip34::kind::metadata, nip34::kind::relay_list};
  view.scan({identities}, [&](const nostr::Event& ev) {
    st.inventory_changed |= st.inventory->add(ev);
    return true;
  });
  st.inventory_changed = true;  // the controller gets the startup inventory even when empty
}

/// The first fact after a send opens the batch window; later ones do not extend it.
void open_window(SelfSubscriberSelf self) {
  auto& st = self->state;
  if (!st.window_open && (!st.pending.empty() || st.inventory_changed)) {
    st.window_open = true;
    self->delayed_send(self, st.window, atom::tick::value);
  }
}

/// Collects what a committed event tells about repositories.
void on_committed(SelfSubscriberSelf self, const nostr::Event& ev) {
  auto& st = self->state;
  collect_repository_facts(ev, st.pending);
  if (st.inventory) st.inventory_changed |= st.inventory->add(ev);
  open_window(self);
}

/// What purgatory says about a held announcement's repository: StateOnly while held (the Sync+
/// inventory knows it, inert), Full once released (before its commit arrives), gone when dropped.
void on_held(SelfSubscriberSelf self, const HeldRepositories& held) {
  auto& st = self->state;
  using Change = HeldRepositories::Change;
  for (const auto& entry : held.entries) {
    const auto& ev = *entry.announcement;
    auto repo = nostr::address_of(ev);
    auto& facts = st.pending[repo];
    facts.repo = repo;
    facts.removed = entry.change == Change::dropped;
    if (facts.removed) {
      facts.relays.reset();
      facts.roots.clear();
      facts.level.reset();
    } else {
      facts.relays = announced_relay_set(ev);
      facts.level = entry.change == Change::held ? SyncLevel::state_only : SyncLevel::full;
    }
    if (!st.inventory) continue;
    if (entry.change == Change::dropped) {
      st.inventory_changed |= st.inventory->remove_repository(repo);
      continue;
    }
    // The level first: added while marked, a held repository is never Full for a moment.
    st.inventory_changed |= st.inventory->set_full(repo, entry.change == Change::released);
    st.inventory_changed |= st.inventory->add(ev);
  }
  open_window(self);
}

}  // namespace

void collect_repository_facts(const nostr::Event& ev,
                              std::map<std::string, RepoDiscovery::Repo>& pending) {
  if (ev.kind == nip34::kind::repo_announcement) {
    auto repo = nostr::address_of(ev);
    auto& facts = pending[repo];
    facts.repo = repo;
    facts.relays = announced_relay_set(ev);  // the latest announcement's list wins
    facts.level = SyncLevel::full;           // stored: served, so synced in full
    facts.removed = false;
    return;
  }
  if (!nip34::is_root(ev)) return;
  for (const auto& tag : ev.tags) {
    if (tag.size() < 2 || tag[0] != "a") continue;
    // Only a well-formed repository address can be asked for on other relays.
    auto address = nip34::parse_address(tag[1]);
    if (!address || address->kind != nip34::kind::repo_announcement) continue;
    auto& facts = pending[tag[1]];
    facts.repo = tag[1];
    facts.roots.insert(ev.id);
  }
}

self_subscriber_actor::behavior_type self_subscriber(SelfSubscriberSelf self,
                                                     std::shared_ptr<const store::EventStore> store,
                                                     sync_manager_actor manager,
                                                     std::chrono::milliseconds window) {
  return self_subscriber_plus(self, std::move(store), std::move(manager), window, {});
}

self_subscriber_actor::behavior_type self_subscriber_plus(
    SelfSubscriberSelf self, std::shared_ptr<const store::EventStore> store,
    sync_manager_actor manager, std::chrono::milliseconds window, sync_plus_actor plus) {
  auto& st = self->state;
  st.manager = std::move(manager);
  st.window = window;
  if (plus) {
    st.plus = std::move(plus);
    st.inventory = std::make_unique<sync::PlusInventory>();
  }
  if (store) load_from_store(self, *store);
  send_pending(self);
  return {
      [=](const StoreCommits& batch) {
        for (const auto& committed : *batch.commits) on_committed(self, *committed.event);
      },
      [=](HeldRepositories& held) { on_held(self, held); },
      [=](atom::tick) { send_pending(self); },
  };
}

}  // namespace graspd
