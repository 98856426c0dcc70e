// Purgatory (docs/spec/git-hosting.md §6): events accepted by the policy but held back until the
// git data they describe exists here. Pure (no CAF, no LMDB): the acceptance actor feeds it facts
// (an accepted event to hold, git data that arrived, the time) and carries out what it answers
// (persist, write to the store, delete a repository). Held events are not in the event store:
// REQ does not return them and subscribers never see them.
//
// Rules:
//  - held: a new announcement listing this service, a state event whose objects are missing, a
//    pull request (kind 1618/1619) whose `c` commit is missing (store/git/pull_requests.hpp);
//  - at most one held version per address: a newer one replaces the held one (and restarts the
//    hold), an older one is answered as a duplicate (pull requests have no address);
//  - a hold lasts `hold_seconds`, restarted for every held event of a repository by a replacing
//    announcement, an authorising state or an authorised push;
//  - git data arrived for <owner>/<d> with the objects of state S: S and the owner's announcement
//    of <d> are released (announcement first); with commit C: the pull requests that `a`-tag
//    <owner>/<d> and name C are released;
//  - expired ids are remembered for `remember_seconds` so sync does not import them again; a
//    client may still resubmit them;
//  - bounded: at most `max_held` events, `max_bytes` bytes of events and `max_repositories` held
//    announcements (each has a repository on disk); within that, one author, one client address
//    (IPv6 by its /64) and the sync peers together may each hold only their share of every bound
//    (`author_share`, `address_share`, `sync_share`), so one key or one client cannot fill it for
//    everyone else. A replacement is counted net of the version it replaces.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "messages/nostr/event.hpp"
#include "messages/nostr/filter.hpp"
#include "store/git/pull_requests.hpp"
#include "store/policy/acceptance_policy.hpp"

namespace graspd::policy {

enum class HeldKind : std::uint8_t { announcement, state, pull_request };
inline constexpr std::size_t held_kind_count = 3;
const char* to_string(HeldKind kind);

struct HeldEvent {
  nostr::EventPtr event;
  HeldKind kind = HeldKind::announcement;
  std::int64_t expires_at = 0;
  /// Who sent it (AcceptanceQuery::source: "ip:<address>" or "relay:<url>"; empty when unknown):
  /// the share it counts for.
  std::string source;
};

/// What one held event costs of purgatory's bounds.
struct PurgatoryUsage {
  std::size_t events = 0;
  std::size_t bytes = 0;
  /// Held announcements: each has a repository directory on disk.
  std::size_t repositories = 0;
};

struct PurgatoryLimits {
  /// How long an event is held without git data (§6.3: 30 min).
  std::int64_t hold_seconds = 30 * 60;
  /// How long an expired id is remembered (sync does not re-import it).
  std::int64_t remember_seconds = 7 * 24 * 3600;
  /// Held events at most; past it new events are refused ("error:"), never dropped silently.
  std::size_t max_held = 10'000;
  /// Bytes of held events at most (held_bytes of each).
  std::size_t max_bytes = 64u << 20;
  /// Held announcements at most: each one has a repository directory on disk.
  std::size_t max_repositories = 1'000;
  /// The part of each bound one author (pubkey) may hold.
  double author_share = 1.0;
  /// The part of each bound one client address may hold ("ip:<address>"; IPv6 by its /64).
  double address_share = 1.0;
  /// The part of each bound the sync peers ("relay:<url>") may hold together; each peer alone is
  /// also held to address_share.
  double sync_share = 1.0;
  /// Remembered expired ids at most (the one forgotten soonest goes first).
  std::size_t max_remembered = 100'000;
  /// The repositories of a pull request's `a` tags a hold counts (NGIT_PR_MAX_REPOSITORIES).
  std::size_t max_pr_repositories = default_max_pr_repositories;
};

struct PurgatoryStats {
  std::uint64_t released = 0;
  std::uint64_t expired = 0;
};

/// What the acceptance actor publishes for /api/sync (read on other threads).
struct PurgatoryFigures {
  std::atomic<bool> enabled{false};
  std::array<std::atomic<std::uint64_t>, held_kind_count> held{};
  std::atomic<std::uint64_t> released{0};
  std::atomic<std::uint64_t> expired{0};
};

/// True when `store` holds a version of addressable `ev`'s address at least as new as `ev`
/// (NIP-01 order: created_at, ties to the lower id) or `ev` itself. Purgatory holds no such event:
/// nothing would ever serve it, and the store answers it as the duplicate it is.
bool superseded_in(const StoreView& store, const nostr::Event& ev);

class Purgatory {
 public:
  explicit Purgatory(PurgatoryLimits limits = {}) : limits_(limits) {}

