// The acceptance actor's pull requests in purgatory (docs/spec/git-hosting.md §6.1–6.2, §7, §8.1):
// a PR event (kind 1618/1619) whose `c` commit is in no repository here is held until it arrives,
// and a `refs/nostr/<id>` ref pushed before its PR event is known keeps a placeholder that deletes
// the ref unless a PR event with that id and commit is accepted in time. The rules are pure
// (store/git/purgatory.*, store/git/pull_requests.*); git runs in git hosting (git_host_actor),
// which answers with GitDataArrived. The placeholders' records go to the store writer.
#include <algorithm>
#include <map>
#include <memory>
#include <set>

#include "actors/policy/acceptance_steps.hpp"
#include "messages/nostr/nip34.hpp"
#include "runtime/ops/log.hpp"
#include "store/lmdb/store_view.hpp"

namespace graspd::acceptance_steps {

namespace {

/// Placeholders whose refs git is deleting at once at most, and per request (one repository's
/// `git update-ref --stdin` transaction): bounded work for git hosting, and the rest waits here
/// (in memory and in its record) until those are done, never in a queue that drops them.
constexpr std::size_t max_deletions_in_flight = 4096;
constexpr std::size_t max_deletions_per_batch = 512;
/// A batch git hosting never answers is due again after this.
constexpr auto deletion_timeout = std::chrono::seconds(300);

void set_ref(Self self, const RepositoryRef& repository, const nostr::EventId& id,
             const std::string& commit) {
  auto& git = self->state.config.git;
  if (git) self->send(git, PrRefChange{repository, id, commit});
}

/// Writes the placeholder records of `ids` again (erasing those with none left) in one change set,
/// one commit for a whole push. A PR event held or remembered under the same id owns that record
/// key: its placeholders (doomed refs only) then live in memory alone.
void persist_placeholders(Self self, const std::set<nostr::EventId>& ids) {
  auto& st = self->state;
  HeldRecordChanges changes;
  for (const auto& id : ids) {
    if (st.purgatory->contains(id) || st.purgatory->expired_recently(id)) continue;
    auto list = st.placeholders->of(id);
    if (list.empty())
      changes.erases.push_back(id);
    else
      changes.puts.emplace_back(id, store::encode_placeholders(list));
  }
  persist(self, std::move(changes));
}

void hand_out_deletions(Self self);

/// A batch of deletions ended: `left` names the refs still there (null: no answer, all due again).
void deletions_done(Self self, const std::vector<policy::Placeholder>& batch,
                    const std::vector<PrRefPushed>* left) {
  auto& st = self->state;
  std::map<nostr::EventId, std::string> still;
  if (left)
    for (const auto& ref : *left) still.emplace(ref.id, ref.commit);
  std::set<nostr::EventId> ended;
  for (const auto& p : batch) {
    auto it = still.find(p.id);
    if (!left || it != still.end())
      st.placeholders->done(p, false, left ? it->second : std::string{});
    else if (st.placeholders->done(p, true))
      ended.insert(p.id);
  }
  persist_placeholders(self, ended);
  // Progress: go on at once. Nothing gone (git failing, a busy queue): the next expiry pass.
  if (!ended.empty()) hand_out_deletions(self);
}

void send_deletions(Self self, const RepositoryRef& repository,
                    std::vector<policy::Placeholder> batch) {
  PrRefsDelete request{repository, {}};
  for (const auto& p : batch) request.refs.push_back({p.id, p.commit});
  auto shared = std::make_shared<std::vector<policy::Placeholder>>(std::move(batch));
  self->request(self->state.config.git, deletion_timeout, std::move(request))
      .then(
          [self, shared](std::vector<PrRefPushed>& left) { deletions_done(self, *shared, &left); },
          [self, shared](caf::error&) { deletions_done(self, *shared, nullptr); });
}

/// Hands the placeholders past their time to git hosting, one request per repository batch, up
/// to max_deletions_in_flight at once.
void hand_out_deletions(Self self) {
  auto& st = self->state;
  auto& placeholders = *st.placeholders;
  if (placeholders.in_flight() >= max_deletions_in_flight) return;
  auto due =
      placeholders.due(st.config.unix_now(), max_deletions_in_flight - placeholders.in_flight());
  if (due.empty()) return;
  if (!st.config.git) {  // no git hosting: no ref to delete
    std::set<nostr::EventId> ended;
    for (const auto& p : due)
      if (placeholders.done(p, true)) ended.insert(p.id);
    return persist_placeholders(self, ended);
  }
  std::map<RepositoryRef, std::vector<policy::Placeholder>> by_repository;
  for (auto& p : due) {
    auto& batch = by_repository[p.repository];
    batch.push_back(std::move(p));
    if (batch.size() < max_deletions_per_batch) continue;
    auto repository = batch.front().repository;
    send_deletions(self, repository, std::move(batch));
    batch.clear();
  }
  for (auto& [repository, batch] : by_repository)
    if (!batch.empty()) send_deletions(self, repository, std::move(batch));
}

/// The ref of `id` in `repository` naming `commit` goes: as soon as git hosting gets to it.
void doom_ref(Self self, const RepositoryRef& repository, const nostr::EventId& id,
              const std::string& commit, std::set<nostr::EventId>& touched) {
  self->state.placeholders->doom(id, repository, commit);
  touched.insert(id);
}

/// The GRASP-06 submission area a PR event names as its clone, when that is on.
std::optional<RepositoryRef> submission_area(Self self, const nostr::Event& ev) {
  const auto& policy = self->state.config.policy;
  if (!policy.pr_submissions) return std::nullopt;
  auto identifier = policy::pr_submission_identifier(ev, policy.service);
  if (!identifier) return std::nullopt;
  return RepositoryRef{ev.pubkey, std::move(*identifier),
                       nostr::nip34::RepositorySpace::pr_submissions};
}

/// GRASP-06 mirroring: a PR whose commit is in submission area `area` gets it copied, with its
/// refs/nostr/<id>, into the repositories here it `a`-tags (skipped where none exists).
void mirror_from_area(Self self, const RepositoryRef& area, const nostr::Event& pr,
                      const std::string& commit) {
  auto& st = self->state;
  if (!st.config.git || !area.is_pr_submissions()) return;
  self->send(st.config.git,
             PrMirror{area, pr.id, commit,
                      policy::pr_repositories(pr, st.config.purgatory.max_pr_repositories)});
}

/// Asks git hosting which of the repositories `ev` `a`-tags exist here, then calls `then` with
/// them (none without git hosting). Awaited when `await` (an event being judged: the decision
/// order holds), else answered later.
template <class Then>
void hosted_repositories(Self self, const nostr::Event& ev, bool await, Then then) {
  auto& git = self->state.config.git;
  if (!git) return then(std::vector<RepositoryRef>{});
  auto request = self->request(
      git, caf::infinite,
      ReposHosted{policy::pr_repositories(ev, self->state.config.purgatory.max_pr_repositories)});
  auto on_answer = [then](std::vector<RepositoryRef>& hosted) mutable { then(std::move(hosted)); };
  auto on_error = [then](caf::error&) mutable { then(std::vector<RepositoryRef>{}); };
  if (await)
    request.await(on_answer, on_error);
  else
    request.then(on_answer, on_error);
}

/// A PR event with this id was accepted: its placeholders end. A ref naming its commit stays
/// (true: the commit is here); one naming another commit is deleted (§7.4).
/// A ref pushed to a submission area is copied into the PR's repositories here (GRASP-06).
bool settle_placeholders(Self self, const nostr::Event& pr, const std::optional<std::string>& c) {
  auto& st = self->state;
  auto taken = st.placeholders->take(pr.id);
  if (taken.empty()) return false;
  bool matched = false;
  std::set<nostr::EventId> touched{pr.id};
  for (const auto& p : taken) {
    if (c && p.commit == *c) {
      matched = true;
      mirror_from_area(self, p.repository, pr, *c);
    } else {
      doom_ref(self, p.repository, pr.id, p.commit, touched);
    }
  }
  persist_placeholders(self, touched);
  hand_out_deletions(self);
  return matched;
}

/// Stores released PR events (they were judged when they arrived); nobody waits for the answers.
void store_released(Self self, const std::vector<nostr::EventPtr>& released) {
  if (released.empty()) return;
  for (const auto& ev : released) write_released(self, ev, [](AcceptanceVerdict) {});
  publish_purgatory(self);
}

/// A pushed refs/nostr/<id> (§7): releases the held PR event naming that commit, deletes a ref that
/// names another one (the push raced the event), or keeps a placeholder for an unknown id. The
/// records it changes are collected in `touched` (written once for the whole push); `full` counts
/// the refs no placeholder could be kept for.
void on_pr_ref(Self self, const RepositoryRef& repository, const PrRefPushed& ref,
               std::vector<nostr::EventPtr>& released, std::set<nostr::EventId>& touched,
               std::size_t& full) {
  auto& st = self->state;
  if (st.store->contains(ref.id)) return;  // the push was checked against it (§7.2)
  if (const auto* held = st.purgatory->find(ref.id)) {
    if (held->kind != policy::HeldKind::pull_request) return;
    if (policy::pr_commit(*held->event) == ref.commit) {
      auto pr = st.purgatory->release_pull_request(ref.id);
      mirror_from_area(self, repository, *pr, ref.commit);
      released.push_back(std::move(pr));
    } else
      doom_ref(self, repository, ref.id, ref.commit, touched);
    return;
  }
  if (st.placeholders->put(ref.id, repository, ref.commit, st.config.unix_now()) ==
      policy::PrPlaceholders::Put::full) {
    ++full;
    return doom_ref(self, repository, ref.id, ref.commit, touched);
  }
  touched.insert(ref.id);
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
    settle_placeholders(self, *ev, commit);
    return store_accepted(self, std::move(submission), std::move(decision));
  }
  if (!commit)
    return submission.reply(
        AcceptanceVerdict{false, std::string(policy::pr_without_commit_message), {}});
  if (settle_placeholders(self, *ev, commit))  // its ref names the commit
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
                        // Its submission area releases it too (a push there), made or not yet.
                        if (auto area = submission_area(self, *submission.event))
                          hosted.push_back(std::move(*area));
                        hold_in(self, std::move(submission), std::move(decision),
                                std::move(hosted));
                      });
}

