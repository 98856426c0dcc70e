#include "tests/sim/git_host.hpp"

#include <caf/actor_system.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include <algorithm>

#include "messages/nostr/json.hpp"

namespace graspd::sim {

namespace {

bool is_commit_id(const std::string& value) {
  return value.size() == 40 && std::all_of(value.begin(), value.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

std::string short_id(const nostr::EventId& id) {
  return nostr::to_hex(id).substr(0, 12);
}

struct SimGitHostState {
  static inline const char* name = "sim_git_host";
  SimGitHostConfig config;
  std::vector<git_data_feed_actor> subscribers;
  /// States told whose commits are not all here yet, by repository.
  std::map<RepositoryRef, std::set<nostr::EventId>> waiting;
  /// Repositories with a fetch on its way (one at a time each).
  std::set<RepositoryRef> fetching;
};

using Self = sim_git_host_actor::stateful_pointer<SimGitHostState>;

void trace(Self self, const std::string& line) {
  if (self->state.config.trace) self->state.config.trace("git " + line);
}

bool has_all(const SimRepository& repository, const std::vector<std::string>& commits) {
  return std::all_of(commits.begin(), commits.end(),
                     [&](const std::string& c) { return repository.commits.count(c) > 0; });
}

/// Tells the subscribers which waiting states of `ref` now have every commit (and forgets them).
void release_ready(Self self, const RepositoryRef& ref, std::vector<std::string> commits) {
  auto& st = self->state;
  auto repo = st.config.disk->repositories.find(ref);
  auto waiting = st.waiting.find(ref);
  if (repo == st.config.disk->repositories.end() || waiting == st.waiting.end()) return;
  GitDataArrived arrived{ref, {}, {}, std::move(commits), {}};
  for (auto it = waiting->second.begin(); it != waiting->second.end();) {
    auto state = repo->second.states.find(*it);
    if (state != repo->second.states.end() && has_all(repo->second, state_tips(*state->second))) {
      arrived.states.push_back(*it);
      it = waiting->second.erase(it);
    } else {
      ++it;
    }
  }
  if (waiting->second.empty()) st.waiting.erase(waiting);
  if (arrived.states.empty() && arrived.commits.empty()) return;
  for (const auto& id : arrived.states) trace(self, "objects of state " + short_id(id) + " here");
  for (const auto& subscriber : st.subscribers) self->send(subscriber, arrived);
}

/// The cluster peers, then the nodes whose clone URLs the repository's announcement lists, in its
/// order, other than this one.
std::vector<std::size_t> fetch_sources(const SimGitHostConfig& config,
                                       const SimRepository& repository) {
  std::vector<std::size_t> out = config.peers;
  if (!repository.announcement) return out;
  for (const auto& tag : repository.announcement->tags) {
    if (tag.empty() || tag[0] != "clone") continue;
    for (std::size_t i = 1; i < tag.size(); ++i) {
      auto node = clone_url_node(tag[i], config.nodes);
      if (node && *node != config.node && std::find(out.begin(), out.end(), *node) == out.end())
        out.push_back(*node);
    }
  }
  return out;
}

/// Asks `sources` in turn for `commits`; the first that has them all answers with git_found.
void fetch_from(Self self, RepositoryRef ref, std::vector<std::string> commits,
                std::vector<std::size_t> sources, std::size_t next) {
  auto& st = self->state;
  if (next >= sources.size()) {
    st.fetching.erase(ref);
    trace(self, "fetch of " + ref.identifier + " found no source yet");
    return;
  }
  auto handle = caf::actor_cast<sim_git_host_actor>(self);
  auto from = sources[next];
  st.config.fetch(from, ref, commits, [=](bool ok) mutable {
    // Runs in the world, outside any actor: only a message reaches the host.
    if (ok)
      caf::anon_send(handle, atom::git_found::value, GitDataArrived{ref, {}, {}, commits, {}});
    else
      caf::anon_send(handle, atom::git_fetch::value, ref, std::uint64_t{next + 1});
  });
  trace(self, "fetch " + ref.identifier + " from node " + std::to_string(from));
}

/// Commits the waiting states of `ref` name that are not here.
std::vector<std::string> missing_commits(Self self, const RepositoryRef& ref) {
  auto& st = self->state;
  std::vector<std::string> out;
  auto repo = st.config.disk->repositories.find(ref);
  auto waiting = st.waiting.find(ref);
  if (repo == st.config.disk->repositories.end() || waiting == st.waiting.end()) return out;
  for (const auto& id : waiting->second) {
    auto state = repo->second.states.find(id);
    if (state == repo->second.states.end()) continue;
    for (auto& tip : state_tips(*state->second))
      if (!repo->second.commits.count(tip) && std::find(out.begin(), out.end(), tip) == out.end())
        out.push_back(tip);
  }
  return out;
}

void start_fetch(Self self, const RepositoryRef& ref, std::size_t first_source) {
  auto& st = self->state;
  auto repo = st.config.disk->repositories.find(ref);
  auto commits = missing_commits(self, ref);
  if (repo == st.config.disk->repositories.end() || commits.empty()) {
    st.fetching.erase(ref);
    return;
  }
  st.fetching.insert(ref);
  fetch_from(self, ref, std::move(commits), fetch_sources(st.config, repo->second), first_source);
}

void on_state(Self self, const StateStored& told) {
  auto& st = self->state;
  auto ref = state_repository(*told.state);
  auto repo = st.config.disk->repositories.find(ref);
  if (repo == st.config.disk->repositories.end()) return;
  repo->second.states[told.state->id] = told.state;
  st.waiting[ref].insert(told.state->id);
  trace(self, "told state " + short_id(told.state->id) + " of " + ref.identifier);
  release_ready(self, ref, {});
  if (!st.waiting.count(ref) || !st.waiting[ref].count(told.state->id)) return;
  // Missing commits: its submitter hears at once that it is held, as from the real git hosting
  // (a held state's answer waits for this word, AcceptanceConfig::state_answer_wait).
  for (const auto& subscriber : st.subscribers)
    self->send(subscriber, GitDataArrived{ref, {}, {}, {}, {told.state->id}});
  if (!st.fetching.count(ref))
    self->send(caf::actor_cast<sim_git_host_actor>(self), atom::tick::value, ref);
}

void on_fetch_due(Self self, const RepositoryRef& ref) {
  auto& st = self->state;
  if (!st.waiting.count(ref)) return;
  if (!st.fetching.count(ref)) start_fetch(self, ref, 0);
  self->delayed_send(caf::actor_cast<sim_git_host_actor>(self), st.config.fetch_retry,
                     atom::tick::value, ref);
}

void on_data(Self self, const GitDataArrived& arrived) {
  auto& st = self->state;
  st.fetching.erase(arrived.repository);
  auto repo = st.config.disk->repositories.find(arrived.repository);
  if (repo == st.config.disk->repositories.end()) return;
  repo->second.commits.insert(arrived.commits.begin(), arrived.commits.end());
  release_ready(self, arrived.repository, arrived.commits);
}

void on_announced(Self self, const RepoAnnounced& announced) {
  const auto& ev = *announced.announcement;
  auto ref = RepositoryRef{ev.pubkey, std::string(ev.d_tag())};
  self->state.config.disk->repositories[ref].announcement = announced.announcement;
  trace(self, "repository " + ref.identifier + " created");
}

void on_withdrawn(Self self, const RepoWithdrawn& withdrawn) {
  const auto& ev = *withdrawn.announcement;
  auto ref = RepositoryRef{ev.pubkey, std::string(ev.d_tag())};
  self->state.config.disk->repositories.erase(ref);
  self->state.waiting.erase(ref);
  trace(self, "repository " + ref.identifier + " removed");
}

bool repo_exists(Self self, const std::string& identifier) {
  for (const auto& [ref, repo] : self->state.config.disk->repositories)
    if (ref.identifier == identifier) return true;
  return false;
}

sim_git_host_actor::behavior_type sim_git_host(Self self, SimGitHostConfig config) {
  self->state.config = std::move(config);
  return {
      [=](const RepoAnnounced& announced) { on_announced(self, announced); },
      [=](const RepoWithdrawn& withdrawn) { on_withdrawn(self, withdrawn); },
      [=](const RepoExists& asked) { return repo_exists(self, asked.identifier); },
      [=](const ReposHosted& asked) {
        std::vector<RepositoryRef> out;
        for (const auto& ref : asked.repositories)
          if (self->state.config.disk->repositories.count(ref)) out.push_back(ref);
        return out;
      },
      // The simulator runs no archive rules.
      [=](const ArchiveRoom&) { return std::string{}; },
      [=](const StateStored& told) { on_state(self, told); },
      // The schedule draws no pull requests.
      [=](const PrHeld&) {},
      [=](const PrCommitsCheck&) {},
      [=](const PrRefChange&) {},
      [=](const PrRefsDelete&) { return std::vector<PrRefPushed>{}; },
      // GRASP-06 is off in the simulator: no submission area, nothing to mirror.
      [=](const PrMirror&) {},
      [=](atom::git_pushed, const GitDataArrived& pushed) { on_data(self, pushed); },
      [=](atom::git_found, const GitDataArrived& found) { on_data(self, found); },
      [=](atom::git_fetch, const RepositoryRef&, const std::string&,
          const std::vector<std::string>&, const std::string&) {},
      [=](atom::git_maintain) {},
      [=](atom::git_maintained, bool) {},
      [=](atom::git_recheck) {},
      [=](atom::git_deleted, std::uint64_t, const std::vector<PrRefPushed>&) {},
      [=](atom::feed_subscribe, git_data_feed_actor subscriber) {
        self->state.subscribers.push_back(std::move(subscriber));
      },
      [=](atom::shutdown) { return true; },
      [=](atom::tick, const RepositoryRef& ref) { on_fetch_due(self, ref); },
      // A source did not have the commits (or was unreachable): ask the next one.
      [=](atom::git_fetch, const RepositoryRef& ref, std::uint64_t next_source) {
        start_fetch(self, ref, next_source);
      },
  };
}

}  // namespace

std::vector<std::string> state_tips(const nostr::Event& state) {
  std::vector<std::string> out;
  for (const auto& tag : state.tags)
    if (tag.size() >= 2 && tag[0].rfind("refs/", 0) == 0 && is_commit_id(tag[1]))
      out.push_back(tag[1]);
  return out;
}

RepositoryRef state_repository(const nostr::Event& state) {
  return {state.pubkey, std::string(state.d_tag())};
}

std::optional<std::size_t> clone_url_node(const std::string& url, std::size_t nodes) {
  for (std::size_t i = 0; i < nodes; ++i)
    if (url.rfind("https://node" + std::to_string(i) + ".sim/", 0) == 0) return i;
  return std::nullopt;
}

sim_git_host_actor spawn_sim_git_host(caf::actor_system& system, SimGitHostConfig config) {
  return system.spawn(sim_git_host, std::move(config));
}

}  // namespace graspd::sim
