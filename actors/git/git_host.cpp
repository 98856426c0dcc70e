#include <utility>  // before Asio, see docs/toolchain.md §1

#include "actors/git/git_host.hpp"

#include <algorithm>
#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/send.hpp>
#include <caf/spawn_options.hpp>

#include "messages/nostr/nip19.hpp"
#include "messages/nostr/nip34.hpp"
#include "runtime/ops/log.hpp"
#include "store/git/announcement_sources.hpp"
#include "store/git/pull_requests.hpp"

namespace graspd {

namespace {

using GitHostSelf = git_host_actor::stateful_pointer<GitHostState>;

/// A held pull request's own `clone` URLs (§8.1) tried before the announcements' ones.
constexpr std::size_t max_pr_clone_urls = 16;

/// Hands git data that arrived to every subscriber.
void publish(GitHostSelf self, const GitDataArrived& arrived) {
  for (const auto& subscriber : self->state.subscribers) self->send(subscriber, arrived);
}

/// What a git process found, reported from an io thread: back into this actor, as a message.
void report_found(const git_host_actor& host, GitDataArrived arrived) {
  caf::anon_send(host, atom::git_found::value, std::move(arrived));
}

/// The repository's URL on each cluster peer (NGIT_SYNC_PEERS, in the list's order), then
/// `others`: within a cluster, the peer that took the push has the objects before any clone URL.
std::vector<std::string> peers_first(const std::vector<std::string>& peer_bases,
                                     const RepositoryRef& repository,
                                     std::vector<std::string> others) {
  if (peer_bases.empty()) return others;
  std::vector<std::string> out;
  const auto path =
      "/" + nostr::encode_npub(repository.owner) + "/" + repository.identifier + ".git";
  for (const auto& base : peer_bases) out.push_back(base + path);
  out.insert(out.end(), std::make_move_iterator(others.begin()),
             std::make_move_iterator(others.end()));
  return out;
}

runtime::git::GitStateSyncHooks state_sync_hooks(GitHostSelf self, const GitHostConfig& config) {
  runtime::git::GitStateSyncHooks hooks;
  auto view = config.view;
  hooks.newest_state = [view](const nostr::Pubkey& owner, const std::string& identifier) {
    return git::push_authority(*view, owner, identifier, {}).state;
  };
  hooks.owners = [view](const std::string& identifier) {
    return git::announcement_owners(*view, identifier);
  };
  hooks.clone_urls = [view, per_other = config.state_sync.urls_per_other_owner,
                      peers = config.state_sync.peer_git_bases](const RepositoryRef& repository) {
    return peers_first(
        peers, repository,
        git::repository_clone_urls(*view, repository.owner, repository.identifier, per_other));
  };
  auto host = caf::actor_cast<git_host_actor>(self);
  hooks.objects_present = [host](const RepositoryRef& repository, const nostr::EventId& state) {
    report_found(host, GitDataArrived{repository, {state}, {}, {}, {}});
  };
  hooks.objects_missing = [host](const RepositoryRef& repository, const nostr::EventId& state) {
    report_found(host, GitDataArrived{repository, {}, {}, {}, {state}});
  };
  hooks.commit_present = [host](const RepositoryRef& repository, const std::string& commit) {
    report_found(host, GitDataArrived{repository, {}, {}, {commit}, {}});
  };
  hooks.may_fetch = [gate = self->state.archive_gate](const RepositoryRef& repository) {
    std::lock_guard lock{gate->mutex};
    return gate->full.count(repository) == 0;
  };
  auto locks = config.locks;
  hooks.try_lock = [locks](const std::string& path) { return locks->try_lock(path); };
  hooks.unlock = [locks](const std::string& path) { locks->unlock(path); };
  hooks.is_locked = [locks](const std::string& path) { return locks->is_locked(path); };
  return hooks;
}

// ---------------------------------------------------------------- archive storage caps

/// Tells the state applier which archives are at a cap (no more fetches into them).
void refresh_archive_gate(GitHostSelf self) {
  auto& st = self->state;
  auto full = st.archive_usage->full();
  std::lock_guard lock{st.archive_gate->mutex};
  st.archive_gate->full = std::move(full);
}

/// Measures archive `repository` again (it was created, or git data arrived in it).
void measure_archive(GitHostSelf self, const RepositoryRef& repository) {
  auto& st = self->state;
  if (!st.archive_usage || !st.archive_usage->contains(repository)) return;
  st.archive_usage->set(repository, st.repositories->bytes_of(repository));
  refresh_archive_gate(self);
}

/// The archives on disk at start, measured (one walk of each).
void start_archive_usage(GitHostSelf self, const GitHostConfig& config) {
  auto& st = self->state;
  if (!config.policy.archive.any_source()) return;
  st.archive_usage.emplace(config.archive_caps);
  for (const auto& repository : st.repositories->hosted())
    if (git::archived_repository(*st.view, config.policy, repository.owner, repository.identifier))
      st.archive_usage->set(repository, st.repositories->bytes_of(repository));
  refresh_archive_gate(self);
}

std::string archive_room(GitHostSelf self, const RepositoryRef& repository) {
  auto& st = self->state;
  if (!st.archive_usage || st.repositories->exists(repository)) return {};
  return st.archive_usage->refusal_of_new(repository);
}

/// Creates the repository of an announcement that lists this service (§4.1); false (logged)
/// when it cannot be.
caf::result<void> create_repository(GitHostSelf self, const nostr::Event& announcement) {
  RepositoryRef repository{announcement.pubkey, std::string(announcement.d_tag())};
  auto& st = self->state;
  auto created = st.repositories->create(repository);
  if (created && st.archive_usage && policy::is_archive(st.policy, announcement)) {
    st.archive_usage->set(repository, 0);
    measure_archive(self, repository);
  }
  if (created) return caf::unit;
  const auto& failure = created.error();
  if (failure.code != git_errc::invalid_identifier)
    log::error(log::components::git, "cannot create repository ", repository.identifier, ": ",
               failure.message);
  return make_error(failure);
}

/// Removes the repository of an announcement whose hold ended without git data (§4.7).
void remove_repository(GitHostSelf self, const nostr::Event& announcement) {
  RepositoryRef repository{announcement.pubkey, std::string(announcement.d_tag())};
  if (!runtime::git::is_valid_identifier(repository.identifier)) return;
  if (self->state.archive_usage) {
    self->state.archive_usage->remove(repository);
    refresh_archive_gate(self);
  }
  if (!self->state.repositories->remove(repository))
    log::error(log::components::git, "cannot remove the repository of expired ",
               repository.identifier);
}

/// True when a repository named `identifier` exists here for an owner whose announcement of it is
/// stored or held.
bool repository_exists(GitHostSelf self, const std::string& identifier) {
  if (!runtime::git::is_valid_identifier(identifier)) return false;
  auto& st = self->state;
  for (const auto& owner : git::announcement_owners(*st.view, identifier))
    if (st.repositories->exists({owner, identifier})) return true;
  return false;
}

std::vector<RepositoryRef> hosted_among(GitHostSelf self, std::vector<RepositoryRef> repositories) {
  std::vector<RepositoryRef> out;
  for (auto& repository : repositories)
    if (runtime::git::is_valid_identifier(repository.identifier) &&
        self->state.repositories->exists(repository))
      out.push_back(std::move(repository));
  return out;
}

/// A held pull request: its commit is looked for at once in each repository (a push may have
/// brought it); where it is missing it is fetched by id after the fetch delay (§8.1).
void look_for_pull_request(GitHostSelf self, const PrHeld& held) {
  auto commit = policy::pr_commit(*held.pull_request);
  if (!commit) return;
  auto& st = self->state;
  auto host = caf::actor_cast<git_host_actor>(self);
  auto urls =
      nostr::nip34::tag_values(*held.pull_request, nostr::nip34::tag::clone, max_pr_clone_urls);
  auto author = nostr::to_hex(held.pull_request->pubkey);
  const auto& peers = st.peer_git_bases;
  for (const auto& repository : held.repositories)
    st.pr_refs->check(
        repository, {*commit},
        [host, repository, commit = *commit, urls = peers_first(peers, repository, urls),
         author](std::vector<std::string> present) {
          if (!present.empty())
            return report_found(host, GitDataArrived{repository, {}, {}, present, {}});
          // A submission area gets git data only by its submitter's push.
          if (!repository.is_pr_submissions())
            caf::anon_send(host, atom::git_fetch::value, repository, commit, urls, author);
        });
}

void check_commits(GitHostSelf self, PrCommitsCheck& check) {
  auto host = caf::actor_cast<git_host_actor>(self);
  self->state.pr_refs->check(
      check.repository, std::move(check.commits),
      [host, repository = check.repository](std::vector<std::string> present) {
        if (!present.empty())
          report_found(host, GitDataArrived{repository, {}, {}, std::move(present), {}});
      });
}

void mirror_pull_request(GitHostSelf self, const PrMirror& mirror) {
  for (const auto& to : hosted_among(self, mirror.to))
    self->state.pr_refs->mirror(mirror.from, to, nostr::to_hex(mirror.id), mirror.commit);
}

/// Submission areas left without refs go (GRASP-06); a scan at start finds those a crash left.
void remove_empty_areas(GitHostSelf self, const std::vector<RepositoryRef>& areas) {
  auto& st = self->state;
  for (const auto& area : areas) st.pr_refs->remove_if_empty(area, st.locks);
}

void change_pr_ref(GitHostSelf self, const PrRefChange& change) {
  self->state.pr_refs->set_ref(change.repository, nostr::to_hex(change.id), change.commit);
}

/// Deletes placeholders' refs in one git transaction; answered with those left once git is done.
caf::result<std::vector<PrRefPushed>> delete_pr_refs(GitHostSelf self, PrRefsDelete& request) {
  std::vector<runtime::git::GitPrRefs::Ref> refs;
  refs.reserve(request.refs.size());
  for (const auto& ref : request.refs) refs.push_back({nostr::to_hex(ref.id), ref.commit});
  auto& st = self->state;
  auto ticket = st.next_deletion++;
  auto promise = self->make_response_promise<std::vector<PrRefPushed>>();
  st.deletions.emplace(ticket, promise);
  st.deletion_repositories.emplace(ticket, request.repository);
  auto host = caf::actor_cast<git_host_actor>(self);
  st.pr_refs->delete_refs(request.repository, std::move(refs),
                          [host, ticket](std::vector<runtime::git::GitPrRefs::Ref> left) {
                            std::vector<PrRefPushed> out;
                            for (auto& ref : left) {
                              PrRefPushed pushed{{}, std::move(ref.commit)};
                              if (nostr::from_hex(ref.id_hex, pushed.id))
                                out.push_back(std::move(pushed));
                            }
                            caf::anon_send(host, atom::git_deleted::value, ticket, std::move(out));
                          });
  return promise;
}

void deletion_done(GitHostSelf self, std::uint64_t ticket, std::vector<PrRefPushed>& left) {
  auto& st = self->state;
  if (auto repository = st.deletion_repositories.find(ticket);
      repository != st.deletion_repositories.end()) {
    if (left.empty()) remove_empty_areas(self, {repository->second});
    st.deletion_repositories.erase(repository);
  }
  auto it = self->state.deletions.find(ticket);
  if (it == self->state.deletions.end()) return;
  it->second.deliver(std::move(left));
  self->state.deletions.erase(it);
}

// ---------------------------------------------------------------- maintenance

/// Starts the next due repository's maintenance, or arms the timer for the next one due.
void maintain_next(GitHostSelf self) {
  auto& st = self->state;
  if (!st.maintenance) return;
  auto now = self->clock().now();
  if (auto repository = st.maintenance_queue->take(now)) {
    auto host = caf::actor_cast<git_host_actor>(self);
    st.maintenance->run(*repository, [host](runtime::git::MaintenanceOutcome outcome) {
      caf::anon_send(host, atom::git_maintained::value,
                     outcome == runtime::git::MaintenanceOutcome::busy);
    });
    return;
  }
  auto due = st.maintenance_queue->next_due();
  if (!due || st.maintenance_timer) return;
  st.maintenance_timer = true;
  self->delayed_send(self, std::max(*due - now, decltype(*due - now){}), atom::git_maintain::value);
}

/// `repository` was written to: it is maintained after the maintenance interval.
void queue_maintenance(GitHostSelf self, const RepositoryRef& repository) {
  auto& st = self->state;
  if (!st.maintenance) return;
  if (!st.maintenance_queue->written(repository, self->clock().now()))
    log::warn(log::components::git, "maintenance queue full: ", repository.identifier,
              " waits for its next write");
  maintain_next(self);
}

void start_maintenance(GitHostSelf self, const GitHostConfig& config) {
  if (config.maintenance_interval.count() <= 0 || !config.process_slots) return;
  auto& st = self->state;
  st.maintenance = std::make_unique<runtime::git::GitMaintenance>(
      *config.io, config.repositories, config.maintenance, config.process_slots, config.registry);
  st.maintenance_queue.emplace(config.maintenance_interval);
}

// ---------------------------------------------------------------- periodic re-check

/// Identifiers looked at per step of a re-check round, and the pause between steps: a round of
/// 10,000 identifiers takes about 52 minutes, and the state applier's lanes (1,024 identifiers)
/// never fill with it.
constexpr std::size_t recheck_batch = 16;
constexpr auto recheck_step = std::chrono::seconds(5);

/// One step of the periodic re-check (GRASP-02 wants missing git data pulled from the other clone
/// URLs at least hourly): a round starts with every identifier hosted here and hands them to the
/// state applier a batch at a time, as states that came by sync (fetched at once when missing).
void recheck_step_now(GitHostSelf self) {
  auto& st = self->state;
  if (st.recheck_pending.empty()) {
    std::set<std::string> identifiers;
    for (const auto& repository : st.repositories->hosted())
      identifiers.insert(repository.identifier);
    st.recheck_pending.assign(identifiers.begin(), identifiers.end());
  }
  for (std::size_t i = 0; i < recheck_batch && !st.recheck_pending.empty(); ++i) {
    st.state_sync->recheck(st.recheck_pending.front());
    st.recheck_pending.pop_front();
  }
  auto next = st.recheck_pending.empty() ? st.recheck_interval : recheck_step;
  self->delayed_send(self, next, atom::git_recheck::value);
}

void subscribe(GitHostSelf self, git_data_feed_actor subscriber) {
  auto& subscribers = self->state.subscribers;
  if (std::find(subscribers.begin(), subscribers.end(), subscriber) == subscribers.end())
    subscribers.push_back(std::move(subscriber));
}

}  // namespace

void GitHostState::stop() {
  if (state_sync) state_sync->stop();
  if (pr_refs) pr_refs->stop();
  if (maintenance) maintenance->stop();
}

git_host_actor::behavior_type git_host(GitHostSelf self, GitHostConfig config) {
  auto& st = self->state;
  st.repositories.emplace(config.repositories);
  st.view = config.view;
  st.peer_git_bases = config.state_sync.peer_git_bases;
  st.state_sync = std::make_unique<runtime::git::GitStateSync>(
      *config.io, config.repositories, config.state_sync, state_sync_hooks(self, config),
      config.registry);
  st.pr_refs = std::make_unique<runtime::git::GitPrRefs>(*config.io, config.repositories,
                                                         config.state_sync.git_binary);
  start_maintenance(self, config);
  st.locks = config.locks;
  st.policy = config.policy;
  start_archive_usage(self, config);
  st.recheck_interval = config.recheck_interval;
  if (st.recheck_interval.count() > 0)
    self->delayed_send(self, st.recheck_interval, atom::git_recheck::value);
  if (config.pr_submissions) remove_empty_areas(self, st.repositories->pr_submission_areas());
  return {
      [=](RepoAnnounced& announced) { return create_repository(self, *announced.announcement); },
      [=](RepoWithdrawn& withdrawn) { remove_repository(self, *withdrawn.announcement); },
      [=](RepoExists& question) { return repository_exists(self, question.identifier); },
      [=](ReposHosted& question) { return hosted_among(self, std::move(question.repositories)); },
      [=](ArchiveRoom& question) { return archive_room(self, question.repository); },
      [=](StateStored& stored) {
        self->state.state_sync->on_state(std::move(stored.state), stored.by_sync);
      },
      [=](PrHeld& held) { look_for_pull_request(self, held); },
      [=](PrCommitsCheck& check) { check_commits(self, check); },
      [=](PrRefChange& change) { change_pr_ref(self, change); },
      [=](PrRefsDelete& request) { return delete_pr_refs(self, request); },
      [=](PrMirror& mirror) { mirror_pull_request(self, mirror); },
      [=](atom::git_deleted, std::uint64_t ticket, std::vector<PrRefPushed>& left) {
        deletion_done(self, ticket, left);
      },
      [=](atom::git_pushed, GitDataArrived& pushed) {
        // An authorised push restarts holds; its refs/nostr refs release or await PR events. The
        // other repositories of its identifier follow it (§5.9); a submission area has none.
        if (!pushed.repository.is_pr_submissions())
          self->state.state_sync->on_pushed(pushed.repository);
        publish(self, pushed);
        queue_maintenance(self, pushed.repository);
      },
      [=](atom::git_found, GitDataArrived& found) {
        publish(self, found);
        queue_maintenance(self, found.repository);
        measure_archive(self, found.repository);
      },
      [=](atom::git_fetch, RepositoryRef& repository, std::string& commit,
          std::vector<std::string>& urls, std::string& author) {
        self->state.state_sync->want_commit(repository, std::move(commit), std::move(urls),
                                            std::move(author));
      },
      [=](atom::git_maintain) {
        self->state.maintenance_timer = false;
        maintain_next(self);
      },
      [=](atom::git_maintained, bool again) {
        if (self->state.maintenance_queue)
          self->state.maintenance_queue->finished(self->clock().now(), again);
        maintain_next(self);
      },
      [=](atom::git_recheck) { recheck_step_now(self); },
      [=](atom::feed_subscribe, git_data_feed_actor& subscriber) {
        subscribe(self, std::move(subscriber));
      },
      [=](atom::shutdown) {
        self->state.stop();
        return true;
      },
  };
}

git_host_actor spawn_git_host(caf::actor_system& system, GitHostConfig config) {
  return system.spawn<caf::detached>(git_host, std::move(config));
}

std::function<void(const RepositoryRef&, const std::vector<git::RefUpdate>&,
                   std::function<void()> reported)>
push_reporter(git_host_actor host) {
  return [host](const RepositoryRef& repository, const std::vector<git::RefUpdate>& updates,
                std::function<void()> reported) {
    GitDataArrived pushed{repository, {}, git::pr_refs_pushed(updates), {}, {}};
    // A one-shot requester (the network thread cannot wait): it ends with the answer.
    host->home_system().spawn([host, pushed = std::move(pushed),
                               reported = std::move(reported)](caf::event_based_actor* self) {
      auto done = [self, reported] {
        reported();
        self->quit();
      };
      self->request(host, std::chrono::seconds(10), atom::git_pushed::value, pushed)
          .then(done, [done](caf::error&) { done(); });
      return caf::behavior{[](atom::shutdown) {}};
    });
  };
}

}  // namespace graspd
