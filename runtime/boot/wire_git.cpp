#include <utility>  // before Asio, see toolchain.md §1

#include "runtime/boot/wire_git.hpp"

#include "runtime/git_http.hpp"
#include "runtime/git_repository.hpp"
#include "runtime/http_server.hpp"
#include "runtime/log.hpp"
#include "runtime/metrics.hpp"
#include "store/git_push.hpp"
#include "store/store_view.hpp"

namespace graspd::boot {

namespace {

constexpr std::string_view component = "git";

runtime::git::GitHttpOptions git_http_options(const runtime::Config& config) {
  runtime::git::GitHttpOptions out;
  out.max_body_bytes = config.git_max_body_bytes;
  out.process_timeout = std::chrono::seconds(config.git_timeout_secs);
  out.idle_timeout = std::chrono::seconds(config.git_idle_timeout_secs);
  out.max_processes = config.git_max_processes;
  out.domain = config.domain.text;
  return out;
}

}  // namespace

WiredGit wire_git(const Services& services, const WiredStore& store) {
  runtime::git::Repositories repositories{services.config.git_data_path};
  repositories.prepare();
  auto view = std::make_shared<store::EventStoreView>(
      std::shared_ptr<const store::EventStore>(store.store));
  runtime::git::GitHttpHooks hooks;
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
  return {http, std::make_shared<const runtime::git::Repositories>(repositories)};
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

void stop(const WiredGit& wired) {
  if (wired.http) wired.http->stop();
}

}  // namespace graspd::boot
