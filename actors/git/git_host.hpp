// The GIT HOSTING actor: owns the repositories on disk (NGIT_GIT_DATA_PATH), the application of
// state events to them, the refs/nostr refs of held pull requests and the fetches of missing git
// data from other clone URLs (docs/git-hosting-design.md). The acceptance actor tells it about
// events (RepoAnnounced, RepoWithdrawn, StateStored, PrHeld, PrCommitsCheck, PrRefChange) and asks
// it questions (RepoExists, ReposHosted); it announces git data arriving to its subscribers with
// GitDataArrived, built in this actor only.
//
// It runs detached (its own thread): creating, looking up and removing repositories is file I/O,
// which must not run on the cooperative scheduler's threads. Git child processes run on the
// io_context (runtime/git/git_state_sync.*, runtime/git/git_pr_refs.*); what they find comes back
// to this actor as a message. The Smart HTTP transport (runtime/git/git_http.*) reports pushes
// through push_reporter. Repositories written to (pushes, fetches) are queued for maintenance
// (actors/git/engine/maintenance_queue.hpp) and maintained one at a time on a timer message, under
// the git process cap (runtime/git/git_maintenance.*).
#pragma once

#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <caf/typed_response_promise.hpp>

#include <chrono>
#include <deque>

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "actors/git/engine/archive_usage.hpp"
#include "actors/git/engine/maintenance_queue.hpp"
#include "messages/interfaces.hpp"
#include "runtime/git/git_maintenance.hpp"
#include "runtime/git/git_pr_refs.hpp"
#include "runtime/git/git_repository.hpp"
#include "runtime/git/git_state_sync.hpp"
#include "runtime/git/repository_locks.hpp"
#include "store/git/git_push.hpp"
#include "store/policy/acceptance_policy.hpp"

namespace boost::asio {
class io_context;
}
namespace caf {
class actor_system;
}
namespace prometheus {
class Registry;
}

namespace graspd {

struct GitHostConfig {
  /// The repositories' root (prepared by the caller).
  runtime::git::Repositories repositories{"."};
  /// The store plus the events held in purgatory: push authorisation and the state applier count
  /// held events too.
  std::shared_ptr<const policy::StoreView> view;
  /// The state applier's options (git binary, fetch limits and delays).
  runtime::git::GitStateSyncOptions state_sync;
  /// Shared with the Smart HTTP transport: a push and the state applier never move one
  /// repository's refs at once.
  std::shared_ptr<runtime::git::RepositoryLocks> locks;
  /// Repository maintenance: NGIT_GIT_MAINTENANCE_INTERVAL_SECS (0 = none), its run limits and
  /// the git process cap shared with the Smart HTTP transport (null = no maintenance).
  std::chrono::seconds maintenance_interval{0};
  runtime::git::GitMaintenanceOptions maintenance;
  std::shared_ptr<runtime::git::ProcessSlots> process_slots;
  /// Where git child processes run; must outlive the actor.
  boost::asio::io_context* io = nullptr;
  /// Metrics registry; may be null (tests).
  prometheus::Registry* registry = nullptr;
  /// NGIT_GRASP06_ENABLE: submission areas left without refs are looked for at start.
  bool pr_submissions = false;
  /// NGIT_GIT_RECHECK_INTERVAL_SECS: every repository's git data is looked at against its newest
  /// state this often (0 = never), a few identifiers at a time.
  std::chrono::seconds recheck_interval{0};
  /// Which repositories are GRASP-05 archives (policy::is_archive), and their storage caps.
  policy::PolicyConfig policy;
  git::ArchiveCaps archive_caps;
};

/// The archives no more objects may be fetched into (at a storage cap), as the state applier's
/// strand reads them; written by the git hosting actor after each measurement.
struct ArchiveGate {
  std::mutex mutex;
  std::set<RepositoryRef> full;
};

struct GitHostState {
  static inline const char* name = "git_host";

  std::optional<runtime::git::Repositories> repositories;
  std::shared_ptr<const policy::StoreView> view;
  std::unique_ptr<runtime::git::GitStateSync> state_sync;
  /// The cluster peers' git bases (GitStateSyncOptions::peer_git_bases), for held pull requests.
  std::vector<std::string> peer_git_bases;
  std::unique_ptr<runtime::git::GitPrRefs> pr_refs;
  /// Null when maintenance is off.
  std::unique_ptr<runtime::git::GitMaintenance> maintenance;
  std::optional<git::MaintenanceQueue> maintenance_queue;
  bool maintenance_timer = false;  ///< a git_maintain is on its way
  /// Followers of GitDataArrived (the acceptance actor).
  std::vector<git_data_feed_actor> subscribers;
  /// PrRefsDelete requests whose git work runs, by ticket: answered from this actor once the
  /// strand reports back (atom::git_deleted), never from the strand's thread.
  std::map<std::uint64_t, caf::typed_response_promise<std::vector<PrRefPushed>>> deletions;
  /// The repository of each deletion under way (a submission area emptied by one goes).
  std::map<std::uint64_t, RepositoryRef> deletion_repositories;
  std::uint64_t next_deletion = 0;
  std::shared_ptr<runtime::git::RepositoryLocks> locks;
  policy::PolicyConfig policy;
  /// The identifiers the running re-check round has still to look at, and the interval.
  std::deque<std::string> recheck_pending;
  std::chrono::seconds recheck_interval{0};
  /// GRASP-05 archives here and their bytes on disk; the gate the state applier reads.
  std::optional<git::ArchiveUsage> archive_usage;
  std::shared_ptr<ArchiveGate> archive_gate = std::make_shared<ArchiveGate>();

  /// Stops the git child processes this actor started.
  void stop();
  ~GitHostState() { stop(); }
};

git_host_actor::behavior_type git_host(git_host_actor::stateful_pointer<GitHostState> self,
                                       GitHostConfig config);

/// Spawns git hosting on its own thread (detached).
git_host_actor spawn_git_host(caf::actor_system& system, GitHostConfig config);

/// For the Smart HTTP transport (GitHttpHooks::pushed): tells git hosting about an applied push,
/// from a network thread, and calls `reported` once git hosting has told its subscribers (or, if
/// it is gone or does not answer within 10 s, then).
std::function<void(const RepositoryRef&, const std::vector<git::RefUpdate>&,
                   std::function<void()> reported)>
push_reporter(git_host_actor host);

}  // namespace graspd
