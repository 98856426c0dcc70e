// Git Smart HTTP (docs/spec/git-hosting.md §2–§3, §5, §9–§10) on the Beast listener: the handler
// requests under `/<npub>/...` are handed to (HttpServer::set_handoff_handler). Each request runs
// `git upload-pack|receive-pack --stateless-rpc` (posix_spawn, fixed argv, cleaned environment,
// hardened `-c` configuration) driven through non-blocking pipes on the connection's strand:
// request bodies stream into git (gzip decoded on the way, bounded), git's output streams back
// chunked. No network thread waits for git, and no actor is involved. A handed-off connection
// moves onto git hosting's own network thread: streaming clones copy every byte of their packs
// through graspd, and on the relay's network threads that work made WebSocket answers wait
// behind it (docs/benchmarks.md, "Git hosting: clone").
//
// A receive-pack POST is authorised before git runs: its pkt-line command list is parsed
// (store/git/git_push.hpp), the repository's refs are read (`git for-each-ref`, also a child
// process) and the store is asked for the newest maintainer state (GitHttpHooks::authority, an LMDB
// read); a refusal is answered as git's own report-status (`ng <ref> <reason>`, side-band when
// asked), so the user sees `! [remote rejected] <ref> (<reason>)`.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "runtime/git/git_process_slots.hpp"
#include "runtime/git/git_repository.hpp"
#include "runtime/git/repository_locks.hpp"
#include "runtime/net/http_handoff.hpp"
#include "store/git/git_push.hpp"

namespace prometheus {
class Registry;
}

namespace graspd::runtime::git {

struct GitHttpOptions {
  /// Largest request body, as sent and after gzip decoding (413 beyond); also receive.maxInputSize.
  std::uint64_t max_body_bytes = 1ull << 30;
  /// Wall-clock limit of one request's git work (the process is killed after it).
  std::chrono::seconds process_timeout{600};
  /// A connection that sends or takes nothing for this long is closed.
  std::chrono::seconds idle_timeout{60};
  /// Git processes at once over all requests; requests beyond wait in line for one.
  std::size_t max_processes = 8;
  /// Git processes at once for one peer address; its requests beyond wait in line while other
  /// addresses' are served. 0 = no share.
  std::size_t max_processes_per_ip = 2;
  /// Git connections open at once, over all addresses and for one; beyond, 503 at once. 0 = none.
  std::size_t max_connections = 512;
  std::size_t max_connections_per_ip = 16;
  /// A request body must arrive at this many bytes a second on average once `idle_timeout` has
  /// passed, or the connection is closed (a client trickling its body would hold a git process and
  /// a push lock for the whole `process_timeout`). 0 = no minimum.
  std::uint64_t min_body_rate = 1024;
  /// refs/nostr/<id> refs one repository may have, and bytes of their `<id> <name>\n` listing
  /// lines: a push that would pass either (and adds to them) is refused, `ng` for each ref. 0 = no
  /// bound.
  std::size_t max_nostr_refs = 10'000;
  std::uint64_t max_nostr_ref_bytes = 2u << 20;
  /// Pushes (receive-pack requests with commands) one peer address may start a minute, in bursts
  /// up to as many; beyond, `ng` for each ref with a `rate-limited:` reason. 0 = no bound.
  std::size_t pushes_per_minute_per_ip = 60;
  /// How long a request waits in line for a git process before its 503; 0 = no line.
  std::chrono::seconds queue_wait{30};
  /// Nice steps below the daemon's priority for the git processes serving clients (upload-pack,
  /// receive-pack and what they start): the relay's threads come first on a busy CPU. 0 = same.
  int process_nice = 10;
  /// NGIT_DOMAIN as text, for the repository page's URLs.
  std::string domain;
  /// The git executable; empty = looked up in PATH at construction.
  std::string git_binary;
  /// The NIP-11 document, served for `Accept: application/nostr+json` on a repository page (§2.3).
  std::string nip11;
  /// NGIT_GRASP06_ENABLE: `/prs/<npub>/<identifier>.git` submission areas are served.
  bool pr_submissions = false;
  /// NGIT_GRASP06_MAX_BYTES_PER_IP: bytes one address may push to submission areas an hour (also
  /// the largest such push). 0 = no bound beyond max_body_bytes.
  std::uint64_t pr_bytes_per_hour_per_ip = 256ull << 20;
};

struct GitHttpHooks {
  /// What the store says about a push to `repository` (called on a network thread).
  std::function<::graspd::git::PushAuthority(const RepositoryRef& repository,
                                             const std::vector<std::string>& pr_ids)>
      authority;
  /// Whether `repository` is a GRASP-05 archive, for its page (called on a network thread).
  std::function<bool(const RepositoryRef& repository)> archived;
  /// A push was accepted and applied (called on a network thread after git finished), with its
  /// ref updates. The hook calls `reported` (once, on any thread) when the rest of the daemon
  /// knows of the push; the push's HTTP answer ends only then.
  std::function<void(const RepositoryRef&, const std::vector<::graspd::git::RefUpdate>&,
                     std::function<void()> reported)>
      pushed;
};

/// Counters (monotonic unless named otherwise), read by metrics and tests.
struct GitHttpCounters {
  std::atomic<std::uint64_t> requests{0};
  std::atomic<std::uint64_t> processes_running{0};  ///< a gauge
  std::atomic<std::uint64_t> processes_started{0};
  std::atomic<std::uint64_t> busy{0};  ///< answered 503: process cap or a push in progress
  std::atomic<std::uint64_t> connections_refused{0};  ///< 503: connection cap (overall or per IP)
  std::atomic<std::uint64_t> slow_bodies{0};          ///< closed: body slower than min_body_rate
  std::atomic<std::uint64_t> too_large{0};
  std::atomic<std::uint64_t> timeouts{0};
  std::atomic<std::uint64_t> pushes_accepted{0};
  std::atomic<std::uint64_t> pushes_refused{0};
  std::atomic<std::uint64_t> push_rate_refused{0};   ///< ng: NGIT_GIT_PUSHES_PER_MINUTE_PER_IP
  std::atomic<std::uint64_t> nostr_refs_refused{0};  ///< ng: NGIT_GIT_MAX_NOSTR_REF(S|_BYTES)
};

class GitHttp {
 public:
  /// `locks` are shared with the other writers of refs (the state applier); null = its own.
  /// `registry` may be null (tests): the counters are then kept only in counters().
  /// `slots` is the process cap, shared with repository maintenance (make_process_slots); null =
  /// its own, from `options`.
  GitHttp(Repositories repositories, GitHttpOptions options, GitHttpHooks hooks,
          std::shared_ptr<RepositoryLocks> locks = nullptr,
          prometheus::Registry* registry = nullptr, std::shared_ptr<ProcessSlots> slots = nullptr);
  ~GitHttp();
  GitHttp(const GitHttp&) = delete;
  GitHttp& operator=(const GitHttp&) = delete;

