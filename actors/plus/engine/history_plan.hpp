// GRASP-03 history-only mailbox probes (pure): the desired history relays with what each is asked
// for (repositories and roots), their stable-sorted, byte-packed filter groups, a numeric cursor
// per relay, and which relays have a worker. The Sync+ controller feeds it the desired work and
// maintenance passes; history workers ask it for their next group.
//
//  - a maintenance pass admits at most one due relay without a worker, while fewer than
//    `max_workers` (32) run: the relay of the author with the fewest workers out (then the one
//    due longest), and only while one of the authors that put it there has fewer than
//    `author_workers` of them: one author's (hostile) mailboxes take at most that share;
//  - an admitted relay has `relay_budget` seconds in all for its groups (each fetch gets what is
//    left, so a relay trickling progress is cut at the budget however it paces itself); a relay
//    that spent it without completing a group is backed off (retry, doubling per consecutive
//    spent budget, up to refresh); one that completed groups continues after `retry`;
//  - a worker drains its relay's groups from the cursor; a successful group moves on to the next
//    one until a full rotation is done, then the relay is due again after `refresh` seconds;
//  - a failed group advances the cursor and releases the worker: the relay is due again after
//    `retry` seconds and the group is retried on a later rotation;
//  - the cursor lives in memory only and is kept modulo the new group count when the relay's work
//    changes; a relay no longer desired gets no further group (an in-flight one may finish).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "actors/sync/engine/sync_filters.hpp"

namespace graspd::sync {

inline constexpr std::size_t max_history_workers = 32;

struct HistoryConfig {
  std::int64_t refresh_seconds = 86400;
  std::int64_t retry_seconds = 300;
  std::size_t refs_per_filter = 100;
  std::size_t max_message_bytes = 65536;
  std::size_t max_filters = 10;
  std::size_t max_workers = max_history_workers;
  /// Workers the relays of one author may hold at once (NGIT_SYNC_PLUS_AUTHOR_WORKERS).
  std::size_t author_workers = 4;
  /// Seconds one admission of a relay may take in all (NGIT_SYNC_PLUS_RELAY_BUDGET_SECS);
  /// 0: only the fetch path's own bounds.
  std::int64_t relay_budget_seconds = 120;
};

/// The filter groups of one relay's items: item_filters without `since`, sorted by their JSON text
/// (stable whatever order the items came in) and packed into REQ-sized groups.
std::vector<nostr::Filters> history_groups(const SyncItems& items, const HistoryConfig& config);

class HistoryPlan {
 public:
  explicit HistoryPlan(HistoryConfig config) : config_(config) {}

  struct Relay {
    SyncItems items;
    std::vector<nostr::Filters> groups;
    std::size_t cursor = 0;
    /// Groups that ended (either way) in the current rotation.
    std::size_t done_in_rotation = 0;
    bool worker = false;
    std::int64_t due = 0;
    std::uint64_t groups_ok = 0;
    std::uint64_t groups_failed = 0;
    /// When its current worker was admitted, and the groups it completed since.
    std::int64_t admitted_at = 0;
    std::size_t ok_in_admission = 0;
    /// Consecutive admissions that spent the budget without completing a group.
    std::uint32_t spent = 0;
    /// The authors whose mailboxes put it there (set_authors).
    std::set<nostr::Pubkey> authors;
  };

  /// Replaces the desired relays and their items. New relays are due now; a relay whose items
  /// changed keeps its cursor modulo its new group count and is due now.
  void set_desired(const std::map<std::string, SyncItems>& desired, std::int64_t now);
  /// Whose mailboxes each desired relay is (for the per-author share); call after set_desired.
  /// A relay with no author recorded is not limited by the share.
  void set_authors(const std::map<std::string, std::set<nostr::Pubkey>>& authors);
  /// Seconds left of the relay's budget for its worker's next fetch (0: no budget configured).
  std::int64_t budget_left(const std::string& relay, std::int64_t now) const;
  /// A maintenance pass: the relay admitted (a worker is to be started for it), if any: the one
  /// due longest, so relays never visited go before ones whose work merely changed.
  std::optional<std::string> admit(std::int64_t now);
  /// True when admit(now) would admit a relay.
  bool admissible(std::int64_t now) const;
  /// The group at the relay's cursor for its worker; nullopt ends the worker.
  std::optional<nostr::Filters> next_group(const std::string& relay) const;
  /// The worker's group ended; true when the worker continues with next_group.
  bool on_group_done(const std::string& relay, bool ok, std::int64_t now);
  /// The worker of `relay` ended (finished or crashed).
  void on_worker_gone(const std::string& relay);

  const std::map<std::string, Relay>& relays() const { return relays_; }
  std::size_t active_workers() const;
  /// Relays with at least one group: each has a cursor.
  std::size_t cursors() const;
  /// Admissions that ended because the relay spent its time budget.
  std::uint64_t budgets_spent() const { return budgets_spent_; }
  /// Workers out on relays of `author`.
  std::size_t workers_of(const nostr::Pubkey& author) const;

 private:
  HistoryConfig config_;
  std::map<std::string, Relay> relays_;
  /// Relays no longer desired whose worker is still out.
  std::map<std::string, Relay> leaving_;
  std::uint64_t budgets_spent_ = 0;

  /// Workers out per author (relays with a worker, desired or leaving).
  std::map<nostr::Pubkey, std::size_t> author_load() const;
  /// The relay's worker ended because its budget ran out at `now`.
  void on_budget_spent(Relay& state, std::int64_t now);

  /// The relay admit(now) would pick, if any.
  std::map<std::string, Relay>::const_iterator next_due(std::int64_t now) const;
};

}  // namespace graspd::sync
