// State events applied to the repositories here (docs/spec/git-hosting.md §5.9, §5.10, §8). When a
// state event (kind 30618) is stored or a push applied, every repository here with that identifier
// gets its branches and tags set to its owner's newest authorising state — at once when every
// object is here (copied from at most `max_siblings` other repositories here with that identifier
// first: the pushed one, then those whose state names the objects), else once the missing objects
// were fetched by id from the repository's clone URLs (its owner's and maintainers' first; https/
// http only, resolved addresses checked, no redirects, no credentials, bounded in time and size)
// by runtime/git/git_fetcher.*, within the limits and shares of
// runtime/git/engine/git_fetch_schedule.hpp. A client's state waits `push_window` for its push
// (longer while a push to the repository is under way, up to `fetch_delay`); one that came by
// sync is fetched at once.
//
// The local steps (cat-file, copies, ref updates) run one task at a time on the applier's strand,
// from one lane per identifier served in turn: an identifier with many owners delays another
// identifier's task by at most one task. A lane keeps one task per repository (a newer look
// replaces the older). Every git command is a child process driven without blocking
// (runtime/git/git_process.*).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "messages/nostr/event.hpp"
#include "messages/relay_url.hpp"
#include "runtime/git/engine/git_fetch_schedule.hpp"
#include "runtime/git/git_repository.hpp"
#include "store/git/git_push.hpp"

namespace boost::asio {
class io_context;
}

namespace prometheus {
class Registry;
}

namespace graspd::runtime::git {

struct GitStateSyncOptions {
  /// NGIT_DOMAIN: clone URLs naming it are never fetched from.
  HostPort service;
  /// Fetch from loopback/private addresses too (tests; NGIT_SYNC_ALLOW_PRIVATE_ADDRESSES).
  bool allow_private_addresses = false;
  /// The git Smart HTTP base ("http://host:port") of each cluster peer (NGIT_SYNC_PEERS): tried
  /// first for every fetch, whatever address it resolves to.
  std::vector<std::string> peer_git_bases;
  /// Fetch missing objects at all (NGIT_GIT_FETCH_ENABLED).
  bool fetch_enabled = true;
  /// A client's state waits at most this long for its push while one to the repository is under
  /// way (NGIT_GIT_FETCH_DELAY_SECS).
  std::chrono::seconds fetch_delay{60};
  /// A client's state waits this long for its push to begin before its missing objects are
  /// fetched; a push under way then (the repository's push lock taken) extends the wait by as
  /// much again, up to fetch_delay (NGIT_GIT_FETCH_PUSH_WINDOW_SECS).
  std::chrono::seconds push_window{10};
  /// Other repositories here with the identifier a state's objects are copied from, at most
  /// (NGIT_GIT_STATE_MAX_SIBLINGS).
  std::size_t max_siblings = 4;
  /// Clone URLs taken from each announcement of the identifier by another owner (not the
  /// repository's owner or maintainers), at most (NGIT_GIT_FETCH_URLS_PER_OTHER_OWNER).
  std::size_t urls_per_other_owner = 2;
  /// Wall-clock limit of one fetch (NGIT_GIT_FETCH_TIMEOUT_SECS).
  std::chrono::seconds fetch_timeout{300};
  /// Largest file one fetch may write (the pack), RLIMIT_FSIZE.
  std::uint64_t max_fetch_bytes = 1ull << 30;
  /// The git executable (absolute path); empty = nothing is done.
  std::string git_binary;
  /// Concurrency, rate, backoff and host skipping of fetches (NGIT_GIT_FETCH_*).
  FetchLimits limits;
  /// Fetches for a state are retried until this long after it arrived (NGIT_PURGATORY_HOLD_SECS).
  std::chrono::seconds give_up_after{1800};
};

struct GitStateSyncHooks {
  /// The newest authorising state for `owner`'s `identifier` (store lookup).
  std::function<std::optional<::graspd::git::StateRefs>(const nostr::Pubkey& owner,
                                                        const std::string& identifier)>
      newest_state;
  /// Authors of the stored announcements named `identifier` (whose repositories may be here).
  std::function<std::vector<nostr::Pubkey>(const std::string& identifier)> owners;
  /// The clone URLs to fetch repository `name`'s missing objects from, in the order to try them
  /// (its owner's and maintainers' announcements first).
  std::function<std::vector<std::string>(const RepositoryRef& name)> clone_urls;
  /// Whether objects may be fetched into repository `name` now (false: an archive at its storage
  /// cap; what it misses is not fetched). Unset = always.
  std::function<bool(const RepositoryRef& name)> may_fetch;
  /// Every object of state `state_id` is in repository `name` (purgatory releases it). Unset =
  /// nothing.
  std::function<void(const RepositoryRef& name, const nostr::EventId& state_id)> objects_present;
  /// Some objects of state `state_id` are in no repository here: it waits for a push or a fetch
  /// (the client that sent it is told it is held). Unset = nothing.
  std::function<void(const RepositoryRef& name, const nostr::EventId& state_id)> objects_missing;
  /// Commit `commit` asked for by want_commit is in repository `name`. Unset = nothing.
  std::function<void(const RepositoryRef& name, const std::string& commit)> commit_present;
  /// The per-repository push lock shared with git hosting (path → taken?).
  std::function<bool(const std::string& path)> try_lock;
  std::function<void(const std::string& path)> unlock;
  /// Whether a push holds that lock now (nothing is taken). Unset = never.
  std::function<bool(const std::string& path)> is_locked;
};

struct GitStateSyncCounters {
  std::atomic<std::uint64_t> applied{0};       ///< repositories whose refs were set from a state
  std::atomic<std::uint64_t> fetched{0};       ///< fetch requests that brought every missing object
  std::atomic<std::uint64_t> fetch_failed{0};  ///< states whose objects no source had in time
  std::atomic<std::uint64_t> dropped{0};       ///< states not handled (queue full)
  std::atomic<std::uint64_t> tasks{0};         ///< tasks taken up (one repository, one look)
  std::atomic<std::uint64_t> copies{0};        ///< copies from another repository here
};

class GitStateSync {
 public:
  /// `registry` may be null (tests): the counters are then kept only in counters().
  GitStateSync(boost::asio::io_context& io, Repositories repositories, GitStateSyncOptions options,
               GitStateSyncHooks hooks, prometheus::Registry* registry = nullptr);
  ~GitStateSync();
  GitStateSync(const GitStateSync&) = delete;
  GitStateSync& operator=(const GitStateSync&) = delete;

