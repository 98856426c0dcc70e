// Which git data fetch (docs/spec/git-hosting.md §8) may start now: a pure decision class, no I/O,
// time passed in by the caller. A request is "bring these object ids into this repository from one
// of these clone URLs"; the schedule tries its sources in order, one attempt at a time per request,
// and enforces the limits of §8.2 and §9.4:
//   - at most `max_running` attempts at once over the whole daemon, and `per_host_running` per
//   host;
//   - at most `per_host_per_minute` attempts started per host in any 60 s;
//   - a host that failed to resolve, connect or complete TLS is skipped for `host_skip`;
//   - `not our ref <oid>` drops that id for that source and retries the rest from it at once;
//   - when every source was tried, the request waits backoff_base·2^(n−1), capped at backoff_cap,
//     and starts over; a retry that would start after its `expires_at` abandons the request;
//   - a new request for the same key replaces the old one (fresh ids, sources, backoff and expiry);
//   - at most `max_requests` requests are kept; beyond, new ones are dropped;
//   - shares (0 = none): at most `per_author_requests` requests and `per_author_running` attempts
//     at once for one author (of the state or pull request the fetch is for), and
//     `per_repository_requests` requests and `per_repository_running` attempts at once for one
//     repository here; a repository's own state request is not counted against its repository
//     request share (a flood of pull requests naming it cannot keep its own state out).
//   - a running attempt may be handed back with defer(): its slot is freed and the request waits
//     again (a push to the repository is under way, which may bring the objects).
// Hosts are keyed by `host:port` (another port is another server). Used by
// runtime/git/git_fetcher.*.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "messages/relay_url.hpp"

namespace graspd::runtime::git {

/// What the plain-URL rule says of a clone URL (before resolution). Only `fetchable` is fetched
/// from; each other verdict names the first rule the URL breaks.
enum class CloneUrlVerdict {
  fetchable,
  malformed,     ///< unparsable, longer than 2048 bytes, blanks or control characters
  scheme,        ///< not http:// or https://
  user_info,     ///< `user[:password]@` before the host
  host,          ///< not a plain host (is_plain_host: IDN, escapes, odd numeric forms)
  query,         ///< a `?` query string: git would send it a blind GET
  fragment,      ///< a `#` fragment
  path,          ///< a path character outside letters, digits, `/-._~` and `%XX` escapes
  this_service,  ///< names NGIT_DOMAIN
};

CloneUrlVerdict judge_clone_url(std::string_view url, const HostPort& service);

/// The verdict's metric label and log word ("query", "host", ...).
std::string_view verdict_name(CloneUrlVerdict verdict);

/// judge_clone_url(url, service) == CloneUrlVerdict::fetchable.
bool is_fetchable_clone_url(std::string_view url, const HostPort& service);

using FetchTime = std::chrono::steady_clock::time_point;

struct FetchLimits {
  std::size_t max_running = 4;
  std::size_t per_host_running = 2;
  std::size_t per_host_per_minute = 60;
  std::size_t max_requests = 256;
  std::chrono::seconds backoff_base{20};
  std::chrono::seconds backoff_cap{120};
  std::chrono::seconds host_skip{3600};
  std::size_t per_author_requests = 16;
  std::size_t per_author_running = 2;
  std::size_t per_repository_requests = 8;
  std::size_t per_repository_running = 1;
};

struct FetchSource {
  std::string url;
  std::string host;  ///< `host:port`, lowercased: what the per-host limits count
};

/// The source of a fetchable clone URL; nullopt when is_fetchable_clone_url refuses it.
std::optional<FetchSource> fetch_source(std::string_view url, const HostPort& service);

struct FetchRequest {
  std::string key;  ///< one request per key
  std::vector<FetchSource> sources;
  std::vector<std::string> ids;  ///< object ids wanted
  FetchTime ready_at;            ///< the first attempt starts no earlier
  FetchTime expires_at;          ///< no retry starts after it
  std::string author;            ///< who the fetch is for (hex key): the per-author shares
  std::string repository;        ///< where the objects go (path): the per-repository shares
  bool own_state = false;        ///< the repository's own state: not in its repository share
};

/// One fetch to run: `ids` from `url`. Hand it back to finish() with what happened.
struct FetchAttempt {
  std::string key;
  std::uint64_t generation = 0;  ///< which version of the request (a replaced one is stale)
  std::string url;
  std::string host;
  std::vector<std::string> ids;
  std::string author;
  std::string repository;
};

enum class FetchOutcome {
  complete,     ///< every wanted object is here now: the request is done
  incomplete,   ///< the fetch ran but `ids` are still missing: try the next source
  not_our_ref,  ///< the source does not have `ids`: drop them for it, retry the rest from it
  failed,       ///< anything else (HTTP error, timeout, stall): try the next source
  unreachable,  ///< DNS, connect or TLS failed: skip the host for a while, try the next source
  cancelled,    ///< the caller no longer wants it: the request is removed
};

/// Which outcome names a metric label.
std::string_view outcome_name(FetchOutcome outcome);

/// Whether git's stderr says the host could not be resolved, connected to or spoken TLS with.
bool is_unreachable_error(std::string_view stderr_text);

/// The object ids git's stderr reports as `not our ref <oid>` (what upload-pack says of an id it
/// does not have or will not serve).
std::vector<std::string> refused_ids(std::string_view stderr_text);

class FetchSchedule {
 public:
  explicit FetchSchedule(FetchLimits limits) : limits_(limits) {}

