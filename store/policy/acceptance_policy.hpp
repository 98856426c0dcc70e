// GRASP-01 event acceptance policy (docs/spec/protocol.md §3): which events graspd stores.
// One component for the client path and the sync path. It lives in store/
// because every rule is a lookup against what is already stored; it sees the
// store only through StoreView so it can be tested against a plain vector.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "messages/nostr/event.hpp"
#include "messages/nostr/filter.hpp"
#include "messages/relay_url.hpp"
#include "messages/store_messages.hpp"
#include "store/policy/archive_rules.hpp"
#include "store/policy/pending_events.hpp"
#include "store/policy/repository_rule.hpp"
#include "store/policy/retry_cache.hpp"

namespace graspd::policy {

/// Read access to the committed events the policy reasons about.
class StoreView {
 public:
  virtual ~StoreView() = default;
  /// Calls `visit` for stored events matching any of `filters` until it returns false.
  virtual void scan(const nostr::Filters& filters,
                    const std::function<bool(const nostr::Event&)>& visit) const = 0;
  /// True when any stored event matches; cheaper than scan (nothing decoded).
  virtual bool exists(const nostr::Filters& filters) const {
    bool found = false;
    scan(filters, [&](const nostr::Event&) {
      found = true;
      return false;
    });
    return found;
  }
};

/// Why an event was accepted or refused. A fixed set: it labels metrics.
enum class Rule : std::uint8_t {
  event_blacklisted,
  announcement_lists_service,
  announcement_maintainer,
  announcement_not_listed,
  announcement_bad_identifier,
  announcement_archived,
  announcement_read_only,
  repository_blacklisted,
  repository_not_whitelisted,
  state_maintainer,
  state_unknown_repository,
  state_not_maintainer,
  related_backward_address,
  related_backward_id,
  related_forward,
  related_orphan,
  related_pr_submission,
  deletion_own_target,
  deletion_no_own_target,
  identity_eligible,
  identity_not_eligible,
  vanish_request,
  author_vanished,
  ephemeral,
  credential_kind,
};
inline constexpr std::size_t rule_count = static_cast<std::size_t>(Rule::credential_kind) + 1;
const char* to_string(Rule rule);

/// The fixed set of kind classes used as a metrics label.
enum class KindGroup : std::uint8_t {
  announcement,
  state,
  root,
  deletion,
  identity,
  ephemeral,
  other
};
inline constexpr std::size_t kind_group_count = static_cast<std::size_t>(KindGroup::other) + 1;
KindGroup kind_group(std::uint32_t kind);
const char* to_string(KindGroup group);

enum class Verdict : std::uint8_t {
  accept,
  refuse,
  /// Refused only because something it depends on is not stored yet; worth a
  /// retry when one of `wait_keys` is satisfied (see RetryCache).
  refuse_missing_dependency,
};

/// A write answered dependency_missing (what the event was accepted on was not stored after all:
/// deleted, replaced) is judged again at most this often before the event is refused; each round
/// waits for one commit, so this cannot spin. The acceptance actor and `graspd sync` both apply it.
inline constexpr int max_write_attempts = 4;

/// What follows the writer's answer for an accepted event (AcceptancePolicy::on_write_outcome).
enum class AfterWrite {
  done,         ///< stored, or answered by the store's own rules (duplicate, deleted, older ...)
  judge_again,  ///< dependency_missing: decide it anew (what it was accepted on is gone)
  refuse,       ///< dependency_missing for the max_write_attempts-th time: refused with it
};

struct Decision {
  Verdict verdict = Verdict::refuse;
  Rule rule = Rule::related_orphan;
  /// For refusals: the OK message with its NIP-01 prefix.
  std::string message;
  /// For refuse_missing_dependency: keys whose arrival makes a retry useful.
  std::vector<std::string> wait_keys;
  /// For acceptances: the pending (accepted, not yet committed) events the decision relied on.
  /// The write must not be stored unless they are (StoreWrite::depends_on).
  std::vector<nostr::EventId> depends_on;
  /// Accepted by evaluate_submission because a copy is already pending or stored (no rule
  /// decided it: it is not counted as one).
  bool already_here = false;
  bool accepted() const { return verdict == Verdict::accept; }
};

/// The committed store plus the pending events, as one StoreView. Records which pending events
/// ended a lookup (the visitor stopped on one, or `exists` found only one), so a decision knows
/// what it relied on beyond the store.
class CombinedView final : public StoreView {
 public:
  CombinedView(const StoreView& store, const PendingEvents& pending)
      : store_(store), pending_(pending) {}
  void scan(const nostr::Filters& filters,
            const std::function<bool(const nostr::Event&)>& visit) const override;
  bool exists(const nostr::Filters& filters) const override;

  void start_recording() const { recorded_.clear(); }
  void record(const nostr::EventId& id) const { recorded_.push_back(id); }
  /// The recorded ids, sorted and deduplicated; recording starts afresh.
  std::vector<nostr::EventId> take_recorded() const;

