#include "actors/self_subscriber.hpp"

#include <caf/typed_event_based_actor.hpp>

#include "messages/nostr/nip34.hpp"
#include "messages/relay_url.hpp"
#include "store/store_view.hpp"

namespace graspd {

namespace {

using Self = self_subscriber_actor::stateful_pointer<SelfSubscriberState>;

namespace nip34 = nostr::nip34;

std::set<std::string> announced_relays(const nostr::Event& announcement) {
  std::set<std::string> out;
  for (const auto& tag : announcement.tags) {
    if (tag.empty() || tag[0] != "relays") continue;
    for (std::size_t i = 1; i < tag.size(); ++i)
      if (auto key = untrusted_relay_key(tag[i])) out.insert(std::move(*key));
  }
  return out;
}

void send_pending(Self self) {
  auto& st = self->state;
  st.window_open = false;
  if (st.pending.empty()) return;
  RepoDiscovery discovery;
  for (auto& [repo, facts] : st.pending) discovery.repos.push_back(std::move(facts));
  st.pending.clear();
  ++st.batches_sent;
  self->send(st.manager, std::move(discovery));
}

void load_from_store(Self self, const store::EventStore& store) {
  store::EventStoreView view(
      std::shared_ptr<const store::EventStore>(&store, [](const store::EventStore*) {}));
  nostr::Filter announcements;
  announcements.kinds = std::vector<std::uint32_t>{nip34::kind::repo_announcement};
  nostr::Filter roots;
  roots.kinds = std::vector<std::uint32_t>(nip34::root_kinds.begin(), nip34::root_kinds.end());
  view.scan({announcements, roots}, [&](const nostr::Event& ev) {
    collect_repository_facts(ev, self->state.pending);
    return true;
  });
}

/// Collects what a committed event tells about repositories; the first fact opens the batch
/// window, which later ones do not extend.
void on_committed(Self self, const nostr::Event& ev) {
  auto& st = self->state;
  collect_repository_facts(ev, st.pending);
  if (!st.window_open && !st.pending.empty()) {
    st.window_open = true;
    self->delayed_send(self, st.window, atom::tick::value);
  }
}

}  // namespace

void collect_repository_facts(const nostr::Event& ev,
                              std::map<std::string, RepoDiscovery::Repo>& pending) {
  if (ev.kind == nip34::kind::repo_announcement) {
    auto repo = nostr::address_of(ev);
    auto& facts = pending[repo];
    facts.repo = repo;
    facts.relays = announced_relays(ev);  // the latest announcement's list wins
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

self_subscriber_actor::behavior_type self_subscriber(Self self,
                                                     std::shared_ptr<const store::EventStore> store,
                                                     sync_manager_actor manager,
                                                     std::chrono::milliseconds window) {
  auto& st = self->state;
  st.manager = std::move(manager);
  st.window = window;
  if (store) load_from_store(self, *store);
  send_pending(self);
  return {
      [=](StoreCommitted& committed) { on_committed(self, *committed.event); },
      [=](atom::tick) { send_pending(self); },
  };
}

}  // namespace graspd
