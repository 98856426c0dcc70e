// What the acceptance policy learns as its decisions are carried out: events accepted and pending
// in the writer, committed (eligibility, maintainers, the wait keys they satisfy), or not stored;
// and the same state rebuilt from the store at start-up.
#include <set>

#include "messages/nostr/nip62.hpp"
#include "store/policy/acceptance_policy.hpp"
#include "store/policy/event_references.hpp"

namespace graspd::policy {

using nostr::Event;
using nostr::EventId;
using nostr::Filter;
namespace nip34 = nostr::nip34;

void AcceptancePolicy::on_accepted(nostr::EventPtr ev, std::vector<EventId> depends_on) {
  if (!ev || pending_.contains(ev->id)) return;
  if (ev->kind == nostr::nip62::kind_request_to_vanish) vanish_requests_known_ = true;
  if (ev->kind == nip34::kind::repo_announcement)
    for (const auto& member : members_of(*ev)) pending_members_.emplace(member, ev->id);
  pending_.add(std::move(ev), std::move(depends_on));
}

void AcceptancePolicy::on_written(const EventId& id) {
  pending_.mark_committed(id);
}

void AcceptancePolicy::on_not_stored(const EventId& id, bool in_store) {
  if (in_store) return forget_pending(id);
  if (pending_.remove_with_dependants(id).size() > 0) prune_members();
}

std::size_t AcceptancePolicy::sweep_pending() {
  auto dropped = pending_.sweep_committed();
  if (dropped > 0) prune_members();
  return dropped;
}

void AcceptancePolicy::prune_members() {
  for (auto it = pending_members_.begin(); it != pending_members_.end();)
    it = pending_.contains(it->second) ? std::next(it) : pending_members_.erase(it);
}

void AcceptancePolicy::forget_pending(const EventId& id) {
  const Event* ev = pending_.find(id);
  if (!ev) return;
  if (ev->kind == nip34::kind::repo_announcement)
    for (const auto& member : members_of(*ev)) {
      auto [first, last] = pending_members_.equal_range(member);
      for (auto it = first; it != last;)
        it = it->second == id ? pending_members_.erase(it) : std::next(it);
    }
  pending_.remove(id);
}

void AcceptancePolicy::make_eligible(const nostr::Pubkey& author,
                                     std::vector<std::string>& released) {
  if (eligible_authors_.insert(author).second) released.push_back(wait_key::author(author));
}

namespace {

/// The wait keys a committed event satisfies whatever its kind.
std::vector<std::string> keys_released_by(const Event& ev) {
  std::vector<std::string> released{wait_key::event(ev.id),
                                    wait_key::referenced(nostr::to_hex(ev.id))};
  if (nostr::is_replaceable(ev.kind) || nostr::is_addressable(ev.kind))
    released.push_back(wait_key::address(nostr::address_of(ev)));
  auto refs = references_of(ev);
  for (const auto& id : refs.ids) released.push_back(wait_key::referenced(nostr::to_hex(id)));
  for (const auto& address : refs.addresses) released.push_back(wait_key::referenced(address.text));
  return released;
}

}  // namespace

std::vector<std::string> AcceptancePolicy::on_committed(const Event& ev, bool keys_wanted) {
  if (pending_.contains(ev.id)) forget_pending(ev.id);
  if (ev.kind == nostr::nip62::kind_request_to_vanish) vanish_requests_known_ = true;
  forget_maintainers(ev);
  std::vector<std::string> released;
  if (keys_wanted) released = keys_released_by(ev);
  if (ev.kind == nip34::kind::repo_announcement) {
    if (keys_wanted) released.push_back(wait_key::identifier(ev.d_tag()));
    for (const auto& member : members_of(ev)) make_eligible(member, released);
  } else if (!nip34::is_identity_kind(ev.kind) && ev.kind != nip34::kind::deletion &&
             !eligible_authors_.count(ev.pubkey) && thread_path(ev, store_)) {
    make_eligible(ev.pubkey, released);
  }
  if (!keys_wanted) released.clear();
  return released;
}

void AcceptancePolicy::load_from_store(const std::function<void(std::uint64_t)>& on_progress) {
  std::uint64_t read = 0;
  auto count_one = [&] {
    ++read;
    if (on_progress && read % progress_every == 0) on_progress(read);
  };
  std::vector<std::string> ignored;
  Filter vanish_requests;
  vanish_requests.kinds = std::vector<std::uint32_t>{nostr::nip62::kind_request_to_vanish};
  vanish_requests.limit = 1;
  vanish_requests_known_ = store_.exists({vanish_requests});
  Filter announcements;
  announcements.kinds = std::vector<std::uint32_t>{nip34::kind::repo_announcement};
  store_.scan({announcements}, [&](const Event& ev) {
    count_one();
    on_committed(ev, false);  // nothing is parked at start-up
    return true;
  });
  // Roots, then their descendants breadth-first, up to the thread depth.
  Filter roots;
  roots.kinds = std::vector<std::uint32_t>(nip34::root_kinds.begin(), nip34::root_kinds.end());
  std::vector<EventId> frontier;
  std::set<EventId> visited;
  store_.scan({roots}, [&](const Event& ev) {
    count_one();
    if (!nip34::is_root(ev)) return true;
    make_eligible(ev.pubkey, ignored);
    if (visited.insert(ev.id).second) frontier.push_back(ev.id);
    return true;
  });
  for (int depth = 0; depth < max_thread_depth && !frontier.empty(); ++depth) {
    std::vector<EventId> next;
    for (std::size_t i = 0; i < frontier.size(); i += max_ids_per_filter) {
      std::vector<std::string> hex;
      for (std::size_t j = i; j < std::min(frontier.size(), i + max_ids_per_filter); ++j)
        hex.push_back(nostr::to_hex(frontier[j]));
      nostr::Filters children;
      for (char letter : {'e', 'E', 'q'}) {
        Filter f;
        f.tags[letter] = hex;
        f.normalize();
        children.push_back(std::move(f));
      }
      store_.scan(children, [&](const Event& child) {
        count_one();
        if (nip34::is_identity_kind(child.kind) || child.kind == nip34::kind::deletion) return true;
        make_eligible(child.pubkey, ignored);
        if (visited.insert(child.id).second) next.push_back(child.id);
        return true;
      });
    }
    frontier = std::move(next);
  }
  if (on_progress) on_progress(read);
}

}  // namespace graspd::policy
