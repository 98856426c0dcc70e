// Ref advertisement probes (docs/git-hosting-design.md, "Ref advertisement probes"): which branches
// and tags the server of one clone URL advertises, at which object ids, read from its ref
// advertisement alone: `git ls-remote` over protocol v0, one GET of `info/refs`, so no object is
// ever downloaded. The URL and the address it reaches follow the rule of every git command graspd
// points at a clone URL (runtime/git/git_remote.hpp: the plain-URL rule, the resolved address
// checked and pinned, http(s) only, no redirects, no credentials). The refs of a repository here
// are read the same way (`git for-each-ref`) for comparison. For the per-repository replication
// view. At most `max_running` probes run at once and `max_queued` wait; everything runs on the
// runner's executor (a strand): call it only from there. Include only in runtime/git_* (Asio).
#pragma once
#include <utility>  // before Asio, see docs/toolchain.md §1

#include <boost/asio/ip/tcp.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>

#include "messages/relay_url.hpp"
#include "runtime/git/git_remote.hpp"
#include "runtime/git/git_runner.hpp"

namespace graspd::runtime::git {

struct RefProbeOptions {
  /// NGIT_DOMAIN: a clone URL naming it is not probed ("refused: this_service"); local_refs reads
  /// that repository here.
  HostPort service;
  /// Probe loopback/private addresses too (tests; NGIT_SYNC_ALLOW_PRIVATE_ADDRESSES).
  bool allow_private_addresses = false;
  /// trusted_host_key of the cluster peers (NGIT_SYNC_PEERS): probed at whatever address they
  /// resolve to.
  std::set<std::string> trusted_hosts;
  /// Wall-clock limit of one probe's git process.
  std::chrono::seconds timeout{30};
  /// Probes (remote and local) running at once.
  std::size_t max_running = 4;
  /// Probes waiting for a slot; beyond, a probe ends at once: "busy, try later".
  std::size_t max_queued = 256;
  /// A listing longer than this is refused: "advertisement too large".
  std::size_t max_advertisement_bytes = 4 * 1024 * 1024;
  /// More branches and tags than this are refused: "too many refs".
  std::size_t max_refs = 10000;
  /// Address-space limit (RLIMIT_AS) of a remote probe's git processes: git holds the whole
  /// advertisement in memory before it prints a line of it.
  std::uint64_t max_memory_bytes = 256ull << 20;
};

struct RefProbeResult {
  bool ok = false;
  /// When !ok, short and stable (shown to users): "unreachable", "timeout", "not a git
  /// repository", "refused: <verdict_name>" (the plain-URL rule), "no public address",
  /// "advertisement too large", "too many refs", "busy, try later", "no git data here yet"
  /// (local_refs), or "git failed: <git's first stderr line, at most 160 bytes>".
  std::string reason;
  /// refs/heads/* and refs/tags/* -> object id as advertised: an annotated tag's own id (what a
  /// state event names), its peeled `^{}` entry ignored.
  std::map<std::string, std::string> refs;
};

class RefProbe : public std::enable_shared_from_this<RefProbe> {
 public:
  RefProbe(GitRunner runner, RefProbeOptions options);

  /// The branches and tags `url` advertises. `done` runs on the executor, once (never after
  /// stop()).
  void probe(const std::string& url, std::function<void(RefProbeResult)> done);
  /// The branches and tags of the bare repository at `repository_path` here
  /// (Repositories::path_of): for this service's own clone URL. One that does not exist: "no git
  /// data here yet". `done` as for probe().
  void local_refs(const std::string& repository_path, std::function<void(RefProbeResult)> done);
  /// Drops the waiting probes and ends reporting: no `done` is called afterwards. Running git
  /// processes end at their timeout.
  void stop();

  std::size_t running() const { return running_; }
  std::size_t queued() const { return queue_.size(); }

 private:
  struct Job {
    std::string target;  ///< the clone URL, or the repository's path for a local job
    bool local = false;
    std::function<void(RefProbeResult)> done;
  };

  void admit(Job job);
  void pump();
  void resolve(Job job);
  void list_remote(Job job, const PinnedRemote& remote);
  void list_local(Job job);
  void finish(Job job, RefProbeResult result);
  void report(std::function<void(RefProbeResult)> done, RefProbeResult result) const;
  std::optional<RefProbeResult> listed(const Collected& collected) const;

  GitRunner runner_;
  RefProbeOptions options_;
  boost::asio::ip::tcp::resolver resolver_;
  std::deque<Job> queue_;
  std::size_t running_ = 0;
  bool stopping_ = false;
};

}  // namespace graspd::runtime::git
