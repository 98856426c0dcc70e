#include <utility>  // before Asio, see toolchain.md §1

#include "runtime/daemon.hpp"

#include <signal.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/all.hpp>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <exception>
#include <future>
#include <memory>
#include <mutex>
#include <thread>

#include "actors/process_monitor.hpp"
#include "runtime/http_server.hpp"
#include "runtime/log.hpp"
#include "runtime/metrics.hpp"
#include "runtime/nip11.hpp"
#include "runtime/status_board.hpp"
#include "runtime/version.hpp"
#include "runtime/ws_relay_boot.hpp"

namespace graspd::runtime {

namespace {

constexpr std::string_view component = "daemon";

// ---------------------------------------------------------------------------------------------
// Registry of long-lived actors. Each entry spawns one actor from the Services; the daemon keeps
// the handles, stops them in reverse order on shutdown and reports them in logs. Later issues add
// their actors (store writer, relay, sync, ...) here, and wire WebSocket upgrades through
// services.http.set_websocket_handler() from an entry.
// ---------------------------------------------------------------------------------------------
struct LongLivedActor {
  std::string name;
  std::function<caf::actor(Services&)> spawn;
};

std::vector<LongLivedActor> long_lived_actors() {
  auto relay = std::make_shared<RelayBoot>();
  return {
      {"store_writer", [relay](Services& services) { return relay->start_store_writer(services); }},
      {"acceptance", [relay](Services& services) { return relay->start_acceptance(services); }},
      {"relay", [relay](Services& services) { return relay->start_relay(services); }},
      {"sync_manager", [relay](Services& services) { return relay->start_sync(services); }},
      {"process_monitor",
       [](Services& services) {
         actors::ProcessMonitorOptions options;
         options.gauges = &services.metrics.process();
         options.interval = std::chrono::seconds{5};
         return caf::actor_cast<caf::actor>(
             services.system.spawn(actors::process_monitor, std::move(options)));
       }},
  };
}

std::size_t default_thread_count() {
  auto cores = std::thread::hardware_concurrency();
  return cores == 0 ? 2 : cores;
}

SiteContent site_content(const Config& config, Metrics& metrics,
                         std::shared_ptr<StatusBoard> status) {
  auto info = relay_information(config);
  SiteContent content;
  content.landing_page =
      landing_page_html(info.name, info.description, config.domain.text, version());
  // The configuration is fixed for the process lifetime: render the document once.
  content.nip11 = [document = nip11_json(info)] { return document; };
  if (config.metrics_enabled) content.metrics = [&metrics] { return metrics.serialize(); };
  content.api_document = [status](const std::string& name) { return status->get(name); };
  return content;
}

HttpServerOptions http_options(const Config& config) {
  HttpServerOptions options;
  options.host = config.bind_address.host;
  options.port = config.bind_address.port;
  return options;
}

/// Blocks until SIGINT or SIGTERM arrives; returns its name. The signals are blocked in every
/// thread (set before any thread starts) so only this wait receives them.
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
            log::error(component, "shutdown did not finish within ", limit.count(), " s; exiting");
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
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  // A peer closing its socket must not kill the process.
  signal(SIGPIPE, SIG_IGN);

  log::info(component, "graspd ", version(), " starting (data ", config_.data_path, ")");

  // Declaration order is destruction order in reverse: the actor system outlives the I/O threads
  // (their handlers may message actors), the metrics outlive both.
  Metrics metrics{std::string(version())};

  caf::actor_system_config actor_config;
  auto scheduler_threads = config_.scheduler_threads != 0
                               ? config_.scheduler_threads
                               : std::max<std::size_t>(2, default_thread_count());
  actor_config.set("scheduler.max-threads", scheduler_threads);
  caf::actor_system system{actor_config};

  boost::asio::io_context io{
      static_cast<int>(config_.io_threads != 0 ? config_.io_threads : default_thread_count())};
  auto work = boost::asio::make_work_guard(io);
  // The content depends on the bound port (NGIT_DOMAIN defaults to the bind address, and port 0
  // means "any"): it is filled in after start(), before the network threads run.
  auto content = std::make_shared<SiteContent>();
  HttpServer http{io, http_options(config_), [content](const HttpRequestInfo& request) {
                    return route_request(request, *content);
                  }};

  auto status = std::make_shared<StatusBoard>();
  Services services{config_, system, io, metrics, http, status, {}};
  std::vector<std::pair<std::string, caf::actor>> running;
  try {
    // Bind first: with port 0 the domain (which the acceptance policy and the
    // sync engine's own-relay guard need) is only known now. Nothing is
    // accepted before the network threads run, after every actor started.
    http.start();
    adopt_bound_port(config_, http.port());
    for (auto& entry : long_lived_actors()) {
      // An entry may decline to start (e.g. sync disabled).
      if (auto handle = entry.spawn(services)) {
        running.emplace_back(entry.name, std::move(handle));
        log::debug(component, "started ", entry.name);
      }
    }
    *content = site_content(config_, metrics, status);
  } catch (const std::exception& failure) {
    log::error(component, "cannot start: ", failure.what(), " (bind address ",
               config_.bind_address.text, ")");
    for (auto it = running.rbegin(); it != running.rend(); ++it) {
      caf::anon_send_exit(it->second, caf::exit_reason::user_shutdown);
    }
    return 1;
  }

  std::vector<std::thread> io_threads;
  auto io_thread_count = config_.io_threads != 0 ? config_.io_threads : default_thread_count();
  for (std::size_t i = 0; i < io_thread_count; ++i) io_threads.emplace_back([&io] { io.run(); });

  log::info(component, "listening on ", endpoint_text(config_.bind_address.host, http.port()),
            " (domain ", config_.domain.text, ", ", running.size(), " actors, ", scheduler_threads,
            " scheduler threads, ", io_thread_count, " io threads)");

  auto signal_name = wait_for_stop_signal(stop_signals);
  log::info(component, "shutting down on ", signal_name);
  ShutdownWatchdog watchdog{std::chrono::seconds{10}};

  http.stop();
  for (auto it = services.shutdown_hooks.rbegin(); it != services.shutdown_hooks.rend(); ++it) {
    (*it)();
  }
  // Let closing connections flush for a moment, then cut whatever is left.
  work.reset();
  auto drained = std::async(std::launch::async, [&io_threads] {
    for (auto& thread : io_threads) thread.join();
  });
  if (drained.wait_for(std::chrono::seconds{2}) != std::future_status::ready) {
    log::warn(component, "network threads still busy after 2 s; stopping them");
    io.stop();
  }
  drained.wait();

  for (auto it = running.rbegin(); it != running.rend(); ++it) {
    caf::anon_send_exit(it->second, caf::exit_reason::user_shutdown);
  }
  running.clear();
  // Wait here, while the io_context still exists: actors may hold the last reference to a
  // WebSocket stream, whose destructor needs it. (The io_context is destroyed before the actor
  // system, so its pending handlers can still release actor handles safely.) The watchdog bounds
  // the wait.
  system.await_all_actors_done();
  log::info(component, "stopped");
  return 0;
}

}  // namespace graspd::runtime
