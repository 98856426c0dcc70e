#include <utility>  // before Asio, see docs/toolchain.md §1

#include "runtime/boot/daemon.hpp"

#include <signal.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/send.hpp>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <exception>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "messages/errors.hpp"
#include "runtime/boot/services.hpp"
#include "runtime/boot/wire_admin.hpp"
#include "runtime/boot/wire_git.hpp"
#include "runtime/boot/wire_identity.hpp"
#include "runtime/boot/wire_monitor.hpp"
#include "runtime/boot/wire_policy.hpp"
#include "runtime/boot/wire_relay.hpp"
#include "runtime/boot/wire_replication.hpp"
#include "runtime/boot/wire_status.hpp"
#include "runtime/boot/wire_store.hpp"
#include "runtime/boot/wire_sync.hpp"
#include "runtime/net/forwarded_metrics.hpp"
#include "runtime/net/http_server.hpp"
#include "runtime/net/nip05.hpp"
#include "runtime/net/nip11.hpp"
#include "runtime/ops/log.hpp"
#include "runtime/ops/metrics.hpp"
#include "runtime/ops/status_board.hpp"
#include "runtime/ops/status_page.hpp"
#include "runtime/ops/status_page_cache.hpp"
#include "runtime/ops/version.hpp"

namespace graspd::boot {

namespace {

using runtime::Config;

std::size_t default_thread_count() {
  auto cores = std::thread::hardware_concurrency();
  return cores == 0 ? 2 : cores;
}

std::size_t scheduler_thread_count(const Config& config) {
  return config.scheduler_threads != 0 ? config.scheduler_threads
                                       : std::max<std::size_t>(2, default_thread_count());
}

std::size_t io_thread_count(const Config& config) {
  return config.io_threads != 0 ? config.io_threads : default_thread_count();
}

class ActorSystemConfig : public caf::actor_system_config {
 public:
  explicit ActorSystemConfig(std::size_t scheduler_threads) {
    set("scheduler.max-threads", scheduler_threads);
    // Work stealing polls: an idle worker wakes every 10 ms and spins through 500 sleeps of 50 us
    // after each job, ~1,000 wake-ups a second with nothing to do. Work sharing waits on one
    // condition variable until a job is enqueued (docs/benchmarks.md, "Idle").
    set("scheduler.policy", caf::atom("sharing"));
    add_error_categories(*this);
  }
};

runtime::HttpServerOptions http_options(const Config& config, runtime::Metrics& metrics) {
  runtime::HttpServerOptions options;
  options.host = config.bind_address.host;
  options.port = config.bind_address.port;
  options.trusted_proxies = config.trusted_proxies;
  options.count_forwarded = runtime::forwarded_counter(metrics.registry());
  return options;
}

runtime::StatusPageLimits status_page_limits(const Config& config) {
  return {config.status_page_max_bytes, config.status_page_max_field_bytes,
          config.status_page_repositories};
}

runtime::SiteContent site_content(const Config& config, runtime::Metrics& metrics,
                                  std::shared_ptr<runtime::StatusBoard> status,
                                  std::shared_ptr<store::EventStore> store) {
  auto info = std::make_shared<const runtime::RelayInformation>(runtime::relay_information(config));
  runtime::SiteContent content;
  auto render = [info, domain = config.domain.text, status, store,
                 limits = status_page_limits(config)] {
    runtime::StatusPageInput input;
    input.info = info.get();
    input.domain = domain;
    input.repositories = runtime::hosted_repositories(*store, limits);
    input.sync_json = status->get("sync");
    input.history_json = status->get("status_history");
    input.replication_json = status->get("replication");
    input.limits = limits;
    return runtime::status_page_html(input);
  };
  // Rendered on the cache's own thread, at most once per interval, however many ask.
  auto page = std::make_shared<runtime::StatusPageCache>(
      std::move(render), std::chrono::seconds(config.status_page_interval_secs));
  content.landing_page = [page](runtime::PageDelivery deliver) { page->get(std::move(deliver)); };
  // The configuration is fixed for the process lifetime: render the document once.
  content.nip11 = [document = runtime::nip11_json(*info)] { return document; };
  if (config.metrics_enabled) content.metrics = [&metrics] { return metrics.serialize(); };
  content.api_document = [status](const std::string& name) { return status->get(name); };
  if (config.relay_key) {
    // Two documents only: the relay's own name `_`, and every other name (none).
    content.nip05 = [itself = runtime::nip05_json(config, std::nullopt),
                     nobody = runtime::nip05_json(config, std::string("-"))](
                        const std::optional<std::string>& name) {
      return !name || *name == "_" ? itself : nobody;
    };
  }
  return content;
}

/// The process-wide objects. Declaration order is destruction order in reverse: the actor system
/// outlives the io_context (its handlers may message actors), the metrics outlive both.
struct Process {
  explicit Process(const Config& config)
      : actor_config(scheduler_thread_count(config)),
        system(actor_config),
        io(static_cast<int>(io_thread_count(config))),
        work(boost::asio::make_work_guard(io)),
        http(io, http_options(config, metrics),
             [content = content](const runtime::HttpRequestInfo& r) {
               return runtime::route_request(r, *content);
             }) {}

