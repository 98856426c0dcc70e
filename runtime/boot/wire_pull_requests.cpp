// Git hosting's side of held pull requests (git-hosting.md §6–§8): the PullRequestHooks the
// acceptance actor calls. Each only posts work to GitPrRefs (commit checks, refs/nostr refs) or the
// state applier (fetches by id); what they find comes back through GitArrivals as GitDataArrived.
#include <utility>  // before Asio, see toolchain.md §1

#include "runtime/boot/wire_git.hpp"
#include "runtime/git/git_pr_refs.hpp"
#include "runtime/git/git_repository.hpp"
#include "runtime/git/git_state_sync.hpp"
#include "store/git/pull_requests.hpp"

namespace graspd::boot {

namespace {

runtime::git::RepositoryName name_of(const policy::RepositoryRef& repository) {
  return {repository.owner, repository.identifier};
}

/// The PR event's own `clone` URLs (§8.1), at most 16; the state applier checks each.
std::vector<std::string> pr_clone_urls(const nostr::Event& pr) {
  std::vector<std::string> urls;
  for (const auto& tag : pr.tags)
    if (!tag.empty() && tag[0] == "clone")
      for (std::size_t i = 1; i < tag.size() && urls.size() < 16; ++i) urls.push_back(tag[i]);
  return urls;
}

}  // namespace

PullRequestHooks pull_request_hooks(const WiredGit& wired) {
  PullRequestHooks hooks;
  auto repositories = wired.repositories;
  auto pr_refs = wired.pr_refs;
  auto arrivals = wired.arrivals;
  auto state_sync = wired.state_sync;
  hooks.repository_exists = [repositories](const policy::RepositoryRef& repository) {
    return runtime::git::is_valid_identifier(repository.identifier) &&
           repositories->exists(name_of(repository));
  };
  // Looked for at once (a push may have brought it); where it is missing, fetched after the delay.
  hooks.held = [pr_refs, arrivals, state_sync](nostr::EventPtr pr,
                                               std::vector<policy::RepositoryRef> where) {
    auto commit = policy::pr_commit(*pr);
    if (!commit) return;
    for (const auto& repository : where) {
      auto name = name_of(repository);
      pr_refs->check(name, {*commit},
                     [arrivals, state_sync, name, commit = *commit,
                      urls = pr_clone_urls(*pr)](std::vector<std::string> present) mutable {
                       if (!present.empty())
                         return arrivals->report({name.owner, name.identifier, {}, {}, present});
                       state_sync->want_commit(name, commit, std::move(urls));
                     });
    }
  };
  hooks.check = [pr_refs, arrivals](const policy::RepositoryRef& repository,
                                    std::vector<std::string> commits) {
    auto name = name_of(repository);
    pr_refs->check(name, std::move(commits), [arrivals, name](std::vector<std::string> present) {
      if (!present.empty())
        arrivals->report({name.owner, name.identifier, {}, {}, std::move(present)});
    });
  };
  hooks.set_ref = [pr_refs](const policy::RepositoryRef& repository, const nostr::EventId& id,
                            const std::string& commit) {
    pr_refs->set_ref(name_of(repository), nostr::to_hex(id), commit);
  };
  hooks.delete_ref = [pr_refs](const policy::RepositoryRef& repository, const nostr::EventId& id,
                               const std::string& commit) {
    pr_refs->delete_ref(name_of(repository), nostr::to_hex(id), commit);
  };
  return hooks;
}

}  // namespace graspd::boot