 private:
  const StoreView& store_;
  const PendingEvents& pending_;
  mutable std::vector<nostr::EventId> recorded_;
};

/// What the policy is configured with; the configuration parses every list once
/// (runtime/config/config).
struct PolicyConfig {
  /// NGIT_DOMAIN: announcements must list it in their clone and relays tags.
  HostPort service;
  std::set<nostr::Pubkey> event_blacklist;
  /// Gates the hosting rule and the maintainer exception, not the archive rules.
  std::vector<RepositoryRule> repository_whitelist;
  /// Wins over every rule.
  std::vector<RepositoryRule> repository_blacklist;
  /// GRASP-05: announcements accepted as archives; read-only refuses hosting.
  ArchiveRules archive;
  /// NGIT_GRASP06_ENABLE: pull requests whose clone is their submission area here are accepted
  /// even when they reference nothing here (pr_submission_identifier).
  bool pr_submissions = false;
};

/// Whether `announcement` lists `service` in both its clone (http/https) and relays (ws/wss) tags,
/// by parsed host and port.
bool announcement_lists_service(const nostr::Event& announcement, const HostPort& service);

/// Whether the repository of `announcement` (its owner's newest) is an archive here rather than
/// hosted: no hosting rule takes it (it does not list this service, or read-only is in effect)
/// and an archive rule does. Archives take no push (docs/policy.md "Archives").
bool is_archive(const PolicyConfig& config, const nostr::Event& announcement);

/// Whether an announcement accepted under `rule` gets a repository here (created before it is
/// stored or held): a hosted one, or an archive.
inline bool creates_repository(Rule rule) {
  return rule == Rule::announcement_lists_service || rule == Rule::announcement_archived;
}

/// Keys events wait on in the retry cache. One place builds them so the
/// producer (evaluate) and the consumer (on_committed) cannot disagree.
namespace wait_key {
std::string event(const nostr::EventId& id);
std::string address(std::string_view address);
std::string identifier(std::string_view d);
std::string author(const nostr::Pubkey& pubkey);
/// An event parked for the forward rule: a later event may reference it.
std::string referenced(std::string_view id_or_address);
}  // namespace wait_key

/// The policy plus the incremental state it needs beyond the store's indexes:
/// the authors eligible for identity kinds (§3.7) and the events accepted but
/// not yet committed. Owned by one actor.
class AcceptancePolicy {
 public:
  AcceptancePolicy(PolicyConfig config, const StoreView& store);

  /// Decides whether `ev` (already structurally valid, id and signature
  /// checked, not expired) may be stored, against the store plus the pending
  /// events (accepted, not yet committed).
  Decision evaluate(const nostr::Event& ev) const;
  /// evaluate() for a submission, the one entry of the acceptance steps (the acceptance actor and
  /// `graspd sync`): an event refused although a copy of it is pending or `is_stored` is accepted
  /// instead, so that the store answers it "duplicate:" rather than rules whose inputs may have
  /// changed since the copy was accepted. A pending copy becomes its one dependency: it stores
  /// only if that one does. Checked only on refusal, so accepted events pay no extra lookup.
  Decision evaluate_submission(const nostr::Event& ev,
                               const std::function<bool(const nostr::EventId&)>& is_stored) const;

  /// An accepted event was sent to the writer: later decisions see it. `depends_on` is its
  /// Decision::depends_on.
  void on_accepted(nostr::EventPtr ev, std::vector<nostr::EventId> depends_on);
  /// The writer committed it; it stays pending until on_committed (the change feed) sees it.
  void on_written(const nostr::EventId& id);
  /// The writer did not store it. When the id is nevertheless in the store (duplicate) its
  /// dependants stand; otherwise they go too, as their own writes will be refused.
  void on_not_stored(const nostr::EventId& id, bool in_store);
  /// Applies the writer's answer for an accepted event (on_written or on_not_stored) and says what
  /// follows; `attempts_made` counts the writes of this event so far, this one included.
  AfterWrite on_write_outcome(const nostr::EventId& id, WriteOutcome outcome, int attempts_made);
  /// Drops pending entries written long ago whose change-feed message never came.
  std::size_t sweep_pending();
  bool is_pending(const nostr::EventId& id) const { return pending_.contains(id); }
  std::size_t pending_count() const { return pending_.size(); }

  /// Feeds one committed event (from the store's change feed, in commit
  /// order). Returns the wait keys it satisfies, for RetryCache::release; with `keys_wanted`
  /// false (nothing waits in the retry cache) it builds none and returns none.
  std::vector<std::string> on_committed(const nostr::Event& ev, bool keys_wanted = true);

  /// Rebuilds the identity-eligibility state from the store at startup. `on_progress`, when set,
  /// gets the number of events read so far every `progress_every` events and once at the end
  /// (the daemon draws a progress line from it on a terminal).
  void load_from_store(const std::function<void(std::uint64_t)>& on_progress = {});
  static constexpr std::uint64_t progress_every = 4096;