  /// What hold() did.
  enum class Hold : std::uint8_t {
    held,           ///< newly held (or a newer version of a held address)
    duplicate,      ///< this id, or a newer version of its address, is held already
    full,           ///< at max_held, max_bytes or max_repositories: refused
    author_share,   ///< its author holds their share already: refused
    address_share,  ///< its client address (or sync peer) holds its share already: refused
    sync_share,     ///< the sync peers together hold their share already: refused
  };
  struct HoldResult {
    Hold outcome = Hold::held;
    /// A held older version of the same address that this one replaced (to unpersist).
    std::optional<HeldEvent> replaced;
  };
  HoldResult hold(nostr::EventPtr event, HeldKind kind, std::int64_t now, std::string source = {});
  /// Takes back a hold whose record could not be written: the event leaves unremembered and the
  /// version it replaced, if any, is held again.
  void undo_hold(const nostr::EventId& id, std::optional<HeldEvent> replaced);

  /// A held event read back at start-up (kept as it was, expiry included).
  void restore(HeldEvent entry);
  /// An expired id read back at start-up.
  void restore_expired(const nostr::EventId& id, std::int64_t forget_at);

  bool contains(const nostr::EventId& id) const { return held_.count(id) > 0; }
  const HeldEvent* find(const nostr::EventId& id) const;
  /// True when `id` expired here within remember_seconds.
  bool expired_recently(const nostr::EventId& id) const { return expired_.count(id) > 0; }
  /// A client resubmitted an expired id: it may be held again.
  void forget_expired(const nostr::EventId& id) { forget(id); }

  /// Restarts the hold of every event held for repository `identifier` (announcements and states
  /// by `d`, pull requests by the repositories they `a`-tag). Returns them (to persist the new
  /// expiry).
  std::vector<HeldEvent> refresh(std::string_view identifier, std::int64_t now);

  /// The objects of state `state_id` are in <owner>/<identifier>: that state and the owner's
  /// announcement of `identifier` leave purgatory, announcement first.
  std::vector<nostr::EventPtr> release(const nostr::Pubkey& owner, std::string_view identifier,
                                       const nostr::EventId& state_id);

  /// Releases the held pull request `id` (its commit arrived under refs/nostr/<id>); null when
  /// none is held.
  nostr::EventPtr release_pull_request(const nostr::EventId& id);
  /// The held pull requests that `a`-tag `repository` (among their first max_pr_repositories), in
  /// id order; O(log n + found).
  std::vector<nostr::EventPtr> pull_requests_of(const RepositoryRef& repository) const;

  /// A stored deletion request (kind 5, NIP-09) ends the holds of its author's events it names:
  /// by `e` id, or by `a` address for a held version not newer than the request (§4.6). Returns
  /// them (to unpersist; an announcement's repository goes too). A stored request to vanish
  /// (kind 62, NIP-62) ends the holds of every event of its author not newer than it.
  std::vector<HeldEvent> withdraw(const nostr::Event& deletion);

  /// A banned event (NIP-86 banevent) leaves purgatory unremembered; returns it when it was held.
  std::optional<HeldEvent> drop(const nostr::EventId& id);

