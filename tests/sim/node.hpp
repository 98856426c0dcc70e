// One simulated graspd node: the real store writer, acceptance (purgatory on), sync manager and
// self-subscriber, with the simulated git hosting (tests/sim/git_host.hpp), over a real LMDB store
// in a temporary directory, configured from the same option table and the same Config -> XConfig
// translations the daemon uses (runtime/boot), with the simulated clock and the simulated network's
// RelayClientFactory in place of the system clock and the sockets.
#pragma once

#include <caf/fwd.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>

#include "actors/relay/client_session.hpp"
#include "actors/sync/engine/sync_plan.hpp"
#include "actors/sync/relay_connection.hpp"
#include "messages/interfaces.hpp"
#include "runtime/config/config.hpp"
#include "store/lmdb/event_store.hpp"
#include "tests/sim/git_host.hpp"
#include "tests/sim/network.hpp"

namespace graspd::sim {

struct NodeSetup {
  std::size_t index = 0;
  /// The node's data directory (kept across restarts).
  std::string data_path;
  /// The bootstrap relay every node dials (announcements are discovered there).
  std::string bootstrap_relay;
  std::uint64_t seed = 0;
  /// Unix seconds of the simulated clock.
  std::function<std::int64_t()> unix_now;
  /// Nodes in the mesh, the node's repositories (kept across restarts), how it fetches git data
  /// from the others and where its git hosting's trace lines go.
  std::size_t nodes = 1;
  std::shared_ptr<SimGitDisk> disk;
  SimGitFetch fetch;
  std::function<void(const std::string&)> trace;
  /// Cluster mode: every node has the domain cluster_host(), lists the others in NGIT_SYNC_PEERS
  /// and serves as a relay to them (SimServer); otherwise each is its own node_host(index).
  bool cluster = false;
  /// The simulated monotonic clock (its client sessions' rate buckets).
  std::function<std::chrono::steady_clock::time_point()> monotonic_now;
};

class SimNode final : public SimServer {
 public:
  explicit SimNode(NodeSetup setup);

  /// Opens the store and spawns the actors (again after stop()).
  void start(caf::actor_system& system, RelayClientFactory clients);
  /// Kills the actors; the store closes once they are gone (release_store()).
  void stop();
  /// Drops the node's reference on the store (after the killed actors have run down).
  void release_store();

  bool running() const { return static_cast<bool>(store_); }
  const store::EventStore& store() const { return *store_; }
  const runtime::Config& config() const { return config_; }
  /// The hosts that are this node (never dialled).
  std::set<std::string> own_hosts() const;
  bool serves() const { return setup_.cluster; }

  // SimServer (cluster mode): one client session per connection of another node.
  void open(std::uint64_t connection, FrameSinkPtr sink) override;
  void frame(std::uint64_t connection, std::string text) override;
  void closed(std::uint64_t connection) override;
  sync_manager_actor manager() const { return manager_; }
  sim_git_host_actor git() const { return git_; }
  const SimGitDisk& disk() const { return *setup_.disk; }
  std::uint64_t starts() const { return starts_; }
  /// The sync plan's totals since this start (consolidations, daily resyncs); read between runs of
  /// the coordinator only.
  sync::SyncTotals sync_totals() const;

 private:
  /// Cluster mode: the fan-out and what the client sessions share.
  void start_relay(caf::actor_system& system);

  NodeSetup setup_;
  runtime::Config config_;
  std::shared_ptr<store::EventStore> store_;
  store_writer_actor writer_;
  sim_git_host_actor git_;
  acceptance_actor acceptance_;
  sync_manager_actor manager_;
  self_subscriber_actor subscriber_;
  /// Cluster mode: what its client sessions share, and the sessions by connection.
  caf::actor_system* system_ = nullptr;
  fanout_actor fanout_;
  std::shared_ptr<const RelayContext> relay_;
  std::map<std::uint64_t, client_session_actor> sessions_;
  std::uint64_t starts_ = 0;
};

}  // namespace graspd::sim
