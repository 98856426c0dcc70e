#include <utility>  // before Asio, see toolchain.md §1

#include "runtime/boot/wire_git.hpp"

#include <set>

#include "messages/nostr/nip34.hpp"
#include "runtime/git/git_http.hpp"
#include "runtime/git/git_pr_refs.hpp"
#include "runtime/git/git_repository.hpp"
#include "runtime/git/git_state_sync.hpp"
#include "runtime/net/http_server.hpp"
#include "runtime/ops/log.hpp"
#include "runtime/ops/metrics.hpp"
#include "runtime/net/nip11.hpp"
#include "store/git/git_push.hpp"
#include "store/lmdb/store_view.hpp"

namespace graspd::boot {

namespace {

constexpr std::string_view component = "git";

runtime::git::GitHttpOptions git_http_options(const runtime::Config& config) {
  runtime::git::GitHttpOptions out;
  out.max_body_bytes = config.git_max_body_bytes;
  out.process_timeout = std::chrono::seconds(config.git_timeout_secs);
  out.idle_timeout = std::chrono::seconds(config.git_idle_timeout_secs);
  out.max_processes = config.git_max_processes;
  out.queue_wait = std::chrono::seconds(config.git_queue_secs);
  out.domain = config.domain.text;
  out.nip11 = runtime::build_nip11_document(config);
  return out;
}

/// The `refs/nostr/<id>` updates of a push (a push never deletes one, §7).
std::vector<PrRefPushed> pr_refs_pushed(const std::vector<git::RefUpdate>& updates) {
  std::vector<PrRefPushed> out;
  for (const auto& u : updates) {
    PrRefPushed ref;
    if (u.ref.rfind("refs/nostr/", 0) != 0 || u.deletes() || u.old_id == u.new_id ||
        !nostr::from_hex(std::string_view(u.ref).substr(11), ref.id))
      continue;
    ref.commit = u.new_id;
    out.push_back(std::move(ref));
  }
  return out;
}

/// Every stored announcement of a repository named `identifier`, whoever its owner.
nostr::Filter announcements_of(const std::string& identifier) {
  nostr::Filter f;
  f.kinds = std::vector<std::uint32_t>{nostr::nip34::kind::repo_announcement};
  f.tags['d'] = {identifier};
  f.normalize();
  return f;
}

}  // namespace

WiredGit wire_git(const Services& services, const WiredStore& store) {
  runtime::git::Repositories repositories{services.config.git_data_path};
  repositories.prepare();
  // Held (purgatory) events count for push authorisation and the state applier (§5.11).
  auto view = std::make_shared<store::StoreAndHeldView>(
      std::shared_ptr<const store::EventStore>(store.store));
  auto arrivals = std::make_shared<GitArrivals>();
  // The state applier is built after the handler; a push reaches it through this.
  auto applier = std::make_shared<std::weak_ptr<runtime::git::GitStateSync>>();
  runtime::git::GitHttpHooks hooks;
  hooks.pushed = [applier, arrivals](const runtime::git::RepositoryName& name,
                                     const std::vector<git::RefUpdate>& updates) {
    // An authorised push restarts holds; its refs/nostr refs release or await PR events.
    arrivals->report({name.owner, name.identifier, {}, pr_refs_pushed(updates), {}});
    if (auto sync = applier->lock()) sync->on_pushed(name);
  };
  hooks.authority = [view](const nostr::Pubkey& owner, const std::string& identifier,
                           const std::vector<std::string>& pr_ids) {
    return git::push_authority(*view, owner, identifier, pr_ids);
  };
  auto http =
      std::make_shared<runtime::git::GitHttp>(repositories, git_http_options(services.config),
                                              std::move(hooks), &services.metrics.registry());
  services.http.set_handoff_handler(http->predicate(), http->handler());
  log::info(component, "git repositories in ", repositories.root().string(), " (git ",
            http->git_binary().empty() ? std::string("not found") : http->git_binary(), ")");
  runtime::git::GitStateSyncOptions sync_options;
  sync_options.service = services.config.domain.address;
  sync_options.allow_private_addresses = services.config.sync_allow_private_addresses;
  sync_options.fetch_enabled = services.config.git_fetch_enabled;
  sync_options.fetch_delay = std::chrono::seconds(services.config.git_fetch_delay_secs);
  sync_options.fetch_timeout = std::chrono::seconds(services.config.git_fetch_timeout_secs);
  sync_options.max_fetch_bytes = services.config.git_max_body_bytes;
  sync_options.git_binary = http->git_binary();
  sync_options.limits.max_running = services.config.git_fetch_max_running;
  sync_options.limits.per_host_running = services.config.git_fetch_max_per_host;
  sync_options.limits.per_host_per_minute = services.config.git_fetch_per_host_per_minute;
  sync_options.limits.host_skip = std::chrono::seconds(services.config.git_fetch_host_skip_secs);
  sync_options.give_up_after = std::chrono::seconds(services.config.purgatory_hold_secs);
  runtime::git::GitStateSyncHooks sync_hooks;
  sync_hooks.newest_state = [view](const nostr::Pubkey& owner, const std::string& identifier) {
    return git::push_authority(*view, owner, identifier, {}).state;
  };
  sync_hooks.owners = [view](const std::string& identifier) {
    std::set<nostr::Pubkey> authors;
    view->scan({announcements_of(identifier)}, [&](const nostr::Event& announcement) {
      authors.insert(announcement.pubkey);
      return authors.size() < 1024;
    });
    return std::vector<nostr::Pubkey>(authors.begin(), authors.end());
  };
  sync_hooks.clone_urls = [view](const std::string& identifier) {
    std::vector<std::string> urls;
    view->scan({announcements_of(identifier)}, [&](const nostr::Event& announcement) {
      for (const auto& tag : announcement.tags)
        if (!tag.empty() && tag[0] == "clone")
          for (std::size_t i = 1; i < tag.size() && urls.size() < 64; ++i) urls.push_back(tag[i]);
      return urls.size() < 64;
    });
    return urls;
  };
  sync_hooks.objects_present = [arrivals](const runtime::git::RepositoryName& name,
                                          const nostr::EventId& state) {
    arrivals->report({name.owner, name.identifier, {state}, {}, {}});
  };
  sync_hooks.commit_present = [arrivals](const runtime::git::RepositoryName& name,
                                         const std::string& commit) {
    arrivals->report({name.owner, name.identifier, {}, {}, {commit}});
  };
  std::weak_ptr<runtime::git::GitHttp> weak = http;
  sync_hooks.try_lock = [weak](const std::string& path) {
    auto http = weak.lock();
    return http && http->try_lock_repository(path);
  };
  sync_hooks.unlock = [weak](const std::string& path) {
    if (auto http = weak.lock()) http->unlock_repository(path);
  };
  auto state_sync = std::make_shared<runtime::git::GitStateSync>(
      services.io, repositories, std::move(sync_options), std::move(sync_hooks),
      &services.metrics.registry());
  *applier = state_sync;
  auto pr_refs =
      std::make_shared<runtime::git::GitPrRefs>(services.io, repositories, http->git_binary());
  return {http,       std::make_shared<const runtime::git::Repositories>(repositories),
          state_sync, pr_refs,
          arrivals,   view};
}

std::function<void(nostr::EventPtr)> state_listener(const WiredGit& wired) {
  return [sync = wired.state_sync](nostr::EventPtr state) { sync->on_state(std::move(state)); };
}

std::function<void(const nostr::Event&)> repository_creator(const WiredGit& wired) {
  return [repositories = wired.repositories](const nostr::Event& announcement) {
    runtime::git::RepositoryName name{announcement.pubkey, std::string(announcement.d_tag())};
    if (!runtime::git::is_valid_identifier(name.identifier)) return;
    std::string error;
    if (!repositories->create(name, &error))
      log::error(component, "cannot create repository ", name.identifier, ": ", error);
  };
}

std::function<bool(std::string_view)> repository_checker(const WiredGit& wired) {
  return [repositories = wired.repositories, view = wired.view](std::string_view identifier) {
    if (!runtime::git::is_valid_identifier(identifier)) return false;
    bool found = false;
    view->scan({announcements_of(std::string(identifier))}, [&](const nostr::Event& ev) {
      found = repositories->exists({ev.pubkey, std::string(identifier)});
      return !found;
    });
    return found;
  };
}

std::function<void(const nostr::Event&)> repository_remover(const WiredGit& wired) {
  return [repositories = wired.repositories](const nostr::Event& announcement) {
    runtime::git::RepositoryName name{announcement.pubkey, std::string(announcement.d_tag())};
    if (!runtime::git::is_valid_identifier(name.identifier)) return;
    if (!repositories->remove(name))
      log::error(component, "cannot remove the repository of expired ", name.identifier);
  };
}

void stop(const WiredGit& wired) {
  if (wired.state_sync) wired.state_sync->stop();
  if (wired.pr_refs) wired.pr_refs->stop();
  if (wired.http) wired.http->stop();
}

}  // namespace graspd::boot
