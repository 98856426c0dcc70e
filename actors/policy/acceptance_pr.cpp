// The acceptance actor's pull requests in purgatory (docs/spec/git-hosting.md §6.1–6.2, §7, §8.1):
// a PR event (kind 1618/1619) whose `c` commit is in no repository here is held until it arrives,
// and a `refs/nostr/<id>` ref pushed before its PR event is known keeps a placeholder that deletes
// the ref unless a PR event with that id and commit is accepted in time. The rules are pure
// (store/git/purgatory.*, store/git/pull_requests.*); git runs in git hosting (git_host_actor),
// which answers with GitDataArrived. The placeholders' records go to the store writer.
#include <algorithm>
#include <set>

#include "actors/policy/acceptance_steps.hpp"
#include "messages/nostr/nip34.hpp"
#include "runtime/ops/log.hpp"
#include "store/lmdb/store_view.hpp"

namespace graspd::acceptance_steps {

namespace {

void change_ref(Self self, PrRefChange::Action action, const RepositoryRef& repository,
                const nostr::EventId& id, const std::string& commit) {
  auto& git = self->state.config.git;
  if (git) self->send(git, PrRefChange{action, repository, id, commit});
}

void delete_ref(Self self, const RepositoryRef& repository, const nostr::EventId& id,
                const std::string& commit) {
  change_ref(self, PrRefChange::Action::remove, repository, id, commit);
}

/// Writes the placeholder record of `id` again (or erases it when none is left).
void persist_placeholders(Self self, const nostr::EventId& id) {
  const auto& list = self->state.placeholders->of(id);
  HeldRecordChanges changes;
  if (list.empty())
    changes.erases.push_back(id);
  else
    changes.puts.emplace_back(id, store::encode_placeholders(list));
  persist(self, std::move(changes));
}

/// Asks git hosting which of the repositories `ev` `a`-tags exist here, then calls `then` with
/// them (none without git hosting). Awaited when `await` (an event being judged: the decision
/// order holds), else answered later.
template <class Then>
void hosted_repositories(Self self, const nostr::Event& ev, bool await, Then then) {
  auto& git = self->state.config.git;
  if (!git) return then(std::vector<RepositoryRef>{});
  auto request = self->request(git, caf::infinite, ReposHosted{policy::pr_repositories(ev)});
  auto on_answer = [then](std::vector<RepositoryRef>& hosted) mutable { then(std::move(hosted)); };
  auto on_error = [then](caf::error&) mutable { then(std::vector<RepositoryRef>{}); };
  if (await)
    request.await(on_answer, on_error);
  else
    request.then(on_answer, on_error);
}

/// A PR event with this id was accepted: its placeholders end. A ref naming its commit stays
/// (true: the commit is here); one naming another commit is deleted (§7.4).
bool settle_placeholders(Self self, const nostr::EventId& id, const std::optional<std::string>& c) {
  auto& st = self->state;
  auto taken = st.placeholders->take(id);
  if (taken.empty()) return false;
  bool matched = false;
  for (const auto& p : taken) {
    if (c && p.commit == *c)
      matched = true;
    else
      delete_ref(self, p.repository, id, p.commit);
  }
  HeldRecordChanges changes;
  changes.erases.push_back(id);
  persist(self, std::move(changes));
  return matched;
}

/// Stores released PR events (they were judged when they arrived); nobody waits for the answers.
void store_released(Self self, const std::vector<nostr::EventPtr>& released) {
  if (released.empty()) return;
  for (const auto& ev : released) write_released(self, ev, [](AcceptanceVerdict) {});
  publish_purgatory(self);
}

/// A pushed refs/nostr/<id> (§7): releases the held PR event naming that commit, deletes a ref that
/// names another one (the push raced the event), or keeps a placeholder for an unknown id.
void on_pr_ref(Self self, const RepositoryRef& repository, const PrRefPushed& ref,
               std::vector<nostr::EventPtr>& released) {
  auto& st = self->state;
  if (st.store->contains(ref.id)) return;  // the push was checked against it (§7.2)
  if (const auto* held = st.purgatory->find(ref.id)) {
    if (held->kind != policy::HeldKind::pull_request) return;
    if (policy::pr_commit(*held->event) == ref.commit)
      released.push_back(st.purgatory->release_pull_request(ref.id));
    else
      delete_ref(self, repository, ref.id, ref.commit);
    return;
  }
  if (st.placeholders->put(ref.id, repository, ref.commit, st.config.unix_now()) ==
      policy::PrPlaceholders::Put::full) {
    log::warn(log::components::acceptance, "too many refs/nostr placeholders: refs/nostr/",
              nostr::to_hex(ref.id), " is deleted again");
    return delete_ref(self, repository, ref.id, ref.commit);
  }
  persist_placeholders(self, ref.id);
}

/// Holds a PR event whose `c` commit is not here yet in the repositories it `a`-tags here, or
/// stores it, and answers.
void hold_in(Self self, Submission submission, policy::Decision decision,
             std::vector<RepositoryRef> repositories) {
  auto& st = self->state;
  const auto& ev = submission.event;
  auto commit = policy::pr_commit(*ev);
  // Nothing here could ever release it: stored as without purgatory (as a state, decision 6).
  if (repositories.empty()) {
    settle_placeholders(self, ev->id, commit);
    return store_accepted(self, std::move(submission), std::move(decision));
  }
  if (!commit)
    return submission.reply(
        AcceptanceVerdict{false, std::string(policy::pr_without_commit_message), {}});
  if (settle_placeholders(self, ev->id, commit))  // its ref names the commit
    return store_accepted(self, std::move(submission), std::move(decision));
  auto result = st.purgatory->hold(ev, policy::HeldKind::pull_request, st.config.unix_now(),
                                   submission.source);
  if (auto refusal = hold_refusal(self, result.outcome))
    return submission.reply(std::move(*refusal));
  record_hold(self, submission, result,
              [self, submission, commit = *commit, repositories = std::move(repositories)] {
                auto& git = self->state.config.git;
                if (git) self->send(git, PrHeld{submission.event, repositories});
                publish_purgatory(self);
                submission.reply(
                    AcceptanceVerdict{true, policy::pr_held_message(commit), WriteOutcome::held});
              });
}

}  // namespace

void hold_pull_request(Self self, Submission submission, policy::Decision decision) {
  auto event = submission.event;
  hosted_repositories(self, *event, true,
                      [self, submission = std::move(submission),
                       decision = std::move(decision)](std::vector<RepositoryRef> hosted) mutable {
                        hold_in(self, std::move(submission), std::move(decision),
                                std::move(hosted));
                      });
}

void on_pull_request_git_data(Self self, const GitDataArrived& arrived) {
  auto& st = self->state;
  const auto& repository = arrived.repository;
  std::vector<nostr::EventPtr> released;
  for (const auto& ref : arrived.pr_refs) on_pr_ref(self, repository, ref, released);
  std::set<std::string> found(arrived.commits.begin(), arrived.commits.end());
  std::set<std::string> look_for;
  for (auto& ev : st.purgatory->pull_requests_of(repository)) {
    auto commit = policy::pr_commit(*ev);
    if (!commit) continue;
    if (!found.count(*commit)) {
      look_for.insert(*commit);
      continue;
    }
    released.push_back(st.purgatory->release_pull_request(ev->id));
    // Found by id (a fetch, a branch): refs/nostr/<id> keeps it fetchable here.
    change_ref(self, PrRefChange::Action::set, repository, ev->id, *commit);
  }
  // A report of found commits is itself the answer to a look; anything else may have brought them.
  if (arrived.commits.empty() && !look_for.empty() && st.config.git)
    self->send(st.config.git, PrCommitsCheck{repository, {look_for.begin(), look_for.end()}});
  store_released(self, released);
}

void expire_placeholders(Self self, std::int64_t now) {
  auto& st = self->state;
  auto expired = st.placeholders->expire(now);
  std::set<nostr::EventId> ids;
  for (const auto& p : expired) {
    delete_ref(self, p.repository, p.id, p.commit);
    ids.insert(p.id);
  }
  for (const auto& id : ids) persist_placeholders(self, id);
}

void start_pull_requests(Self self, std::int64_t hold_seconds) {
  auto& st = self->state;
  st.placeholders = std::make_unique<policy::PrPlaceholders>(hold_seconds);
}

void resume_pull_requests(Self self) {
  auto& st = self->state;
  nostr::Filter prs;
  prs.kinds = std::vector<std::uint32_t>{nostr::nip34::kind::pull_request,
                                         nostr::nip34::kind::pull_request_update};
  std::vector<nostr::EventPtr> held;
  st.purgatory->scan({prs}, [&](const nostr::Event& ev) {
    held.push_back(st.purgatory->find(ev.id)->event);
    return true;
  });
  for (auto& ev : held)
    hosted_repositories(self, *ev, false, [self, ev](std::vector<RepositoryRef> hosted) {
      self->send(self->state.config.git, PrHeld{ev, std::move(hosted)});
    });
}

}  // namespace graspd::acceptance_steps
