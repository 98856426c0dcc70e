#include "store/policy/acceptance_policy.hpp"
#include "store/policy/event_references.hpp"

#include <algorithm>
#include <array>
#include <charconv>

#include "messages/nostr/nip19.hpp"
#include "messages/nostr/nip34.hpp"
#include "messages/nostr/nip42.hpp"
#include "messages/nostr/nip62.hpp"

namespace graspd::policy {

using nostr::Event;
using nostr::EventId;
using nostr::Filter;
using nostr::Filters;
using nostr::Pubkey;
namespace nip34 = nostr::nip34;

namespace {

using nip34::is_identity_kind;
using nip34::is_root;
using nip34::is_root_kind;
constexpr std::uint32_t kind_announcement = nip34::kind::repo_announcement;
constexpr std::uint32_t kind_state = nip34::kind::repo_state;
constexpr std::uint32_t kind_deletion = nip34::kind::deletion;
// Events looked at when searching a reply chain for its root; bounds the work
// a wide reference graph can cause.
constexpr std::size_t max_thread_visits = 512;
// Identifiers whose committed maintainer sets are cached at once.
constexpr std::size_t max_cached_identifiers = 4096;
// Pending events of one author checked when judging eligibility through them.
constexpr int max_pending_eligibility_checks = 4;

/// Every value of every tag called `name` (NIP-34 puts many values in one tag
/// and real clients also repeat the tag).
std::vector<std::string_view> flattened_values(const Event& ev, std::string_view name) {
  std::vector<std::string_view> out;
  for (const auto& tag : ev.tags)
    if (!tag.empty() && tag[0] == name)
      for (std::size_t i = 1; i < tag.size(); ++i) out.push_back(tag[i]);
  return out;
}

Filter address_filter(const Address& address) {
  Filter f;
  f.kinds = std::vector<std::uint32_t>{address.parsed.kind};
  f.authors = std::vector<Pubkey>{address.parsed.author};
  if (nostr::is_addressable(address.parsed.kind)) f.tags['d'] = {address.parsed.identifier};
  return f;
}

bool any_stored(const StoreView& store, Filters filters) {
  for (auto& f : filters) {
    f.limit = 1;
    f.normalize();
  }
  return store.exists(filters);
}

Filters id_filters(const std::vector<EventId>& ids, std::optional<Pubkey> author = std::nullopt) {
  Filters out;
  for (std::size_t i = 0; i < ids.size(); i += max_ids_per_filter) {
    Filter f;
    f.ids = std::vector<EventId>(ids.begin() + i,
                                 ids.begin() + std::min(ids.size(), i + max_ids_per_filter));
    if (author) f.authors = std::vector<Pubkey>{*author};
    f.normalize();
    out.push_back(std::move(f));
  }
  return out;
}

Filter announcements_named(std::string_view identifier) {
  Filter f;
  f.kinds = std::vector<std::uint32_t>{kind_announcement};
  f.tags['d'] = {std::string(identifier)};
  return f;
}

Decision accept(Rule rule) {
  return Decision{Verdict::accept, rule, {}, {}, {}};
}
Decision refuse(Rule rule, std::string message) {
  return Decision{Verdict::refuse, rule, std::move(message), {}, {}};
}
Decision wait_for(Rule rule, std::string message, std::vector<std::string> keys) {
  return Decision{
      Verdict::refuse_missing_dependency, rule, std::move(message), std::move(keys), {}};
}

std::string service_text(const HostPort& service) {
  return service.port ? service.host + ":" + std::to_string(*service.port) : service.host;
}

}  // namespace

AcceptancePolicy::AcceptancePolicy(PolicyConfig config, const StoreView& store)
    : config_(std::move(config)), store_(store) {}

std::optional<std::vector<EventId>> thread_path(const Event& ev, const StoreView& store) {
  if (is_root(ev)) return std::vector<EventId>{};
  // child_of[parent] = the event that referenced it first: the path back from the root.
  std::map<EventId, EventId> child_of;
  std::vector<EventId> frontier;
  for (const auto& id : references_of(ev).ids)
    if (id != ev.id && child_of.emplace(id, ev.id).second) frontier.push_back(id);
  std::optional<EventId> root;
  for (int depth = 0; depth < max_thread_depth && !frontier.empty() && !root; ++depth) {
    std::vector<EventId> next;
    store.scan(id_filters(frontier), [&](const Event& parent) {
      if (is_root(parent)) {
        root = parent.id;
        return false;
      }
      for (const auto& id : references_of(parent).ids) {
        if (child_of.size() >= max_thread_visits) break;
        if (id != ev.id && child_of.emplace(id, parent.id).second) next.push_back(id);
      }
      return true;
    });
    frontier = std::move(next);
  }
  if (!root) return std::nullopt;
  std::vector<EventId> path;
  for (auto id = *root; id != ev.id; id = child_of.at(id)) path.push_back(id);
  std::reverse(path.begin(), path.end());
  return path;
}

Decision AcceptancePolicy::evaluate(const Event& ev) const {
  view_.start_recording();
  auto decision = evaluate_rules(ev);
  if (decision.accepted()) decision.depends_on = view_.take_recorded();
  return decision;
}

Decision AcceptancePolicy::evaluate_rules(const Event& ev) const {
  // NIP-62: a request to vanish naming this relay is followed whatever its author's standing here
  // (blacklisted included); the store then deletes and refuses the author's older events.
  if (nostr::nip62::names_relay(ev, &config_.service)) return accept(Rule::vanish_request);
  if (author_vanished(ev))
    return refuse(Rule::author_vanished, "blocked: its author asked this relay to vanish");
  // The one blacklist check: configured and runtime (NIP-86) bans alike.
  if (is_banned_author(ev.pubkey))
    return refuse(Rule::event_blacklisted, "blocked: events of this author are not accepted here");
  if (runtime_.banned_events.count(ev.id))
    return refuse(Rule::event_blacklisted, "blocked: this event is banned here");
  // Before the ephemeral rule, which would broadcast them: NIP-42 and NIP-98 credentials are
  // never stored nor relayed, from clients or from sync (docs/policy.md "Credential kinds").
  if (nostr::is_credential_kind(ev.kind))
    return refuse(Rule::credential_kind, nostr::credential_refusal(ev.kind));
  if (nostr::is_ephemeral(ev.kind)) return accept(Rule::ephemeral);
  switch (kind_group(ev.kind)) {
    case KindGroup::announcement:
      return evaluate_announcement(ev);
    case KindGroup::state:
      return evaluate_state(ev);
    case KindGroup::deletion:
      return evaluate_deletion(ev);
    case KindGroup::identity:
      return evaluate_identity(ev);
    default:
      return evaluate_related_or_submission(ev);
  }
}

Decision AcceptancePolicy::evaluate_related_or_submission(const Event& ev) const {
  auto decision = evaluate_related(ev);
  // GRASP-06: a pull request for a repository not here, whose clone is its submission area here.
  if (!decision.accepted() && config_.pr_submissions &&
      (ev.kind == nostr::nip34::kind::pull_request ||
       ev.kind == nostr::nip34::kind::pull_request_update) &&
      pr_submission_identifier(ev, config_.service))
    return accept(Rule::related_pr_submission);
  return decision;
}

std::optional<Decision> AcceptancePolicy::repository_blacklist_refusal(
    const Pubkey& owner, std::string_view identifier) const {
  const auto& black = config_.repository_blacklist;
  if (std::any_of(black.begin(), black.end(),
                  [&](const RepositoryRule& rule) { return rule.covers(owner, identifier); }))
    return refuse(Rule::repository_blacklisted, "blocked: repository '" + std::string(identifier) +
                                                    "' is on this relay's repository blacklist");
  return std::nullopt;
}

void apply_entry(AcceptancePolicy::RuntimeLists& lists, const ModerationEntry& entry, bool add) {
  auto change = [&](std::set<nostr::Bytes32>& set) {
    if (add)
      set.insert(entry.key);
    else
      set.erase(entry.key);
  };
  switch (entry.list) {
    case ModerationList::banned_pubkeys:
      return change(lists.banned_pubkeys);
    case ModerationList::banned_events:
      return change(lists.banned_events);
    case ModerationList::allowed_pubkeys:
      return change(lists.allowed_pubkeys);
  }
}

bool AcceptancePolicy::is_banned_author(const Pubkey& author) const {
  return config_.event_blacklist.count(author) > 0 || runtime_.banned_pubkeys.count(author) > 0;
}

std::optional<Decision> AcceptancePolicy::repository_whitelist_refusal(
    const Pubkey& owner, std::string_view identifier) const {
  const auto& white = config_.repository_whitelist;
  if (!white.empty() && !runtime_.allowed_pubkeys.count(owner) &&
      std::none_of(white.begin(), white.end(),
                   [&](const RepositoryRule& rule) { return rule.covers(owner, identifier); }))
    return refuse(Rule::repository_not_whitelisted,
                  "blocked: repository '" + std::string(identifier) +
                      "' is not on this relay's repository whitelist");
  return std::nullopt;
}

bool AcceptancePolicy::archived_here(const Pubkey& owner, std::string_view identifier) const {
  const auto& archive = config_.archive;
  if (archive.takes(owner, identifier)) return true;
  if (archive.grasp_services.empty()) return false;
  auto filter = announcements_named(identifier);
  filter.authors = std::vector<Pubkey>{owner};
  bool found = false;
  auto visit = [&](const Event& announcement) {
    found = archive.takes(announcement);
    return !found;
  };
  view_.scan({filter}, visit);
  if (!found && held_) held_->scan({filter}, visit);
  return found;
}

std::optional<Decision> AcceptancePolicy::repository_list_refusal(
    const Pubkey& owner, std::string_view identifier) const {
  if (auto refusal = repository_blacklist_refusal(owner, identifier)) return refusal;
  // The whitelist curates what is hosted; an archive is taken by the archive rules.
  if (config_.repository_whitelist.empty() || archived_here(owner, identifier)) return std::nullopt;
  return repository_whitelist_refusal(owner, identifier);
}

bool announcement_lists_service(const Event& announcement, const HostPort& service) {
  auto any_names_service = [&](std::string_view tag, std::string_view scheme_a,
                               std::string_view scheme_b) {
    for (auto value : flattened_values(announcement, tag)) {
      auto url = parse_url(value);
      if (url && (url->scheme == scheme_a || url->scheme == scheme_b) &&
          url_names_host(*url, service))
        return true;
    }
    return false;
  };
  return any_names_service(nip34::tag::clone, "http", "https") &&
         any_names_service(nip34::tag::relays, "ws", "wss");
}

bool is_archive(const PolicyConfig& config, const Event& announcement) {
  const bool hosted =
      announcement_lists_service(announcement, config.service) && !config.archive.read_only;
  return !hosted && config.archive.takes(announcement);
}

bool AcceptancePolicy::lists_service(const Event& announcement) const {
  return announcement_lists_service(announcement, config_.service);
}

const AcceptancePolicy::MaintainerSet& AcceptancePolicy::committed_maintainers(
    std::string_view identifier) const {
  if (auto cached = maintainers_.find(identifier); cached != maintainers_.end())
    return cached->second;
  // Bounded: past the cap the cache starts over rather than growing with every identifier.
  if (maintainers_.size() >= max_cached_identifiers) maintainers_.clear();
  MaintainerSet set;
  store_.scan({announcements_named(identifier)}, [&](const Event& announcement) {
    set.authors.insert(announcement.pubkey);
    for (const auto& member : members_of(announcement)) set.members.insert(member);
    return true;
  });
  return maintainers_.emplace(std::string(identifier), std::move(set)).first->second;
}

bool AcceptancePolicy::in_maintainer_set(const Pubkey& author, std::string_view identifier) const {
  // Every stored announcement was accepted, so being its author or one of its
  // listed maintainers puts `author` in the (transitive) maintainer set. The
  // committed sets are cached per identifier: decoding every announcement of a
  // popular identifier per check made one check cost tens of milliseconds.
  if (committed_maintainers(identifier).members.count(author)) return true;
  auto stopped = pending_.scan({announcements_named(identifier)}, [&](const Event& announcement) {
    auto members = members_of(announcement);
    return std::find(members.begin(), members.end(), author) == members.end();
  });
  if (stopped) view_.record(*stopped);
  if (stopped || !held_) return stopped.has_value();
  bool held_member = false;
  held_->scan({announcements_named(identifier)}, [&](const Event& announcement) {
    auto members = members_of(announcement);
    held_member = std::find(members.begin(), members.end(), author) != members.end();
    return !held_member;
  });
  return held_member;
}

void AcceptancePolicy::forget_maintainers(const Event& committed) {
  if (committed.kind == kind_announcement) {
    maintainers_.erase(std::string(committed.d_tag()));
  } else if (committed.kind == kind_deletion ||
             committed.kind == nostr::nip62::kind_request_to_vanish) {
    // A deletion (or a request to vanish) removes only its author's announcements: only sets
    // they contributed to change.
    for (auto it = maintainers_.begin(); it != maintainers_.end();)
      it = it->second.authors.count(committed.pubkey) ? maintainers_.erase(it) : std::next(it);
  }
}

// Order (docs/policy.md "Archives"): the blacklist wins over everything; a listing announcement is
// hosted unless read-only, if the whitelist allows; then the archive rules; then, whitelist
// permitting, the maintainer exception. A listing announcement no rule takes while read-only is
// refused as such.
Decision AcceptancePolicy::evaluate_announcement(const Event& ev) const {
  auto identifier = ev.d_tag();
  if (!is_valid_identifier(identifier))
    return refuse(Rule::announcement_bad_identifier,
                  "invalid: repository identifier (d tag) must not be empty, '.', '..' or contain "
                  "'/', '\\' or NUL");
  if (auto refusal = repository_blacklist_refusal(ev.pubkey, identifier)) return *refusal;
  const bool listed = lists_service(ev);
  if (listed && !config_.archive.read_only) {
    if (auto refusal = repository_whitelist_refusal(ev.pubkey, identifier)) return *refusal;
    return accept(Rule::announcement_lists_service);
  }
  if (config_.archive.takes(ev)) return accept(Rule::announcement_archived);
  if (auto refusal = repository_whitelist_refusal(ev.pubkey, identifier)) return *refusal;
  if (in_maintainer_set(ev.pubkey, identifier)) return accept(Rule::announcement_maintainer);
  if (listed)
    return refuse(Rule::announcement_read_only,
                  "blocked: read-only archive: " + nostr::encode_npub(ev.pubkey) + "/" +
                      std::string(identifier) + " is not archived here");
  return wait_for(Rule::announcement_not_listed,
                  "blocked: repository '" + std::string(identifier) + "' does not list " +
                      service_text(config_.service) +
                      " in its clone and relays tags, and its author maintains no repository "
                      "of that name hosted here",
                  {wait_key::identifier(identifier)});
}

Decision AcceptancePolicy::evaluate_state(const Event& ev) const {
  auto identifier = ev.d_tag();
  if (!is_valid_identifier(identifier))
    return refuse(Rule::announcement_bad_identifier,
                  "invalid: repository identifier (d tag) is not valid");
  if (auto refusal = repository_list_refusal(ev.pubkey, identifier)) return *refusal;
  auto keys = std::vector<std::string>{wait_key::identifier(identifier)};
  if (!any_stored(view_, {announcements_named(identifier)}) &&
      !(held_ && held_->exists({announcements_named(identifier)})))
    return wait_for(Rule::state_unknown_repository,
                    "restricted: no announcement of repository '" + std::string(identifier) +
                        "' is hosted here",
                    std::move(keys));
  if (!in_maintainer_set(ev.pubkey, identifier))
    return wait_for(Rule::state_not_maintainer,
                    "restricted: only maintainers of repository '" + std::string(identifier) +
                        "' may publish its state",
                    std::move(keys));
  return accept(Rule::state_maintainer);
}

bool AcceptancePolicy::author_vanished(const Event& ev) const {
  if (!vanish_requests_known_) return false;
  Filter requests;
  requests.authors = std::vector<Pubkey>{ev.pubkey};
  requests.kinds = std::vector<std::uint32_t>{nostr::nip62::kind_request_to_vanish};
  requests.since = ev.created_at;
  requests.limit = 1;
  return view_.exists({requests});
}

Decision AcceptancePolicy::evaluate_deletion(const Event& ev) const {
  auto refs = references_of(ev);
  Filters targets = id_filters(refs.ids, ev.pubkey);
  std::vector<std::string> keys;
  for (const auto& id : refs.ids) keys.push_back(wait_key::event(id));
  for (const auto& address : refs.addresses) {
    if (address.parsed.author != ev.pubkey) continue;
    targets.push_back(address_filter(address));
    keys.push_back(wait_key::address(address.text));
  }
  // A held announcement counts: its owner's deletion ends the hold (docs/spec/git-hosting.md §4.6).
  if (!targets.empty() && (any_stored(view_, targets) || (held_ && any_stored(*held_, targets))))
    return accept(Rule::deletion_own_target);
  return wait_for(Rule::deletion_no_own_target,
                  "blocked: deletion request names no event of its author stored here",
                  std::move(keys));
}

Decision AcceptancePolicy::evaluate_identity(const Event& ev) const {
  if (is_eligible_identity_author(ev.pubkey) || eligible_through_pending(ev.pubkey))
    return accept(Rule::identity_eligible);
  return wait_for(Rule::identity_not_eligible,
                  "blocked: kind " + std::to_string(ev.kind) +
                      " is kept only for repository owners, maintainers and thread participants",
                  {wait_key::author(ev.pubkey)});
}

Decision AcceptancePolicy::evaluate_related(const Event& ev) const {
  auto refs = references_of(ev);
  Filters backward_addresses;
  for (const auto& address : refs.addresses) backward_addresses.push_back(address_filter(address));
  if (!backward_addresses.empty() && any_stored(view_, std::move(backward_addresses)))
    return accept(Rule::related_backward_address);
  if (!refs.ids.empty() && any_stored(view_, id_filters(refs.ids)))
    return accept(Rule::related_backward_id);

  const std::string id_hex = nostr::to_hex(ev.id);
  Filters forward;
  for (char letter : {'e', 'E', 'q'}) {
    Filter f;
    f.tags[letter] = {id_hex};
    forward.push_back(std::move(f));
  }
  const bool has_address = nostr::is_replaceable(ev.kind) || nostr::is_addressable(ev.kind);
  const std::string own_address = has_address ? nostr::address_of(ev) : std::string{};
  if (has_address)
    for (char letter : {'a', 'A', 'q'}) {
      Filter f;
      f.tags[letter] = {own_address};
      forward.push_back(std::move(f));
    }
  if (any_stored(view_, std::move(forward))) return accept(Rule::related_forward);

  std::vector<std::string> keys{wait_key::referenced(id_hex)};
  if (has_address) keys.push_back(wait_key::referenced(own_address));
  for (const auto& id : refs.ids) keys.push_back(wait_key::event(id));
  for (const auto& address : refs.addresses) keys.push_back(wait_key::address(address.text));
  return wait_for(Rule::related_orphan,
                  "blocked: event references no repository, issue, patch or other event hosted "
                  "here",
                  std::move(keys));
}

bool AcceptancePolicy::is_eligible_identity_author(const Pubkey& author) const {
  return eligible_authors_.count(author) > 0;
}

/// True when a pending event would make `author` eligible once committed: an announcement naming
/// them, or their own event in a repository's thread. Records what it relied on.
bool AcceptancePolicy::eligible_through_pending(const Pubkey& author) const {
  if (auto member = pending_members_.find(author); member != pending_members_.end()) {
    view_.record(member->second);
    return true;
  }
  bool eligible = false;
  int checks = 0;
  pending_.for_each_by_author(author, [&](const Event& ev) {
    if (is_identity_kind(ev.kind) || ev.kind == kind_deletion) return true;
    if (auto path = thread_path(ev, view_)) {
      view_.record(ev.id);
      for (const auto& id : *path)
        if (pending_.contains(id)) view_.record(id);
      eligible = true;
    }
    return !eligible && ++checks < max_pending_eligibility_checks;
  });
  return eligible;
}

}  // namespace graspd::policy
