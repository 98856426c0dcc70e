// Pull-request events in purgatory (docs/spec/git-hosting.md §6.1–6.2, §7): what a kind 1618/1619
// event says about its git data (the `c` commit, the repositories it `a`-tags), and the
// placeholders of `refs/nostr/<id>` refs pushed before their PR event is known (§7.3). Pure: no
// CAF, no LMDB, no git; the acceptance actor feeds it facts and carries out what it answers
// (persist the records, delete a ref).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "messages/nostr/event.hpp"
#include "messages/nostr/nip34.hpp"

namespace graspd::policy {

using nostr::nip34::RepositoryRef;

/// Kinds 1618 (pull request) and 1619 (pull request update).
bool is_pull_request_kind(std::uint32_t kind);

/// The commit a PR event names in its first `c` tag, when it is 40 lowercase hex digits.
std::optional<std::string> pr_commit(const nostr::Event& ev);

/// A PR event's `a` tags considered at most (NGIT_PR_MAX_REPOSITORIES): the repositories it is held
/// for, looked for and fetched into. One event tagging hundreds would make every git arrival and
/// fetch slot its own; the tags past the first `max` stay in the event but do nothing here.
inline constexpr std::size_t default_max_pr_repositories = 16;

/// The repositories a PR event `a`-tags (`30617:<owner>:<d>`), in tag order, without repeats, the
/// first `max` only.
std::vector<RepositoryRef> pr_repositories(const nostr::Event& ev,
                                           std::size_t max = default_max_pr_repositories);

/// The `OK` message of a held PR event (§6.2).
std::string pr_held_message(std::string_view commit);

/// The refusal of a PR event without a usable `c` tag where purgatory would hold it.
inline constexpr std::string_view pr_without_commit_message =
    "invalid: a pull request (kind 1618/1619) needs a \"c\" tag naming its commit (40 hex digits)";

/// A `refs/nostr/<id>` ref pushed to one repository while no PR event `id` was known.
struct Placeholder {
  nostr::EventId id{};
  RepositoryRef repository;
  std::string commit;
  std::int64_t expires_at = 0;

  friend bool operator==(const Placeholder&, const Placeholder&) = default;
};

/// The placeholders of §7.3, by PR event id: at most one per (id, repository). One expires after
/// `hold_seconds` unless a PR event with that id and a matching commit is accepted; its ref is then
/// deleted from the repository. An expired (or doomed) placeholder stays until git says its ref is
/// gone: due() hands the deletions out in bounded batches, done() ends them, so no deletion is
/// lost to a full queue and one not done yet survives a restart with its record.
class PrPlaceholders {
 public:
  explicit PrPlaceholders(std::int64_t hold_seconds = 30 * 60, std::size_t max = 10'000)
      : hold_seconds_(hold_seconds), max_(max) {}

  enum class Put : std::uint8_t {
    added,  ///< a new placeholder, expiring hold_seconds from now
    moved,  ///< the ref was pushed again: the commit changes, the expiry stays
    full,   ///< at `max`: none kept (the caller dooms the ref)
  };
  Put put(const nostr::EventId& id, const RepositoryRef& repository, std::string commit,
          std::int64_t now);

  /// The ref of `id` in `repository` naming `commit` is to be deleted as soon as may be (it raced
  /// its PR event, or no placeholder could be kept): a placeholder due at once, even past `max`
  /// (each names a ref that exists, so the refs bound them).
  void doom(const nostr::EventId& id, const RepositoryRef& repository, std::string commit);

  /// Removes and returns every placeholder of `id` not being deleted (its PR event arrived).
  std::vector<Placeholder> take(const nostr::EventId& id);
  /// The placeholders of `id` (their record).
  std::vector<Placeholder> of(const nostr::EventId& id) const;

  /// Up to `limit` placeholders whose time ended at or before `now` and whose deletion is not
  /// under way, soonest first; each is under way until done().
  std::vector<Placeholder> due(std::int64_t now, std::size_t limit);
  /// The deletion of `p` (as due() gave it) ended: `gone` when the ref is no longer there, else
  /// `current` is the commit the ref names now (empty: unknown, e.g. git failed). A gone
  /// placeholder ends unless a push moved its ref meanwhile; any other is due again (with the
  /// commit it names now). Returns whether the placeholder ended.
  bool done(const Placeholder& p, bool gone, const std::string& current = {});
  /// Deletions under way.
  std::size_t in_flight() const { return in_flight_; }

  /// A placeholder read back at start-up (kept as it was, expiry included).
  void restore(Placeholder placeholder);

  std::size_t size() const { return entries_.size(); }

 private:
  using Key = std::pair<nostr::EventId, RepositoryRef>;
  struct Entry {
    std::string commit;
    std::int64_t expires_at = 0;
    bool deleting = false;
  };
  void add(Key key, Entry entry);
  Placeholder placeholder(const Key& key, const Entry& entry) const;

  std::int64_t hold_seconds_;
  std::size_t max_;
  std::size_t in_flight_ = 0;
  std::map<Key, Entry> entries_;
  /// The placeholders whose deletion is not under way, by expiry.
  std::set<std::pair<std::int64_t, Key>> by_expiry_;
};

}  // namespace graspd::policy
