// The acceptance actor's pull requests in purgatory (git-hosting.md §6.1–6.2, §7, §8.1): a PR event
// (kind 1618/1619) whose `c` commit is in no repository here is held until it arrives, and a
// `refs/nostr/<id>` ref pushed before its PR event is known keeps a placeholder that deletes the
// ref unless a PR event with that id and commit is accepted in time. The rules are pure
// (store/purgatory.*, store/pull_requests.*); git runs in git hosting, reached through
// PullRequestHooks, and answers with GitDataArrived.
#include <algorithm>
#include <set>

#include "actors/policy/acceptance_steps.hpp"
#include "messages/nostr/nip34.hpp"
#include "runtime/ops/log.hpp"
#include "store/lmdb/store_view.hpp"

namespace graspd::acceptance_steps {

namespace {

constexpr std::string_view component = "acceptance";

/// The repositories here that `ev` `a`-tags.
std::vector<policy::RepositoryRef> hosted_repositories(const AcceptanceState& st,
                                                       const nostr::Event& ev) {
  std::vector<policy::RepositoryRef> out;
  if (!st.pull_requests.repository_exists) return out;
  for (auto& repository : policy::pr_repositories(ev))
    if (st.pull_requests.repository_exists(repository)) out.push_back(std::move(repository));
  return out;
}

void delete_ref(const AcceptanceState& st, const policy::RepositoryRef& repository,
                const nostr::EventId& id, const std::string& commit) {
  if (st.pull_requests.delete_ref) st.pull_requests.delete_ref(repository, id, commit);
}

/// Writes the placeholder record of `id` again (or erases it when none is left).
void persist_placeholders(Self self, const nostr::EventId& id) {
  const auto& list = self->state.placeholders->of(id);
  persist(self, [&](store::EventStore& s) {
    if (list.empty())
      s.erase_held(id);
    else
      s.put_held(id, store::encode_placeholders(list));
  });
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
      delete_ref(st, p.repository, id, p.commit);
  }
  persist(self, [&](store::EventStore& s) { s.erase_held(id); });
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
void on_pr_ref(Self self, const policy::RepositoryRef& repository, const PrRefPushed& ref,
               std::vector<nostr::EventPtr>& released) {
  auto& st = self->state;
  if (st.store->contains(ref.id)) return;  // the push was checked against it (§7.2)
  if (const auto* held = st.purgatory->find(ref.id)) {
    if (held->kind != policy::HeldKind::pull_request) return;
    if (policy::pr_commit(*held->event) == ref.commit)
      released.push_back(st.purgatory->release_pull_request(ref.id));
    else
      delete_ref(st, repository, ref.id, ref.commit);
    return;
  }
  if (st.placeholders->put(ref.id, repository, ref.commit, st.unix_now()) ==
      policy::PrPlaceholders::Put::full) {
    log::warn(component, "too many refs/nostr placeholders: refs/nostr/", nostr::to_hex(ref.id),
              " is deleted again");
    return delete_ref(st, repository, ref.id, ref.commit);
  }
  persist_placeholders(self, ref.id);
}

}  // namespace

bool hold_pull_request(Self self, const Submission& submission) {
  auto& st = self->state;
  const auto& ev = submission.event;
  auto commit = policy::pr_commit(*ev);
  auto repositories = hosted_repositories(st, *ev);
  // Nothing here could ever release it: stored as without purgatory (as a state, decision 6).
  if (repositories.empty()) {
    settle_placeholders(self, ev->id, commit);
    return false;
  }
  if (!commit) {
    submission.reply(AcceptanceVerdict{false, std::string(policy::pr_without_commit_message), {}});
    return true;
  }
  if (settle_placeholders(self, ev->id, commit)) return false;  // its ref names the commit
  auto result = st.purgatory->hold(ev, policy::HeldKind::pull_request, st.unix_now());
  if (result.outcome == policy::Purgatory::Hold::full) {
    submission.reply(AcceptanceVerdict{
        false, "error: too many events are waiting for git data here; try again later", {}});
    return true;
  }
  if (!record_hold(self, submission, result)) return true;
  if (st.pull_requests.held) st.pull_requests.held(ev, std::move(repositories));
  publish_purgatory(self);
  submission.reply(AcceptanceVerdict{true, policy::pr_held_message(*commit), WriteOutcome::held});
  return true;
}

void on_pull_request_git_data(Self self, const GitDataArrived& arrived) {
  auto& st = self->state;
  policy::RepositoryRef repository{arrived.owner, arrived.identifier};
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
    if (st.pull_requests.set_ref) st.pull_requests.set_ref(repository, ev->id, *commit);
  }
  // A report of found commits is itself the answer to a look; anything else may have brought them.
  if (arrived.commits.empty() && !look_for.empty() && st.pull_requests.check)
    st.pull_requests.check(repository, {look_for.begin(), look_for.end()});
  store_released(self, released);
}

void expire_placeholders(Self self, std::int64_t now) {
  auto& st = self->state;
  auto expired = st.placeholders->expire(now);
  std::set<nostr::EventId> ids;
  for (const auto& p : expired) {
    delete_ref(st, p.repository, p.id, p.commit);
    ids.insert(p.id);
  }
  for (const auto& id : ids) persist_placeholders(self, id);
}

void start_pull_requests(Self self, PullRequestHooks hooks, std::int64_t hold_seconds) {
  auto& st = self->state;
  st.pull_requests = std::move(hooks);
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
  if (!st.pull_requests.held) return;
  for (auto& ev : held) st.pull_requests.held(ev, hosted_repositories(st, *ev));
}

}  // namespace graspd::acceptance_steps
