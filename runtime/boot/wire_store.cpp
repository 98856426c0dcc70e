#include "runtime/boot/wire_store.hpp"

#include <caf/send.hpp>

#include <chrono>
#include <filesystem>
#include <stdexcept>
#include <string>

#include "actors/store/store_writer.hpp"
#include "messages/atoms.hpp"
#include "runtime/ops/log.hpp"
#include "runtime/ops/metrics.hpp"
#include "runtime/ops/store_metrics.hpp"

namespace graspd::boot {

namespace {

// What graspd sync / graspd import commit meanwhile reaches live subscribers within this time.
constexpr std::chrono::seconds foreign_write_delay{1};

StoreWriterConfig store_writer_config(runtime::Metrics& metrics) {
  StoreWriterConfig config;
  config.observe_commit = [observed = std::make_shared<runtime::StoreMetrics>(metrics.registry())](
                              std::size_t events, double seconds, bool failed) {
    observed->commit(events, seconds, failed);
  };
  return config;
}

}  // namespace

store::StoreOptions store_options(const runtime::Config& config) {
  store::StoreOptions options;
  options.path = config.data_path;
  // NIP-62: which requests to vanish name this relay.
  if (!config.domain.address.host.empty()) options.service = config.domain.address;
  return options;
}

WiredStore wire_store(const Services& services) {
  WiredStore wired;
  auto started = std::chrono::steady_clock::now();
  try {
    wired.store = std::make_shared<store::EventStore>(store_options(services.config));
  } catch (const std::exception& failure) {
    throw std::runtime_error(std::string("event store: ") + failure.what());
  }
  auto events = wired.store->size();
  log::info(log::components::relay, "event store open at ", services.config.data_path, " (", events,
            " events, opened in ",
            std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                                  started)
                .count(),
            " ms)");
  auto config = store_writer_config(services.metrics);
  // The network threads do not run yet: the watch cannot call before `writer` is set.
  auto writer = std::make_shared<store_writer_actor>();
  try {
    wired.foreign_writes = std::make_shared<runtime::FileChangeWatch>(
        services.io, std::filesystem::path(services.config.data_path) / "data.mdb",
        foreign_write_delay, [writer] { caf::anon_send(*writer, atom::store_tail::value); });
  } catch (const std::exception& failure) {
    log::warn(log::components::relay, failure.what(),
              ": looking for other processes' writes every second");
    config.tail_interval = foreign_write_delay;
  }
  wired.writer = spawn_store_writer(services.system, wired.store, config);
  *writer = wired.writer;
  return wired;
}

void stop(const WiredStore& wired) {
  caf::anon_send_exit(wired.writer, caf::exit_reason::user_shutdown);
}

}  // namespace graspd::boot