  /// A state event was stored or held: every repository here with its identifier is brought in line
  /// with its owner's newest state. What it misses is fetched after the fetch delay (a push usually
  /// follows a client's state), or at once when it came `by_sync` (no push comes here for it).
  /// Thread-safe; returns at once.
  void on_state(nostr::EventPtr state, bool by_sync = false);

  /// The periodic re-check: the repositories here named `identifier` are brought in line with
  /// their newest state as for a state that came by sync (what is missing is fetched at once).
  /// Thread-safe; returns at once.
  void recheck(const std::string& identifier);

  /// A push was applied to `name`: the other repositories here with that identifier are brought in
  /// line too, copying the objects from it (§5.9). Thread-safe; returns at once.
  void on_pushed(const RepositoryRef& name);

  /// A held pull request needs `commit` in `name` (§8.1): checked there, then, after the fetch
  /// delay, fetched by id from `extra_urls` (the PR's `clone` tags) and the clone URLs of the
  /// announcements of that identifier, under the same rules as a state's objects; found →
  /// GitStateSyncHooks::commit_present. Thread-safe; returns at once.
  /// `author` (hex) is the pull request's: its share of fetches.
  void want_commit(const RepositoryRef& name, std::string commit,
                   std::vector<std::string> extra_urls, std::string author = {});

  /// Stops: queued and delayed work is dropped, a running git process is killed.
  void stop();

  const GitStateSyncCounters& counters() const;

  struct Impl;

 private:
  std::shared_ptr<Impl> impl_;
};

}  // namespace graspd::runtime::git
