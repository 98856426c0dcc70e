// Git hosting: the git hosting actor (actors/git/git_host.*), which owns the repositories under
// NGIT_GIT_DATA_PATH, and the Smart HTTP handler the listener hands `/<npub>/...` requests to
// (runtime/git/git_http.*). Push authorisation reads the event store plus the events held in
// purgatory (LMDB read transactions are safe on network threads); an applied push is reported to
// the actor, which announces git data (GitDataArrived) to the acceptance actor.
#pragma once

#include <memory>

#include "actors/sync/replication.hpp"
#include "messages/interfaces.hpp"
#include "runtime/boot/services.hpp"
#include "runtime/boot/wire_store.hpp"

namespace graspd::runtime::git {
class GitHttp;
}  // namespace graspd::runtime::git

namespace graspd::boot {

struct WiredGit {
  git_host_actor host;
  std::shared_ptr<runtime::git::GitHttp> http;
  /// Reads a git server's refs for the replication view: a clone URL's ref advertisement, or the
  /// repository here for our own URL (runtime/git/git_ref_probe.*, on a strand of its own).
  ServerProbe probe_server;
  /// Stops the ref probes (at hang-up).
  std::function<void()> stop_probes;
};

/// Creates the data directory, spawns the git hosting actor and installs the Smart HTTP handler on
/// the listener (before it serves).
WiredGit wire_git(const Services& services, const WiredStore& store);

/// Closes the git connections and stops the git processes (before the network threads drain).
void hang_up(const WiredGit& wired);

/// Sends the git hosting actor exit.
void stop(const WiredGit& wired);

}  // namespace graspd::boot