  /// Announcements held in purgatory (docs/spec/git-hosting.md §1.3): they count for "an
  /// announcement exists" and the maintainer closure, never for the related-event rule. Null =
  /// none.
  void set_held_announcements(const StoreView* held) { held_ = held; }

  /// NIP-86 runtime lists (docs/policy.md "Bans"): banned authors join NGIT_EVENT_BLACKLIST,
  /// banned ids are refused, allowed owners join the npub entries of NGIT_REPOSITORY_WHITELIST.
  /// Changed by the management API through the acceptance actor, loaded from the store at boot.
  struct RuntimeLists {
    std::set<nostr::Pubkey> banned_pubkeys;
    std::set<nostr::EventId> banned_events;
    std::set<nostr::Pubkey> allowed_pubkeys;
  };
  RuntimeLists& runtime_lists() { return runtime_; }
  const RuntimeLists& runtime_lists() const { return runtime_; }
  /// Whether events of `author` are refused: NGIT_EVENT_BLACKLIST or a runtime ban.
  bool is_banned_author(const nostr::Pubkey& author) const;

  bool is_eligible_identity_author(const nostr::Pubkey& author) const;
  std::size_t eligible_author_count() const { return eligible_authors_.size(); }
  const PolicyConfig& config() const { return config_; }

 private:
  Decision evaluate_rules(const nostr::Event& ev) const;
  Decision evaluate_announcement(const nostr::Event& ev) const;
  Decision evaluate_state(const nostr::Event& ev) const;
  Decision evaluate_deletion(const nostr::Event& ev) const;
  /// NIP-62: whether a stored (or pending) request to vanish of the author is not older than `ev`.
  bool author_vanished(const nostr::Event& ev) const;
  Decision evaluate_identity(const nostr::Event& ev) const;
  Decision evaluate_related(const nostr::Event& ev) const;
  /// evaluate_related, then GRASP-06's relaxation for pull requests it refuses.
  Decision evaluate_related_or_submission(const nostr::Event& ev) const;
  std::optional<Decision> repository_blacklist_refusal(const nostr::Pubkey& owner,
                                                       std::string_view identifier) const;
  std::optional<Decision> repository_whitelist_refusal(const nostr::Pubkey& owner,
                                                       std::string_view identifier) const;
  /// Whether repository (owner, identifier) is an archive here: an archive rule takes it, by its
  /// lists or by a stored or held announcement of it.
  bool archived_here(const nostr::Pubkey& owner, std::string_view identifier) const;
  std::optional<Decision> repository_list_refusal(const nostr::Pubkey& owner,
                                                  std::string_view identifier) const;
  bool lists_service(const nostr::Event& announcement) const;
  bool in_maintainer_set(const nostr::Pubkey& author, std::string_view identifier) const;
  /// Authors and listed maintainers of the committed announcements named `identifier`.
  struct MaintainerSet {
    std::set<nostr::Pubkey> authors;
    std::set<nostr::Pubkey> members;
  };
  const MaintainerSet& committed_maintainers(std::string_view identifier) const;
  void forget_maintainers(const nostr::Event& committed);
  bool eligible_through_pending(const nostr::Pubkey& author) const;
  void forget_pending(const nostr::EventId& id);
  void prune_members();
  void make_eligible(const nostr::Pubkey& author, std::vector<std::string>& released);

  PolicyConfig config_;
  RuntimeLists runtime_;
  const StoreView& store_;
  const StoreView* held_ = nullptr;
  PendingEvents pending_;
  /// Lookups of evaluate(): the store plus pending_.
  CombinedView view_{store_, pending_};
  /// Pending announcements by the keys they make eligible (author and maintainers).
  std::multimap<nostr::Pubkey, nostr::EventId> pending_members_;
  std::set<nostr::Pubkey> eligible_authors_;
  // False once load_from_store found no request to vanish stored and none was accepted or
  // committed since: author_vanished then needs no lookup (one per event otherwise). The store
  // writer refuses a vanished author's older events itself; this check gives the clear refusal.
  bool vanish_requests_known_ = true;
  /// Cache of committed_maintainers, dropped per identifier when an announcement or a deletion by
  /// one of its authors commits.
  mutable std::map<std::string, MaintainerSet, std::less<>> maintainers_;
};

/// Adds (`add`) or removes one management list entry (messages/store_messages.hpp) in `lists`.
void apply_entry(AcceptancePolicy::RuntimeLists& lists, const ModerationEntry& entry, bool add);

/// The reply chain from `ev` up to a repository root in `store`, nearest parent first and the
/// root last; nullopt when none is found within the thread depth (breadth-first, each event
/// visited once). Empty when `ev` is itself a root.
std::optional<std::vector<nostr::EventId>> thread_path(const nostr::Event& ev,
                                                       const StoreView& store);

}  // namespace graspd::policy
