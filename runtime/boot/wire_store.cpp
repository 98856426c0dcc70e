#include "runtime/boot/wire_store.hpp"

#include <caf/send.hpp>

#include <stdexcept>
#include <string>

#include "actors/store_writer.hpp"
#include "runtime/log.hpp"
#include "runtime/metrics.hpp"
#include "runtime/store_metrics.hpp"

namespace graspd::boot {

namespace {

constexpr std::string_view component = "relay";

StoreWriterConfig store_writer_config(runtime::Metrics& metrics) {
  StoreWriterConfig config;
  config.tail_interval = std::chrono::seconds(1);  // events graspd sync / import write meanwhile
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
  return options;
}

WiredStore wire_store(const Services& services) {
  WiredStore wired;
  try {
    wired.store = std::make_shared<store::EventStore>(store_options(services.config));
  } catch (const std::exception& failure) {
    throw std::runtime_error(std::string("event store: ") + failure.what());
  }
  log::info(component, "event store open at ", services.config.data_path, " (", wired.store->size(),
            " events)");
  wired.writer =
      spawn_store_writer(services.system, wired.store, store_writer_config(services.metrics));
  return wired;
}

void stop(const WiredStore& wired) {
  caf::anon_send_exit(wired.writer, caf::exit_reason::user_shutdown);
}

}  // namespace graspd::boot