  /// For HttpServer::set_handoff_handler.
  HttpHandoffPredicate predicate() const;
  HttpHandoffHandler handler();

  /// Kills running git processes, closes their connections and ends the git network thread
  /// (waiting up to 2 s for it). Thread-safe, but not from a git handler; idempotent.
  void stop();

  const GitHttpCounters& counters() const;
  const Repositories& repositories() const;
  /// The git executable in use, empty when none was found (every git request then gets 503).
  const std::string& git_binary() const;

  struct Shared;

 private:
  struct Network;  ///< git hosting's network thread (git_http.cpp)

  std::shared_ptr<Shared> shared_;
  std::shared_ptr<Network> network_;
};

/// Requests waiting for a git process at most (each holds only its connection meanwhile).
inline constexpr std::size_t max_queued_git_requests = 1024;

/// The process cap of `options` (NGIT_GIT_MAX_PROCESSES, _PER_IP, the line of NGIT_GIT_QUEUE_SECS).
std::shared_ptr<ProcessSlots> make_process_slots(const GitHttpOptions& options);

/// The absolute path of the git executable: `configured` when it names an executable file
/// (NGIT_GIT_BINARY-like absolute paths), else that name (default `git`) looked up in PATH; empty
/// when none is found.
std::string find_git_binary(const std::string& configured = {});

/// The answer to a refused push (§10.2): report-status with `unpack ok` and one `ng <ref> <reason>`
/// per ref, wrapped in side-band-64k band 1 (with the reason on band 2) when `side_band`.
std::string refusal_report(const ::graspd::git::PushDecision& decision, bool side_band);

/// A pkt-line holding `payload`.
std::string pkt_line(std::string_view payload);

/// The HTML page of a hosted repository (§2.4).
std::string repository_page_html(const RepositoryRef& name, std::string_view domain,
                                 bool archive = false);

/// True for a `Git-Protocol` header graspd forwards: `:`-joined `key=value` items of
/// `[A-Za-z0-9._-]`, at most 256 bytes (§9.5).
bool is_valid_git_protocol(std::string_view value);

}  // namespace graspd::runtime::git
