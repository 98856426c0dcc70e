// The simulated git hosting of one node: what the acceptance actor talks to in place of
// actors/git/git_host (the same git_host_actor interface), over repositories that are sets of
// commit ids rather than git directories. Repositories live in a SimGitDisk the world keeps across
// the node's restarts, as a real node keeps its repositories on disk.
//
// What it models, after the real one (docs/git-hosting-design.md): an accepted announcement
// creates its repository, a withdrawn one removes it; a state it is told about is released
// (GitDataArrived) once every commit it names is here, either at once, after a push (the world
// pushes: push()), or after a fetch from another node listed in the announcement's clone URLs.
// Fetches go through the world's network (SimGitFetch) under its faults and are tried again every
// fetch_retry while a state waits. Pull requests are not drawn by the schedule: their messages are
// answered as having nothing to do.
#pragma once

#include <caf/fwd.hpp>
#include <caf/typed_actor.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "messages/interfaces.hpp"
#include "messages/nostr/event.hpp"
#include "messages/nostr/nip34.hpp"

namespace graspd::sim {

/// One repository of a node: the announcement that created it (its clone URLs are where missing
/// commits are fetched from), the commits here and the states it was told about (a push is taken
/// only when one of them names the pushed commit, as real pushes are authorised by states).
struct SimRepository {
  nostr::EventPtr announcement;
  std::set<std::string> commits;
  std::map<nostr::EventId, nostr::EventPtr> states;
};

/// A node's repositories "on disk".
struct SimGitDisk {
  std::map<RepositoryRef, SimRepository> repositories;
  /// Fetches from this node fail until then (a git outage fault).
  std::int64_t outage_until_ms = 0;
};

/// The commits a state's `refs/...` tags name (40 hex each).
std::vector<std::string> state_tips(const nostr::Event& state);

/// The repository a state applies to (its author's, under its `d`).
RepositoryRef state_repository(const nostr::Event& state);

/// Asks node `from` for `commits` of `repository`; `done(true)` when it answered with all of them.
using SimGitFetch =
    std::function<void(std::size_t from, const RepositoryRef& repository,
                       const std::vector<std::string>& commits, std::function<void(bool)> done)>;

struct SimGitHostConfig {
  std::size_t node = 0;
  /// Nodes in the mesh (clone URLs naming another one are fetched from).
  std::size_t nodes = 0;
  /// The cluster peers (NGIT_SYNC_PEERS), asked before the clone URLs, as the real one does.
  std::vector<std::size_t> peers;
  std::shared_ptr<SimGitDisk> disk;
  SimGitFetch fetch;
  /// How often a state whose commits are missing is fetched again.
  std::chrono::seconds fetch_retry{60};
  std::function<void(const std::string&)> trace;
};

/// The real interface plus the fetch messages: (tick, repository) = time to fetch what its states
/// miss (the timer); (git_fetch, repository, n) = the sources before the n-th failed, ask it.
using sim_git_host_actor =
    git_host_actor::extend<caf::reacts_to<atom::tick, RepositoryRef>,
                           caf::reacts_to<atom::git_fetch, RepositoryRef, std::uint64_t>>;

sim_git_host_actor spawn_sim_git_host(caf::actor_system& system, SimGitHostConfig config);

/// The node a clone URL points at (`https://node<i>.sim/...`), if it is one of `nodes`.
std::optional<std::size_t> clone_url_node(const std::string& url, std::size_t nodes);

}  // namespace graspd::sim