  enum class Added { queued, replaced, dropped, author_share, repository_share };
  /// Queues `request`, or replaces the one with its key (a running attempt of the old one becomes
  /// stale: its finish() only frees its slot). Dropped when `max_requests` are kept already, or
  /// when its author or repository holds its share of them.
  Added add(FetchRequest request);

  /// The next attempt that may start at `now`, marked running; nullopt when none may. Requests
  /// whose sources are all skipped hosts go to backoff (or are abandoned) here.
  std::optional<FetchAttempt> next(FetchTime now);

  /// What became of `attempt`. `ids`: the ids still missing (incomplete) or refused (not_our_ref).
  void finish(const FetchAttempt& attempt, FetchOutcome outcome, FetchTime now,
              const std::vector<std::string>& ids = {});

  /// Hands `attempt` back unrun: its slot (and its start in the host's rate) is freed and its
  /// request waits until `until`, then goes on from the same source.
  void defer(const FetchAttempt& attempt, FetchTime until);

  /// Removes the request with `key` (a running attempt of it becomes stale).
  void remove(const std::string& key);

  /// Keys of the requests given up since the last call (every source failed until expiry).
  std::vector<std::string> take_abandoned();
  /// Backoff rounds started since the last call.
  std::uint64_t take_backoffs();

  /// When next() may have something new to say without a finish() or add(): the earliest time a
  /// waiting request becomes ready, a host's rate window frees a slot or a skipped host returns.
  std::optional<FetchTime> wakeup(FetchTime now) const;

  std::size_t requests() const { return requests_.size(); }
  std::size_t running() const { return running_; }
  /// Hosts skipped at `now`.
  std::size_t skipped_hosts(FetchTime now) const;
  /// The request kept for `key`, if any (tests).
  const FetchRequest* find(const std::string& key) const;

 private:
  struct Request {
    FetchRequest request;
    std::uint64_t generation = 0;
    std::size_t source = 0;                ///< the source tried next
    std::set<std::string> refused;         ///< ids the current source refused
    unsigned rounds = 0;                   ///< backoff rounds so far
    std::uint64_t running_generation = 0;  ///< generation of the attempt in flight; 0 = none
  };
  struct Host {
    std::size_t running = 0;
    std::deque<FetchTime> starts;  ///< attempt starts in the last minute
    std::optional<FetchTime> skipped_until;
  };

  Request* find_request(const std::string& key);
  bool may_start(const Host& host) const;
  /// Whether the author's and the repository's running shares leave room for `r`.
  bool within_shares(const Request& r) const;
  /// Whether the author's and the repository's request shares leave room for a new `request`.
  std::optional<Added> share_refusal(const FetchRequest& request) const;
  bool is_skipped(const std::string& host, FetchTime now) const;
  /// Moves to the next source, or to backoff after the last; false when the request is abandoned.
  bool next_source(Request& request, FetchTime now);
  void release(const FetchAttempt& attempt);
  void prune_hosts(FetchTime now);

  FetchLimits limits_;
  std::deque<Request> requests_;  ///< in arrival order: the oldest ready one starts first
  std::map<std::string, Host> hosts_;
  std::size_t running_ = 0;
  std::map<std::string, std::size_t> author_running_;
  std::map<std::string, std::size_t> repository_running_;
  std::uint64_t next_generation_ = 1;
  std::vector<std::string> abandoned_;
  std::uint64_t backoffs_ = 0;
};

}  // namespace graspd::runtime::git
