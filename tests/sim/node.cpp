#include "tests/sim/node.hpp"

#include <caf/actor_cast.hpp>
#include <caf/actor_system.hpp>
#include <caf/send.hpp>

#include <map>
#include <stdexcept>

#include "actors/policy/acceptance.hpp"
#include "actors/relay/fanout.hpp"
#include "actors/store/store_writer.hpp"
#include "actors/sync/self_subscriber.hpp"
#include "actors/sync/sync_manager.hpp"
#include "runtime/boot/wire_policy.hpp"
#include "runtime/boot/wire_relay.hpp"
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
  // Purgatory is on (the default); its hold outlasts every delay the schedule's faults can cause,
  // so whether a repository's git data arrives is the schedule's choice, not the faults' timing.
  std::map<std::string, std::string> env{
      {"NGIT_DOMAIN", node_host(setup_.index)},
      {"NGIT_RELAY_DATA_PATH", setup_.data_path},
      {"NGIT_SYNC_BOOTSTRAP_RELAY_URL", setup_.bootstrap_relay},
      {"NGIT_PURGATORY_HOLD_SECS", std::to_string(kPurgatoryHoldSeconds)}};
  if (setup_.cluster) {
    // As deploy/cluster/ runs one: the balancer's domain, each node on its own address, the same
    // peer list everywhere (each node skips its own entry).
    std::string peers;
    for (std::size_t i = 0; i < setup_.nodes; ++i)
      peers += (i ? "," : "") + std::string("wss://") + node_host(i);
    env["NGIT_DOMAIN"] = cluster_host();
    env["NGIT_BIND_ADDRESS"] = node_host(setup_.index) + ":443";
    env["NGIT_SYNC_PEERS"] = peers;
  }
  config_ = load(env);
}

std::set<std::string> SimNode::own_hosts() const {
  return {config_.domain.address.host, node_host(setup_.index)};
}

void SimNode::open(std::uint64_t connection, FrameSinkPtr sink) {
  if (!relay_) return sink->close({});
  sessions_[connection] = spawn_client_session(*system_, relay_, connection, std::move(sink),
                                               "ip:10.1.0." + std::to_string(setup_.index));
}

void SimNode::frame(std::uint64_t connection, std::string text) {
  if (auto it = sessions_.find(connection); it != sessions_.end())
    caf::anon_send(it->second, atom::ws_text::value, std::move(text));
}

void SimNode::closed(std::uint64_t connection) {
  auto it = sessions_.find(connection);
  if (it == sessions_.end()) return;
  caf::anon_send(it->second, atom::ws_closed::value);
  sessions_.erase(it);
}

void SimNode::start_relay(caf::actor_system& system) {
  fanout_ = spawn_fanout(system);
  caf::anon_send(writer_, atom::feed_subscribe::value, caf::actor_cast<store_feed_actor>(fanout_));
  auto context = std::make_shared<RelayContext>();
  context->store = store_;
  context->writer = writer_;
  context->fanout = fanout_;
  context->acceptance = acceptance_;
  context->limits = boot::relay_limits(config_);
  context->monotonic_now = setup_.monotonic_now;
  relay_ = std::move(context);
}

void SimNode::start(caf::actor_system& system, RelayClientFactory clients) {
  ++starts_;
  system_ = &system;
  auto options = boot::store_options(config_);
  options.clock = setup_.unix_now;
  store_ = std::make_shared<store::EventStore>(options);
  writer_ = system.spawn(store_writer, store_, StoreWriterConfig{});

  SimGitHostConfig git;
  git.node = setup_.index;
  git.nodes = setup_.nodes;
  for (std::size_t i = 0; setup_.cluster && i < setup_.nodes; ++i)
    if (i != setup_.index) git.peers.push_back(i);
  git.disk = setup_.disk;
  git.fetch = setup_.fetch;
  git.trace = setup_.trace;
  git_ = spawn_sim_git_host(system, std::move(git));
  auto policy = boot::acceptance_config(config_);
  policy.unix_now = setup_.unix_now;
  policy.git = caf::actor_cast<git_host_actor>(git_);
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
  caf::anon_send(acceptance_, atom::feed_subscribe::value,
                 caf::actor_cast<held_feed_actor>(subscriber_));
  if (setup_.cluster) start_relay(system);
}

sync::SyncTotals SimNode::sync_totals() const {
  auto* actor = caf::actor_cast<caf::abstract_actor*>(manager_);
  if (!actor) return {};
  auto& self =
      dynamic_cast<caf::stateful_actor<SyncManagerState, sync_manager_actor::base>&>(*actor);
  return self.state.plan ? self.state.plan->totals() : sync::SyncTotals{};
}

void SimNode::stop() {
  for (const auto& [connection, session] : sessions_)
    caf::anon_send_exit(session, caf::exit_reason::kill);
  sessions_.clear();
  relay_.reset();
  if (fanout_) caf::anon_send_exit(fanout_, caf::exit_reason::kill);
  fanout_ = nullptr;
  for (auto handle :
       {caf::actor_cast<caf::actor>(manager_), caf::actor_cast<caf::actor>(subscriber_),
        caf::actor_cast<caf::actor>(acceptance_), caf::actor_cast<caf::actor>(git_),
        caf::actor_cast<caf::actor>(writer_)})
    caf::anon_send_exit(handle, caf::exit_reason::kill);
}

void SimNode::release_store() {
  manager_ = nullptr;
  subscriber_ = nullptr;
  acceptance_ = nullptr;
  git_ = nullptr;
  writer_ = nullptr;
  store_.reset();
}

}  // namespace graspd::sim
