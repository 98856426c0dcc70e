#include <utility>  // before Asio, see docs/toolchain.md §1

#include "runtime/git/git_maintenance.hpp"

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/registry.h>

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>

#include "runtime/git/git_process.hpp"
#include "runtime/ops/log.hpp"

namespace graspd::runtime::git {

namespace net = boost::asio;

namespace {

constexpr std::size_t max_output = 64 * 1024;

struct MaintenanceMetrics {
  explicit MaintenanceMetrics(prometheus::Registry& registry)
      : runs(prometheus::BuildCounter()
                 .Name("graspd_git_maintenance_total")
                 .Help("Repository maintenance runs (git gc --auto) by result: done, failed, "
                       "timeout (killed at NGIT_GIT_MAINTENANCE_TIMEOUT_SECS), busy (no git "
                       "process free in line, tried again later)")
                 .Register(registry)),
        done(runs.Add({{"result", "done"}})),
        failed(runs.Add({{"result", "failed"}})),
        timed_out(runs.Add({{"result", "timeout"}})),
        busy(runs.Add({{"result", "busy"}})) {}

  prometheus::Family<prometheus::Counter>& runs;
  prometheus::Counter& done;
  prometheus::Counter& failed;
  prometheus::Counter& timed_out;
  prometheus::Counter& busy;
};

std::string megabytes(std::uint64_t bytes) {
  return std::to_string(std::max<std::uint64_t>(bytes >> 20, 1)) + "m";
}

}  // namespace

const char* to_string(MaintenanceOutcome outcome) {
  switch (outcome) {
    case MaintenanceOutcome::done:
      return "done";
    case MaintenanceOutcome::failed:
      return "failed";
    case MaintenanceOutcome::timed_out:
      return "timeout";
    case MaintenanceOutcome::busy:
      return "busy";
  }
  return "failed";
}

std::vector<std::string> maintenance_settings(const GitMaintenanceOptions& options) {
  std::vector<std::string> settings{
      "gc.auto=" + std::to_string(options.auto_loose_objects),
      "gc.autoPackLimit=" + std::to_string(options.auto_pack_limit),
      // In the foreground: a detached gc would outlive the slot, the time limit and the kill.
      "gc.autoDetach=false", "pack.threads=1"};
  if (options.max_memory_bytes > 0) {
    // git's own defaults assume the machine's memory is git's; within the address-space limit, a
    // quarter goes to the delta window, a quarter to mapped packs, a sixteenth to each cache.
    const auto limit = options.max_memory_bytes;
    settings.push_back("pack.windowMemory=" + megabytes(limit / 4));
    settings.push_back("core.packedGitLimit=" + megabytes(limit / 4));
    settings.push_back("core.packedGitWindowSize=" +
                       megabytes(std::min<std::uint64_t>(limit / 16, 32ull << 20)));
    settings.push_back("pack.deltaCacheSize=" + megabytes(limit / 16));
    settings.push_back("core.deltaBaseCacheLimit=" + megabytes(limit / 16));
  }
  return settings;
}

struct GitMaintenance::Impl : std::enable_shared_from_this<GitMaintenance::Impl> {
  Impl(net::io_context& io, Repositories r, GitMaintenanceOptions o,
       std::shared_ptr<ProcessSlots> s)
      : strand(net::make_strand(io)),
        repositories(std::move(r)),
        options(std::move(o)),
        slots(std::move(s)) {}

  void run(const RepositoryRef& name, std::function<void(MaintenanceOutcome)> done) {
    if (options.git_binary.empty()) return finish(MaintenanceOutcome::failed, std::move(done));
    auto argv = argv_for(name);
    auto start = [self = shared_from_this(), argv, done]() mutable {
      net::post(self->strand, [self, argv = std::move(argv), done = std::move(done)]() mutable {
        self->start(std::move(argv), std::move(done));
      });
    };
    switch (slots->take_or_queue(maintenance_slot_key, start)) {
      case ProcessSlots::Grant::taken:
        return start();
      case ProcessSlots::Grant::queued:
        return;
      case ProcessSlots::Grant::full:
        return finish(MaintenanceOutcome::busy, std::move(done));
    }
  }

  std::vector<std::string> argv_for(const RepositoryRef& name) const {
    std::vector<std::string> argv{options.git_binary,
                                  "--git-dir=" + repositories.path_of(name).string(), "-c",
                                  "core.hooksPath=" + repositories.hooks_dir().string()};
    for (auto& setting : maintenance_settings(options)) {
      argv.emplace_back("-c");
      argv.push_back(std::move(setting));
    }
    argv.insert(argv.end(), {"gc", "--auto", "--quiet"});
    return argv;
  }

  /// On the strand, with the slot taken.
  void start(std::vector<std::string> argv, std::function<void(MaintenanceOutcome)> done) {
    if (stopping) return slots->give(maintenance_slot_key), void();
    run_collect(
        strand, std::move(argv), repositories.git_environment(), repositories.root().string(), "",
        options.timeout, max_output, 0,
        [self = shared_from_this(), done = std::move(done)](Collected result) mutable {
          self->slots->give(maintenance_slot_key);
          self->finish(outcome_of(result), std::move(done));
        },
        options.max_memory_bytes);
  }

  static MaintenanceOutcome outcome_of(const Collected& result) {
    if (result.timed_out) return MaintenanceOutcome::timed_out;
    if (result.exit_code != 0) {
      log::warn(log::components::git, "repository maintenance failed (", result.exit_code,
                "): ", result.err);
      return MaintenanceOutcome::failed;
    }
    return MaintenanceOutcome::done;
  }

  void finish(MaintenanceOutcome outcome, std::function<void(MaintenanceOutcome)> done) {
    count(outcome);
    net::post(strand, [self = shared_from_this(), outcome, done = std::move(done)] {
      if (!self->stopping) done(outcome);
    });
  }

  void count(MaintenanceOutcome outcome) {
    switch (outcome) {
      case MaintenanceOutcome::done:
        ++counters.done;
        if (metrics) metrics->done.Increment();
        break;
      case MaintenanceOutcome::failed:
        ++counters.failed;
        if (metrics) metrics->failed.Increment();
        break;
      case MaintenanceOutcome::timed_out:
        ++counters.timed_out;
        if (metrics) metrics->timed_out.Increment();
        break;
      case MaintenanceOutcome::busy:
        ++counters.busy;
        if (metrics) metrics->busy.Increment();
        break;
    }
  }

  net::strand<net::io_context::executor_type> strand;
  Repositories repositories;
  GitMaintenanceOptions options;
  std::shared_ptr<ProcessSlots> slots;
  GitMaintenanceCounters counters;
  std::unique_ptr<MaintenanceMetrics> metrics;
  std::atomic<bool> stopping{false};
};

GitMaintenance::GitMaintenance(net::io_context& io, Repositories repositories,
                               GitMaintenanceOptions options, std::shared_ptr<ProcessSlots> slots,
                               prometheus::Registry* registry)
    : impl_(std::make_shared<Impl>(io, std::move(repositories), std::move(options),
                                   std::move(slots))) {
  if (registry) impl_->metrics = std::make_unique<MaintenanceMetrics>(*registry);
}

GitMaintenance::~GitMaintenance() {
  stop();
}

void GitMaintenance::run(const RepositoryRef& name, std::function<void(MaintenanceOutcome)> done) {
  impl_->run(name, std::move(done));
}

void GitMaintenance::stop() {
  impl_->stopping = true;
}

const GitMaintenanceCounters& GitMaintenance::counters() const {
  return impl_->counters;
}

}  // namespace graspd::runtime::git
