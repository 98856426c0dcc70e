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
//    client may still resubmit them.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
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
};

struct PurgatoryLimits {
  /// How long an event is held without git data (§6.3: 30 min).
  std::int64_t hold_seconds = 30 * 60;
  /// How long an expired id is remembered (sync does not re-import it).
  std::int64_t remember_seconds = 7 * 24 * 3600;
  /// Held events at most; past it new events are refused ("error:"), never dropped silently.
  std::size_t max_held = 10'000;
  /// Remembered expired ids at most (the oldest are forgotten first).
  std::size_t max_remembered = 100'000;
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

class Purgatory {
 public:
  explicit Purgatory(PurgatoryLimits limits = {}) : limits_(limits) {}

  /// What hold() did.
  enum class Hold : std::uint8_t {
    held,       ///< newly held (or a newer version of a held address)
    duplicate,  ///< this id, or a newer version of its address, is held already
    full,       ///< at max_held: refused
  };
  struct HoldResult {
    Hold outcome = Hold::held;
    /// A held older version of the same address that this one replaced (to unpersist).
    std::optional<HeldEvent> replaced;
  };
  HoldResult hold(nostr::EventPtr event, HeldKind kind, std::int64_t now);
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
  void forget_expired(const nostr::EventId& id) { expired_.erase(id); }

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
  /// The held pull requests that `a`-tag `repository`.
  std::vector<nostr::EventPtr> pull_requests_of(const RepositoryRef& repository) const;

  /// A stored deletion request (kind 5, NIP-09) ends the holds of its author's events it names:
  /// by `e` id, or by `a` address for a held version not newer than the request (§4.6). Returns
  /// them (to unpersist; an announcement's repository goes too).
  std::vector<HeldEvent> withdraw(const nostr::Event& deletion);

  /// Events whose hold ended at or before `now` (removed and remembered), and remembered ids
  /// past their time (forgotten).
  struct Expired {
    std::vector<HeldEvent> events;
    std::vector<nostr::EventId> forgotten;
  };
  Expired expire(std::int64_t now);

  /// Visits held events matching any filter until `visit` returns false.
  void scan(const nostr::Filters& filters,
            const std::function<bool(const nostr::Event&)>& visit) const;
  /// Held announcements only, as a StoreView (the policy's "announcement exists" and maintainer
  /// closure, §1.3).
  const StoreView& announcements() const { return announcements_; }

  std::size_t size() const { return held_.size(); }
  std::array<std::size_t, held_kind_count> counts() const;
  std::size_t remembered() const { return expired_.size(); }
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
  void remember(const nostr::EventId& id, std::int64_t forget_at);

  PurgatoryLimits limits_;
  std::map<nostr::EventId, HeldEvent> held_;
  /// "kind:pubkey:d" -> the held version.
  std::map<std::string, nostr::EventId> by_address_;
  /// Expired id -> when it is forgotten.
  std::map<nostr::EventId, std::int64_t> expired_;
  PurgatoryStats stats_;
  AnnouncementView announcements_{*this};
};

}  // namespace graspd::policy