  /// Events whose hold ended at or before `now` (removed and remembered), and remembered ids
  /// past their time (forgotten).
  struct Expired {
    std::vector<HeldEvent> events;
    std::vector<nostr::EventId> forgotten;
  };
  /// `remember` (null: every one) says which expired events are remembered; the others may come
  /// back by sync at once (an archive whose sources were down is not lost for remember_seconds).
  Expired expire(std::int64_t now,
                 const std::function<bool(const HeldEvent&)>& remember_expired = nullptr);

  /// Visits held events matching any filter until `visit` returns false.
  void scan(const nostr::Filters& filters,
            const std::function<bool(const nostr::Event&)>& visit) const;
  /// Held announcements only, as a StoreView (the policy's "announcement exists" and maintainer
  /// closure, §1.3).
  const StoreView& announcements() const { return announcements_; }

  std::size_t size() const { return held_.size(); }
  std::array<std::size_t, held_kind_count> counts() const;
  std::size_t remembered() const { return expired_.size(); }
  const PurgatoryUsage& usage() const { return total_; }
  /// What `author` holds.
  PurgatoryUsage usage_of(const nostr::Pubkey& author) const;
  /// What one source's share holds (by share_key).
  PurgatoryUsage usage_of_source(const std::string& source) const;

  /// What an event counts for in max_bytes: an estimate of its JSON size (the exact length would
  /// cost a serialization).
  static std::size_t held_bytes(const nostr::Event& ev);
  /// The share a source counts for: "ip:<IPv4>" as it is, "ip:<IPv6>" by its /64 (one host has
  /// them all), "relay:<url>" as it is; empty (unknown) for anything else.
  static std::string share_key(const std::string& source);
  const PurgatoryStats& stats() const { return stats_; }
  const PurgatoryLimits& limits() const { return limits_; }

 private:
  class AnnouncementView final : public StoreView {
   public:
    explicit AnnouncementView(const Purgatory& owner) : owner_(owner) {}
    void scan(const nostr::Filters& filters,
              const std::function<bool(const nostr::Event&)>& visit) const override;

   private:
    const Purgatory& owner_;
  };

  /// "kind:pubkey:d" of an addressable event; empty for others (pull requests).
  static std::string address_of(const nostr::Event& ev);
  void remove(const nostr::EventId& id);
  std::vector<HeldEvent> withdraw_vanished(const nostr::Event& request);
  void remember(const nostr::EventId& id, std::int64_t forget_at);
  void forget(const nostr::EventId& id);
  void insert(HeldEvent entry);
  /// Keeps pull_requests_by_repository_ and pr_repositories_ of a held pull request.
  void index_pull_request(const HeldEvent& entry);
  void unindex_pull_request(const nostr::EventId& id);
  /// Refused when holding `entry` (net of `replaced`) would pass a bound or a share.
  std::optional<Hold> over_limit(const HeldEvent& entry, const HeldEvent* replaced) const;
  static PurgatoryUsage cost(const HeldEvent& entry);

  PurgatoryLimits limits_;
  std::map<nostr::EventId, HeldEvent> held_;
  /// "kind:pubkey:d" -> the held version.
  std::map<std::string, nostr::EventId> by_address_;
  /// Held pull requests by the repositories they `a`-tag (the first max_pr_repositories), and
  /// those repositories by pull request: a git arrival looks only at its repository's, and no
  /// event's tags are parsed again after it is held.
  std::map<RepositoryRef, std::set<nostr::EventId>> pull_requests_by_repository_;
  std::map<nostr::EventId, std::vector<RepositoryRef>> pr_repositories_;
  /// Expired id -> when it is forgotten, and the same by time: lookups, the forgetting of the
  /// soonest at the bound and the expiry pass are O(log n) each.
  std::map<nostr::EventId, std::int64_t> expired_;
  std::set<std::pair<std::int64_t, nostr::EventId>> expired_by_time_;
  /// What is held in all, per author and per share key (sources; "sync" for the peers together).
  PurgatoryUsage total_;
  std::map<nostr::Pubkey, PurgatoryUsage> by_author_;
  std::map<std::string, PurgatoryUsage> by_source_;
  PurgatoryStats stats_;
  AnnouncementView announcements_{*this};
};

}  // namespace graspd::policy
