// Git hosting: the repositories under NGIT_GIT_DATA_PATH and the Smart HTTP handler the listener
// hands `/<npub>/...` requests to. Push authorisation reads the event store directly (LMDB read
// transactions are safe on network threads); repositories are created by the acceptance actor
// through `create_repository` before it answers the announcement's OK.
#pragma once

#include <functional>
#include <memory>

#include "messages/nostr/event.hpp"
#include "runtime/boot/services.hpp"
#include "runtime/boot/wire_store.hpp"

namespace graspd::runtime::git {
class GitHttp;
class GitStateSync;
class Repositories;
}  // namespace graspd::runtime::git

namespace graspd::boot {

struct WiredGit {
  std::shared_ptr<runtime::git::GitHttp> http;
  std::shared_ptr<const runtime::git::Repositories> repositories;
  std::shared_ptr<runtime::git::GitStateSync> state_sync;
};

/// Creates the data directory and installs the handler on the listener (before it serves).
WiredGit wire_git(const Services& services, const WiredStore& store);

/// For AcceptanceConfig: creates the repository of an accepted announcement that lists this
/// service (§4.1); failures are logged.
std::function<void(const nostr::Event&)> repository_creator(const WiredGit& wired);

/// For AcceptanceConfig: hands every stored state event to the state applier.
std::function<void(nostr::EventPtr)> state_listener(const WiredGit& wired);

/// Kills running git processes and closes their connections.
void stop(const WiredGit& wired);

}  // namespace graspd::boot