void on_pull_request_git_data(Self self, const GitDataArrived& arrived) {
  auto& st = self->state;
  const auto& repository = arrived.repository;
  std::vector<nostr::EventPtr> released;
  std::set<nostr::EventId> touched;
  std::size_t full = 0;
  for (const auto& ref : arrived.pr_refs) on_pr_ref(self, repository, ref, released, touched, full);
  if (full > 0)
    log::warn(log::components::acceptance, "too many refs/nostr placeholders: ", full,
              " pushed refs/nostr refs are deleted again");
  persist_placeholders(self, touched);
  if (full > 0 || !touched.empty()) hand_out_deletions(self);
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
    set_ref(self, repository, ev->id, *commit);
  }
  // A report of found commits is itself the answer to a look; anything else may have brought them.
  if (arrived.commits.empty() && !look_for.empty() && st.config.git)
    self->send(st.config.git, PrCommitsCheck{repository, {look_for.begin(), look_for.end()}});
  store_released(self, released);
}

void mirror_submissions_into(Self self, const nostr::Event& announcement) {
  auto& st = self->state;
  if (!st.config.policy.pr_submissions || !st.config.git ||
      announcement.kind != nostr::nip34::kind::repo_announcement)
    return;
  // The newest pull requests first, a bounded number: each is one local fetch in git hosting.
  constexpr std::uint64_t max_backfilled = 256;
  nostr::Filter prs;
  prs.kinds = std::vector<std::uint32_t>{nostr::nip34::kind::pull_request,
                                         nostr::nip34::kind::pull_request_update};
  prs.tags['a'] = {nostr::address_of(announcement)};
  prs.limit = max_backfilled;
  prs.normalize();
  RepositoryRef repository{announcement.pubkey, std::string(announcement.d_tag())};
  st.view->scan({prs}, [&](const nostr::Event& pr) {
    auto area = submission_area(self, pr);
    auto commit = policy::pr_commit(pr);
    if (area && commit) self->send(st.config.git, PrMirror{*area, pr.id, *commit, {repository}});
    return true;
  });
}

void expire_placeholders(Self self) {
  hand_out_deletions(self);
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
      if (auto area = submission_area(self, *ev)) hosted.push_back(std::move(*area));
      self->send(self->state.config.git, PrHeld{ev, std::move(hosted)});
    });
}

}  // namespace graspd::acceptance_steps
