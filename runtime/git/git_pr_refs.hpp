// The `refs/nostr/<id>` side of held pull requests (docs/spec/git-hosting.md §6.4, §7.3–7.4):
// whether a commit is in a repository here (`git cat-file`), and the creation or deletion of one
// `refs/nostr/<id>` ref (`git update-ref`, deletions in batches with `--stdin`, checked against the
// value expected, so a push that moved the ref meanwhile wins). Each is a short child process
// driven without blocking (runtime/git/git_process.*), one at a time in the order asked, on its own
// strand; callers (the acceptance actor's hooks) only post work here.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "runtime/git/git_repository.hpp"
#include "runtime/git/repository_locks.hpp"

namespace boost::asio {
class io_context;
}

namespace graspd::runtime::git {

struct GitPrRefsCounters {
  std::atomic<std::uint64_t> checks{0};         ///< cat-file runs
  std::atomic<std::uint64_t> refs_set{0};       ///< refs/nostr refs created
  std::atomic<std::uint64_t> refs_deleted{0};   ///< refs/nostr refs deleted
  std::atomic<std::uint64_t> dropped{0};        ///< jobs not run (queue full)
  std::atomic<std::uint64_t> mirrored{0};       ///< PR commits copied from a submission area
  std::atomic<std::uint64_t> areas_removed{0};  ///< submission areas left without refs, removed
};

class GitPrRefs {
 public:
  /// `git_binary` empty = nothing is done (checks find nothing).
  GitPrRefs(boost::asio::io_context& io, Repositories repositories, std::string git_binary);
  ~GitPrRefs();
  GitPrRefs(const GitPrRefs&) = delete;
  GitPrRefs& operator=(const GitPrRefs&) = delete;

  /// Which of `commits` (40 hex) are commits in `name`; `done` runs on this component's strand
  /// with them (none when the repository or git is missing). Thread-safe; returns at once.
  void check(const RepositoryRef& name, std::vector<std::string> commits,
             std::function<void(std::vector<std::string> present)> done);

  /// Creates refs/nostr/<id_hex> at `commit` in `name` unless that ref exists.
  void set_ref(const RepositoryRef& name, const std::string& id_hex, const std::string& commit);
  /// One refs/nostr/<id_hex> ref and a commit (asked for, or named now).
  struct Ref {
    std::string id_hex;
    std::string commit;
  };
  /// Deletes each refs/nostr/<id_hex> of `refs` from `name` if it names its commit, in one `git
  /// update-ref --stdin` transaction; when that fails (a push moved one meanwhile), the refs are
  /// listed instead. `done` runs on this component's strand with the refs left, each with the
  /// commit it names now (empty when unknown: git failed or the queue is full); every other ref
  /// is gone. Never dropped: a refusal is an answer the caller retries. Thread-safe.
  void delete_refs(const RepositoryRef& name, std::vector<Ref> refs,
                   std::function<void(std::vector<Ref> left)> done);

  /// GRASP-06 mirroring: copies `commit` from submission area `from` into `to` (a local fetch by
  /// id) and creates refs/nostr/<id_hex> there at it unless that ref exists.
  void mirror(const RepositoryRef& from, const RepositoryRef& to, const std::string& id_hex,
              const std::string& commit);

  /// Removes submission area `area` when it has no ref left; never while a push to it runs (the
  /// push lock, taken from `locks` before the refs are listed and held until the area is gone).
  void remove_if_empty(const RepositoryRef& area, std::shared_ptr<RepositoryLocks> locks);

  /// Drops queued work; running processes end on their own (short timeouts).
  void stop();

  const GitPrRefsCounters& counters() const;

  struct Impl;

 private:
  std::shared_ptr<Impl> impl_;
};

}  // namespace graspd::runtime::git
