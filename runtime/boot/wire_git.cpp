#include <utility>  // before Asio, see docs/toolchain.md §1

#include "runtime/boot/wire_git.hpp"
#include "runtime/boot/wire_policy.hpp"
#include "runtime/boot/wire_sync.hpp"

#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <caf/actor_system.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/send.hpp>

#include "actors/git/git_host.hpp"
#include "runtime/git/git_http.hpp"
#include "runtime/git/git_ref_probe.hpp"
#include "runtime/git/git_repository.hpp"
#include "runtime/net/http_server.hpp"
#include "runtime/net/nip11.hpp"
#include "runtime/ops/log.hpp"
#include "runtime/ops/metrics.hpp"
#include "store/git/git_push.hpp"
#include "store/git/pr_submissions.hpp"
#include "store/lmdb/store_view.hpp"

namespace graspd::boot {

namespace {

runtime::git::GitHttpOptions git_http_options(const runtime::Config& config,
                                              std::string git_binary) {
  runtime::git::GitHttpOptions out;
  out.max_body_bytes = config.git_max_body_bytes;
  out.process_timeout = std::chrono::seconds(config.git_timeout_secs);
  out.idle_timeout = std::chrono::seconds(config.git_idle_timeout_secs);
  out.max_processes = config.git_max_processes;
  out.queue_wait = std::chrono::seconds(config.git_queue_secs);
  out.max_processes_per_ip = config.git_max_processes_per_ip;
  out.max_connections = config.git_max_connections;
  out.max_connections_per_ip = config.git_max_connections_per_ip;
  out.min_body_rate = config.git_min_body_rate;
  out.max_nostr_refs = config.git_max_nostr_refs;
  out.max_nostr_ref_bytes = config.git_max_nostr_ref_bytes;
  out.pushes_per_minute_per_ip = config.git_pushes_per_minute_per_ip;
  out.domain = config.domain.text;
  out.nip11 = runtime::build_nip11_document(config);
  out.pr_submissions = config.grasp06_enable;
  out.pr_bytes_per_hour_per_ip = config.grasp06_max_bytes_per_ip;
  out.git_binary = std::move(git_binary);
  return out;
}

runtime::git::GitStateSyncOptions state_sync_options(const runtime::Config& config,
                                                     std::string git_binary) {
  runtime::git::GitStateSyncOptions out;
  out.service = config.domain.address;
  out.allow_private_addresses = config.sync_allow_private_addresses;
  out.peer_git_bases = peer_git_bases(config);
  out.fetch_enabled = config.git_fetch_enabled;
  out.fetch_delay = std::chrono::seconds(config.git_fetch_delay_secs);
  out.fetch_timeout = std::chrono::seconds(config.git_fetch_timeout_secs);
  out.max_fetch_bytes = config.git_max_body_bytes;
  out.git_binary = std::move(git_binary);
  out.limits.max_running = config.git_fetch_max_running;
  out.limits.per_host_running = config.git_fetch_max_per_host;
  out.limits.per_host_per_minute = config.git_fetch_per_host_per_minute;
  out.limits.host_skip = std::chrono::seconds(config.git_fetch_host_skip_secs);
  out.limits.per_author_requests = config.git_fetch_max_requests_per_author;
  out.limits.per_author_running = config.git_fetch_max_running_per_author;
  out.limits.per_repository_requests = config.git_fetch_max_requests_per_repository;
  out.limits.per_repository_running = config.git_fetch_max_running_per_repository;
  out.push_window = std::chrono::seconds(config.git_fetch_push_window_secs);
  out.urls_per_other_owner = config.git_fetch_urls_per_other_owner;
  out.max_siblings = config.git_state_max_siblings;
  out.give_up_after = std::chrono::seconds(config.purgatory_hold_secs);
  return out;
}

runtime::git::GitMaintenanceOptions maintenance_options(const runtime::Config& config,
                                                        std::string git_binary) {
  runtime::git::GitMaintenanceOptions out;
  out.git_binary = std::move(git_binary);
  out.timeout = std::chrono::seconds(config.git_maintenance_timeout_secs);
  out.max_memory_bytes = config.git_maintenance_max_memory_bytes;
  return out;
}

runtime::git::RefProbeOptions ref_probe_options(const runtime::Config& config) {
  runtime::git::RefProbeOptions out;
  out.service = config.domain.address;
  out.allow_private_addresses = config.sync_allow_private_addresses;
  for (const auto& base : peer_git_bases(config))
    if (auto url = parse_url(base)) out.trusted_hosts.insert(runtime::git::trusted_host_key(*url));
  return out;
}

ServerProbeOutcome outcome_of(runtime::git::RefProbeResult result) {
  return {0, result.ok, std::move(result.reason), std::move(result.refs)};
}

/// The replication view's server probe: every call hops onto the probes' strand.
ServerProbe server_probe(std::shared_ptr<runtime::git::RefProbe> probes,
                         runtime::git::Repositories repositories,
                         boost::asio::any_io_executor strand) {
  return [probes, repositories, strand](ServerProbeRequest request,
                                        std::function<void(ServerProbeOutcome)> done) {
    boost::asio::post(strand, [probes, repositories, request = std::move(request),
                               done = std::move(done)] {
      auto reply = [done](runtime::git::RefProbeResult result) {
        done(outcome_of(std::move(result)));
      };
      if (!request.own) return probes->probe(request.url, reply);
      probes->local_refs(repositories.path_of({request.owner, request.identifier}).string(), reply);
    });
  };
}

}  // namespace

WiredGit wire_git(const Services& services, const WiredStore& store) {
  const auto& config = services.config;
  runtime::git::Repositories repositories{config.git_data_path};
  repositories.prepare();
  auto git_binary = runtime::git::find_git_binary();
  // Held (purgatory) events count for push authorisation and the state applier (§5.11).
  std::shared_ptr<const policy::StoreView> view = std::make_shared<store::StoreAndHeldView>(
      std::shared_ptr<const store::EventStore>(store.store));
  auto locks = std::make_shared<runtime::git::RepositoryLocks>();
  auto http_options = git_http_options(config, git_binary);
  // One process cap for clients' requests and repository maintenance.
  auto process_slots = runtime::git::make_process_slots(http_options);
  GitHostConfig host_config;
  host_config.repositories = repositories;
  host_config.view = view;
  host_config.state_sync = state_sync_options(config, git_binary);
  host_config.locks = locks;
  host_config.maintenance_interval = std::chrono::seconds(config.git_maintenance_interval_secs);
  host_config.maintenance = maintenance_options(config, git_binary);
  host_config.process_slots = process_slots;
  host_config.io = &services.io;
  host_config.registry = &services.metrics.registry();
  host_config.pr_submissions = config.grasp06_enable;
  host_config.policy = policy_config(config);
  host_config.recheck_interval = std::chrono::seconds(config.git_recheck_interval_secs);
  host_config.archive_caps = {config.archive_max_repositories, config.archive_max_bytes,
                              config.archive_max_repository_bytes};
  auto host = spawn_git_host(services.system, std::move(host_config));
  runtime::git::GitHttpHooks hooks;
  hooks.pushed = push_reporter(host);
  hooks.authority = [view, policy = policy_config(config)](const RepositoryRef& repository,
                                                           const std::vector<std::string>& pr_ids) {
    if (repository.is_pr_submissions())
      return git::submission_authority(*view, policy.service, repository, pr_ids);
    const auto& [owner, identifier, space] = repository;
    auto authority = git::push_authority(*view, owner, identifier, pr_ids);
    authority.archive = git::archived_repository(*view, policy, owner, identifier);
    return authority;
  };
  hooks.archived = [view, policy = policy_config(config)](const RepositoryRef& repository) {
    return git::archived_repository(*view, policy, repository.owner, repository.identifier);
  };
  auto http = std::make_shared<runtime::git::GitHttp>(repositories, std::move(http_options),
                                                      std::move(hooks), locks,
                                                      &services.metrics.registry(), process_slots);
  services.http.set_handoff_handler(http->predicate(), http->handler());
  log::info(log::components::git, "git repositories in ", repositories.root().string(), " (git ",
            git_binary.empty() ? std::string("not found") : git_binary, ")");
  auto strand = boost::asio::make_strand(services.io);
  auto probes = std::make_shared<runtime::git::RefProbe>(
      runtime::git::GitRunner{strand, repositories, git_binary}, ref_probe_options(config));
  auto stop_probes = [probes, strand] { boost::asio::post(strand, [probes] { probes->stop(); }); };
  return {host, http, server_probe(probes, repositories, strand), stop_probes};
}

void hang_up(const WiredGit& wired) {
  if (wired.http) wired.http->stop();
  if (wired.stop_probes) wired.stop_probes();
  if (!wired.host) return;
  // Synchronous: the git processes must be told to stop before the network threads drain.
  caf::scoped_actor self{wired.host->home_system()};
  self->request(wired.host, std::chrono::seconds(5), atom::shutdown::value)
      .receive([](bool) {},
               [](caf::error& error) {
                 log::warn(log::components::git,
                           "git hosting did not confirm its stop: ", caf::to_string(error));
               });
}

void stop(const WiredGit& wired) {
  if (wired.host) caf::anon_send_exit(wired.host, caf::exit_reason::user_shutdown);
}

}  // namespace graspd::boot
