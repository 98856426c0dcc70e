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

/// The repositories a PR event `a`-tags (`30617:<owner>:<d>`), in tag order, without repeats.
std::vector<RepositoryRef> pr_repositories(const nostr::Event& ev);

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
/// deleted from the repository.
class PrPlaceholders {
 public:
  explicit PrPlaceholders(std::int64_t hold_seconds = 30 * 60, std::size_t max = 10'000)
      : hold_seconds_(hold_seconds), max_(max) {}

  enum class Put : std::uint8_t {
    added,  ///< a new placeholder, expiring hold_seconds from now
    moved,  ///< the ref was pushed again: the commit changes, the expiry stays
    full,   ///< at `max`: none kept (the caller deletes the ref)
  };
  Put put(const nostr::EventId& id, const RepositoryRef& repository, std::string commit,
          std::int64_t now);

  /// Removes and returns every placeholder of `id` (its PR event arrived).
  std::vector<Placeholder> take(const nostr::EventId& id);
  /// The placeholders of `id`.
  const std::vector<Placeholder>& of(const nostr::EventId& id) const;

  /// Removes and returns the placeholders whose time ended at or before `now`.
  std::vector<Placeholder> expire(std::int64_t now);

  /// A placeholder read back at start-up (kept as it was, expiry included).
  void restore(Placeholder placeholder);

  std::size_t size() const { return size_; }

 private:
  std::int64_t hold_seconds_;
  std::size_t max_;
  std::size_t size_ = 0;
  std::map<nostr::EventId, std::vector<Placeholder>> by_id_;
};

}  // namespace graspd::policy