  runtime::Metrics metrics{std::string(runtime::version())};
  ActorSystemConfig actor_config;
  caf::actor_system system;
  boost::asio::io_context io;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work;
  /// Depends on the bound port (NGIT_DOMAIN defaults to the bind address, and port 0 means
  /// "any"): filled in by boot, before the network threads run.
  std::shared_ptr<runtime::SiteContent> content = std::make_shared<runtime::SiteContent>();
  runtime::HttpServer http;
  std::shared_ptr<runtime::StatusBoard> status = std::make_shared<runtime::StatusBoard>();
  std::vector<std::thread> io_threads;
};

/// Every component, in start order. Each wire_* function takes the components it needs, so the
/// order is the one the types allow.
struct Wired {
  WiredStore store;
  WiredGit git;
  WiredPolicy policy;
  WiredRelay relay;
  WiredAdmin admin;
  std::optional<WiredSync> sync;
  WiredReplication replication;
  WiredMonitor monitor;
  WiredStatus status;
  /// The relay profile publisher: short-lived, not counted among the long-lived actors.
  WiredIdentity identity;
};

/// Wires into `wired` one component after the other; what started before a failure stays there.
void wire_all(const Services& services, Wired& wired) {
  wired.store = wire_store(services);
  log::debug(log::components::daemon, "started store_writer");
  wired.git = wire_git(services, wired.store);
  log::debug(log::components::daemon, "started git hosting");
  wired.policy = wire_policy(services, wired.store, wired.git.host);
  if (wired.policy.acceptance) log::debug(log::components::daemon, "started acceptance");
  wired.relay = wire_relay(services, wired.store, wired.policy);
  log::debug(log::components::daemon, "started relay");
  wired.admin = wire_admin(services, wired.store, wired.policy);
  log::debug(log::components::daemon, "started management");
  wired.sync = wire_sync(services, wired.store, wired.policy);
  if (wired.sync) log::debug(log::components::daemon, "started sync_manager");
  wired.replication = wire_replication(services, wired.store, wired.git.probe_server,
                                       wired.sync ? wired.sync->plus : sync_plus_actor{});
  log::debug(log::components::daemon, "started replication");
  wired.monitor = wire_monitor(services);
  log::debug(log::components::daemon, "started process_monitor");
  wired.status = wire_status(services, wired.store);
  log::debug(log::components::daemon, "started status_history");
  wired.identity = wire_identity(services, wired.store);
  if (wired.identity.publisher) log::debug(log::components::daemon, "started relay_profile");
}

/// The long-lived actors: store writer, git hosting, fan-out, management, replication, process
/// monitor and status history; acceptance and sync manager when enabled.
std::size_t actor_count(const Wired& wired) {
  return 7 + (wired.policy.acceptance ? 1 : 0) + (wired.sync ? 1 : 0);
}

/// Closes what faces the network once the listener stopped accepting: the outbound sync
/// connections, then the client sessions (and their verifiers).
void hang_up(const Wired& wired) {
  close_connections(wired.identity);
  if (wired.sync) close_connections(*wired.sync);
  close_connections(wired.replication);
  hang_up(wired.git);
  close_sessions(wired.relay);
}

/// Sends every long-lived actor exit, in reverse start order.
void stop_actors(const Wired& wired) {
  stop(wired.identity);
  stop(wired.status);
  stop(wired.monitor);
  if (wired.replication.actor) stop(wired.replication);
  if (wired.sync) stop(*wired.sync);
  stop(wired.admin);
  stop(wired.relay);
  stop(wired.policy);
  stop(wired.git);
  stop(wired.store);
}

/// Binds the listener, wires every component and fills the site content. Returns false (logged)
/// when something cannot start, after stopping what did.
bool boot(Config& config, Process& process, Wired& wired) {
  Services services{config,          process.system, process.io,
                    process.metrics, process.http,   process.status};
  try {
    // Bind first: with port 0 the domain (which the acceptance policy and the sync engine's
    // own-relay guard need) is only known now. Nothing is accepted before the network threads
    // run, after every actor started.
    process.http.start();
    runtime::adopt_bound_port(config, process.http.port());
    wire_all(services, wired);
    *process.content = site_content(config, process.metrics, process.status, wired.store.store);
    process.content->management = management_entry(process.system, wired.admin);
    process.content->replication = replication_entry(process.system, wired.replication);
  } catch (const std::exception& failure) {
    log::error(log::components::daemon, "cannot start: ", failure.what(), " (bind address ",
               config.bind_address.text, ")");
    hang_up(wired);
    stop_actors(wired);
    return false;
  }
  return true;
}

/// Starts the network threads and logs the readiness line.
void serve(const Config& config, Process& process, const Wired& wired) {
  auto threads = io_thread_count(config);
  for (std::size_t i = 0; i < threads; ++i)
    process.io_threads.emplace_back([&io = process.io] { io.run(); });
  log::info(log::components::daemon, "listening on ",
            runtime::endpoint_text(config.bind_address.host, process.http.port()), " (domain ",
            config.domain.text, ", ", actor_count(wired), " actors, ",
            scheduler_thread_count(config), " scheduler threads, ", threads, " io threads)");
}

/// Lets closing connections flush for a moment, then cuts whatever is left.
void drain_network_threads(Process& process) {
  process.work.reset();
  auto drained = std::async(std::launch::async, [&threads = process.io_threads] {
    for (auto& thread : threads) thread.join();
  });
  if (drained.wait_for(std::chrono::seconds{2}) != std::future_status::ready) {
    log::warn(log::components::daemon, "network threads still busy after 2 s; stopping them");
    process.io.stop();
  }
  drained.wait();
}

void shut_down(Process& process, Wired& wired) {
  process.http.stop();
  hang_up(wired);
  // The file watch's pending read would keep the network threads from running out of work.
  wired.store.foreign_writes.reset();
  drain_network_threads(process);
  // No request is served any more: the status page lets go of the store.
  *process.content = runtime::SiteContent{};
  stop_actors(wired);
  // The actors own what they use from here on (the store closes with the last of them).
  wired = Wired{};
  // Wait here, while the io_context still exists: actors may hold the last reference to a
  // WebSocket stream, whose destructor needs it. (The io_context is destroyed before the actor
  // system, so its pending handlers can still release actor handles safely.) The watchdog bounds
  // the wait.
  process.system.await_all_actors_done();
}

/// Blocks SIGINT and SIGTERM in this thread and in every thread started after it, so only
/// wait_for_stop_signal receives them; a peer closing its socket (SIGPIPE) must not kill the
/// process.
sigset_t block_stop_signals() {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  signal(SIGPIPE, SIG_IGN);
  return signals;
}

/// Blocks until SIGINT or SIGTERM arrives; returns its name.
std::string wait_for_stop_signal(const sigset_t& signals) {
  int received = 0;
  while (sigwait(&signals, &received) != 0) {
  }
  return received == SIGINT ? "SIGINT" : "SIGTERM";
}

/// Ends the process if shutdown hangs, so a supervisor can restart it; armed once shutdown begins.
class ShutdownWatchdog {
 public:
  explicit ShutdownWatchdog(std::chrono::seconds limit)
      : thread_([this, limit] {
          std::unique_lock lock{mutex_};
          if (!done_cv_.wait_for(lock, limit, [this] { return done_; })) {
            log::error(log::components::daemon, "shutdown did not finish within ", limit.count(),
                       " s; exiting");
            std::_Exit(1);
          }
        }) {}
  ~ShutdownWatchdog() {
    {
      std::lock_guard lock{mutex_};
      done_ = true;
    }
    done_cv_.notify_all();
    thread_.join();
  }

 private:
  std::mutex mutex_;
  std::condition_variable done_cv_;
  bool done_ = false;
  std::thread thread_;
};

}  // namespace

Daemon::Daemon(Config config) : config_(std::move(config)) {}

Daemon::~Daemon() = default;

int Daemon::run() {
  auto stop_signals = block_stop_signals();
  log::info(log::components::daemon, "graspd ", runtime::version(), " starting (data ",
            config_.data_path, ")");
  Process process{config_};
  Wired wired;
  if (!boot(config_, process, wired)) return 1;
  serve(config_, process, wired);
  auto signal_name = wait_for_stop_signal(stop_signals);
  log::info(log::components::daemon, "shutting down on ", signal_name);
  ShutdownWatchdog watchdog{std::chrono::seconds{10}};
  shut_down(process, wired);
  log::info(log::components::daemon, "stopped");
  return 0;
}

}  // namespace graspd::boot
