// Git hosting: the repositories under NGIT_GIT_DATA_PATH and the Smart HTTP handler the listener
// hands `/<npub>/...` requests to. Push authorisation reads the event store plus the events held
// in purgatory (LMDB read transactions are safe on network threads); repositories are created by
// the acceptance actor through `create_repository` before it answers the announcement's OK.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <string_view>

#include "actors/policy/acceptance.hpp"
#include "messages/nostr/event.hpp"
#include "messages/relay_messages.hpp"
#include "runtime/boot/services.hpp"
#include "runtime/boot/wire_store.hpp"
#include "store/policy/acceptance_policy.hpp"

namespace graspd::runtime::git {
class GitHttp;
class GitPrRefs;
class GitStateSync;
class Repositories;
}  // namespace graspd::runtime::git

namespace graspd::boot {

/// Where git hosting reports git data arriving (pushes, a state's objects present): the
/// acceptance actor's purgatory, connected once that actor is spawned (it starts after git
/// hosting). Reports before that, or without purgatory, go nowhere. Thread-safe.
class GitArrivals {
 public:
  void connect(std::function<void(GitDataArrived)> sink) {
    std::lock_guard lock(mutex_);
    sink_ = std::move(sink);
  }
  void report(GitDataArrived arrived) const {
    std::lock_guard lock(mutex_);
    if (sink_) sink_(std::move(arrived));
  }

 private:
  mutable std::mutex mutex_;
  std::function<void(GitDataArrived)> sink_;
};

struct WiredGit {
  std::shared_ptr<runtime::git::GitHttp> http;
  std::shared_ptr<const runtime::git::Repositories> repositories;
  std::shared_ptr<runtime::git::GitStateSync> state_sync;
  /// refs/nostr refs and commit checks for held pull requests.
  std::shared_ptr<runtime::git::GitPrRefs> pr_refs;
  std::shared_ptr<GitArrivals> arrivals;
  /// The store plus held events (any thread).
  std::shared_ptr<const policy::StoreView> view;
};

/// Creates the data directory and installs the handler on the listener (before it serves).
WiredGit wire_git(const Services& services, const WiredStore& store);

/// For AcceptanceConfig: creates the repository of an accepted announcement that lists this
/// service (§4.1); failures are logged.
std::function<void(const nostr::Event&)> repository_creator(const WiredGit& wired);

/// For AcceptanceConfig: hands every stored or held state event to the state applier.
std::function<void(nostr::EventPtr)> state_listener(const WiredGit& wired);

/// For AcceptanceConfig (purgatory): whether any repository named `identifier` exists here.
std::function<bool(std::string_view)> repository_checker(const WiredGit& wired);

/// For AcceptanceConfig (purgatory): removes the repository of an announcement whose hold
/// expired (§4.7); failures are logged.
std::function<void(const nostr::Event&)> repository_remover(const WiredGit& wired);

/// For AcceptanceConfig (purgatory): git hosting's side of held pull requests and refs/nostr
/// placeholders (wire_pull_requests.cpp).
PullRequestHooks pull_request_hooks(const WiredGit& wired);

/// Kills running git processes and closes their connections.
void stop(const WiredGit& wired);

}  // namespace graspd::boot
