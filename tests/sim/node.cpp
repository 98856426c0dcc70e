#include "tests/sim/node.hpp"

#include <caf/actor_cast.hpp>
#include <caf/actor_system.hpp>
#include <caf/send.hpp>

#include <map>
#include <stdexcept>

#include "actors/policy/acceptance.hpp"
#include "actors/store/store_writer.hpp"
#include "actors/sync/self_subscriber.hpp"
#include "actors/sync/sync_manager.hpp"
#include "runtime/boot/wire_policy.hpp"
#include "runtime/boot/wire_store.hpp"
#include "runtime/boot/wire_sync.hpp"
#include "runtime/ops/status_board.hpp"
#include "tests/sim/schedule.hpp"

namespace graspd::sim {

namespace {

/// The node's configuration through the daemon's own option table (defaults included).
runtime::Config load(const std::map<std::string, std::string>& env) {
  auto loaded = runtime::load_config({}, [&](std::string_view name) -> std::optional<std::string> {
    auto it = env.find(std::string(name));
    if (it == env.end()) return std::nullopt;
    return it->second;
  });
  if (!loaded) throw std::runtime_error("simulated node configuration: " + loaded.error().message);
  return loaded.value().config;
}

}  // namespace

SimNode::SimNode(NodeSetup setup) : setup_(std::move(setup)) {
  config_ = load({{"NGIT_DOMAIN", node_host(setup_.index)},
                  {"NGIT_RELAY_DATA_PATH", setup_.data_path},
                  {"NGIT_SYNC_BOOTSTRAP_RELAY_URL", setup_.bootstrap_relay}});
}

std::set<std::string> SimNode::own_hosts() const {
  return {config_.domain.address.host};
}

void SimNode::start(caf::actor_system& system, RelayClientFactory clients) {
  ++starts_;
  auto options = boot::store_options(config_);
  options.clock = setup_.unix_now;
  store_ = std::make_shared<store::EventStore>(options);
  writer_ = system.spawn(store_writer, store_, StoreWriterConfig{});

  auto policy = boot::acceptance_config(config_);
  policy.unix_now = setup_.unix_now;
  acceptance_ = system.spawn(acceptance, std::move(policy),
                             std::shared_ptr<const store::EventStore>(store_), writer_, nullptr);
  caf::anon_send(writer_, atom::feed_subscribe::value,
                 caf::actor_cast<store_feed_actor>(acceptance_));

  // What boot::wire_sync builds, with the simulated clock, transport and inline verification.
  auto sync = boot::sync_manager_config(config_);
  sync.unix_now = setup_.unix_now;
  sync.connection.unix_now = setup_.unix_now;
  sync.random_seed = setup_.seed * 1000003 + setup_.index * 101 + starts_;
  sync.connection.already_stored = [events = store_](const nostr::EventId& id) {
    return events->contains(id);
  };
  sync.connection.local_records = [events = store_](const nostr::Filter& filter, std::size_t max) {
    return events->negentropy_items(filter, max);
  };
  sync.connection.negentropy.max_records = config_.negentropy_max_sync_events;
  // Counters reach the manager and /api/sync is refreshed every 10 s instead of every second: a
  // day of idle connections then costs a tenth of the timer messages. Nothing the properties read
  // depends on these cadences (the sync state is still saved every state_save_interval).
  sync.connection.traffic_report_interval = std::chrono::seconds(10);
  sync.status_interval = std::chrono::seconds(10);
  manager_ = system.spawn(sync_manager, std::move(sync), acceptance_, writer_, std::move(clients),
                          std::make_shared<runtime::StatusBoard>(), nullptr);
  subscriber_ = system.spawn(self_subscriber, std::shared_ptr<const store::EventStore>(store_),
                             manager_, std::chrono::milliseconds(config_.sync_batch_window_ms));
  caf::anon_send(writer_, atom::feed_subscribe::value,
                 caf::actor_cast<store_feed_actor>(subscriber_));
}

sync::SyncTotals SimNode::sync_totals() const {
  auto* actor = caf::actor_cast<caf::abstract_actor*>(manager_);
  if (!actor) return {};
  auto& self =
      dynamic_cast<caf::stateful_actor<SyncManagerState, sync_manager_actor::base>&>(*actor);
  return self.state.plan ? self.state.plan->totals() : sync::SyncTotals{};
}

void SimNode::stop() {
  for (auto handle :
       {caf::actor_cast<caf::actor>(manager_), caf::actor_cast<caf::actor>(subscriber_),
        caf::actor_cast<caf::actor>(acceptance_), caf::actor_cast<caf::actor>(writer_)})
    caf::anon_send_exit(handle, caf::exit_reason::kill);
}

void SimNode::release_store() {
  manager_ = nullptr;
  subscriber_ = nullptr;
  acceptance_ = nullptr;
  writer_ = nullptr;
  store_.reset();
}

}  // namespace graspd::sim
