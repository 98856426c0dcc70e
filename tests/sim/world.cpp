#include "tests/sim/world.hpp"

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/scheduler/test_coordinator.hpp>
#include <caf/send.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <sstream>

#include "messages/errors.hpp"
#include "messages/nostr/json.hpp"
#include "messages/nostr/nip34.hpp"
#include "runtime/boot/wire_policy.hpp"
#include "tests/sim/network.hpp"
#include "tests/sim/node.hpp"
#include "tests/sim/oracle.hpp"
#include "tests/support/temp_dir.hpp"

namespace graspd::sim {

namespace {

using namespace std::chrono_literals;

constexpr std::size_t trace_tail = 40;

/// Memory-backed when the system has it: the stores' fsyncs and the sync state file's renames
/// would otherwise make the disk, not the simulation, set the pace.
std::filesystem::path scratch_parent() {
  std::error_code ignored;
  if (std::filesystem::is_directory("/dev/shm", ignored)) return "/dev/shm";
  return std::filesystem::temp_directory_path();
}

struct TestingConfig : caf::actor_system_config {
  TestingConfig() {
    set("scheduler.policy", caf::atom("testing"));
    set("logger.file-verbosity", caf::atom("quiet"));
    set("logger.console-verbosity", caf::atom("quiet"));
    add_error_categories(*this);
  }
};

/// One run's mesh. Member order is teardown order in reverse: the actor system (which waits for
/// every actor) goes before the network and the stores' directory.
class World {
 public:
  World(const SimOptions& options, RunResult& result)
      : options_(options),
        result_(result),
        network_([this] { return now_ms(); },
                 [this](std::size_t node, const std::string& line) { trace(node, line); },
                 [this](const std::string& what) { violate(what); }) {
    result_.seed = options.seed;
    result_.node_traces.resize(options.nodes);
    // Odd relays advertise a tight REQ budget (some public relays allow 10 or fewer), so the
    // nodes' consolidation runs in ordinary schedules, and speak NIP-77 (as graspd and strfry do),
    // so history comes by reconciliation from them and by REQ pages from the even ones.
    for (std::size_t i = 0; i < options.relays; ++i)
      network_.add_relay(relay_url(i), false, i % 2 ? 8 : 20, i % 2 == 1);
    network_.add_relay("ws://10.0.0.5", true, 20);
    for (std::size_t i = 0; i < options.nodes; ++i) {
      NodeSetup setup;
      setup.index = i;
      setup.data_path = (dir_.path() / ("node" + std::to_string(i))).string();
      setup.bootstrap_relay = relay_url(0);
      setup.seed = options.seed;
      setup.unix_now = [this] { return kEpoch + now_ms() / 1000; };
      setup.nodes = options.nodes;
      setup.disk = disks_.emplace_back(std::make_shared<SimGitDisk>());
      setup.fetch = [this, i](std::size_t from, const RepositoryRef& repository,
                              const std::vector<std::string>& commits,
                              std::function<void(bool)> done) {
        fetch(i, from, repository, commits, std::move(done));
      };
      setup.trace = [this, i](const std::string& line) { trace(i, line); };
      setup.cluster = options.cluster;
      setup.monotonic_now = [this] { return scheduler_->clock().now(); };
      nodes_.push_back(std::make_unique<SimNode>(std::move(setup)));
    }
    system_ = std::make_unique<caf::actor_system>(config_);
    scheduler_ = &dynamic_cast<caf::scheduler::test_coordinator&>(system_->scheduler());
    scheduler_->clock().current_time += 1h;
    start_ = scheduler_->clock().current_time;
    for (std::size_t i = 0; i < nodes_.size(); ++i) start(i);
    scheduler_->run();
  }

  ~World() {
    for (auto& node : nodes_)
      if (node->running()) node->stop();
    scheduler_->run();
    for (auto& node : nodes_) node->release_store();
    system_.reset();
  }

  void play(const std::vector<Action>& actions, std::size_t prefix) {
    for (std::size_t i = 0; i < actions.size() && i < prefix && result_.ok(); ++i) {
      advance_to(actions[i].at_ms);
      apply(actions[i]);
    }
    if (!result_.ok()) return finish();
    advance_to(options_.seconds * 1000);
    network_.heal();
    for (auto& disk : disks_) disk->outage_until_ms = 0;
    // Settled: past the longest backoff and rate-limit cooldown, well before any daily resync
    // (which would repair what a catch-up missed). Quiet: past the daily resync too.
    const auto& c = nodes_.front()->config();
    const auto settle =
        static_cast<std::int64_t>(c.sync_max_backoff_secs + c.sync_rate_limit_cooldown_secs + 600);
    advance_to((options_.seconds + settle) * 1000);
    if (result_.ok()) check_contents("settled, before any daily resync");
    const auto quiet = static_cast<std::int64_t>(c.sync_daily_resync_max_secs) + settle;
    advance_to((options_.seconds + quiet) * 1000);
    if (result_.ok()) check_contents("after the daily resync");
    // Every hold has ended by now (kPurgatoryHoldSeconds is far shorter than the quiet period).
    if (result_.ok()) check_repositories();
    finish();
  }

 private:
  std::int64_t now_ms() const {
    return std::chrono::duration_cast<std::chrono::milliseconds>(scheduler_->clock().now() - start_)
        .count();
  }

  /// The earliest actor timer, in ms since the start (rounded up so advancing to it fires it).
  std::optional<std::int64_t> next_timer_ms() const {
    const auto& schedule = scheduler_->clock().schedule();
    if (schedule.empty()) return std::nullopt;
    auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(schedule.begin()->first - start_)
                  .count();
    return (ns + 999'999) / 1'000'000;
  }

  /// Runs every delivery and timer due up to `target`, in time order, checking after each step.
  void advance_to(std::int64_t target) {
    while (result_.ok()) {
      auto next = network_.next_time();
      auto timer = next_timer_ms();
      if (timer && (!next || *timer < *next)) next = timer;
      if (!next || *next > target) break;
      set_time(*next);
      network_.run_due(*next);
      scheduler_->run();
      ++result_.properties_checked;
    }
    set_time(target);
    scheduler_->run();
  }

  void set_time(std::int64_t ms) {
    auto now = now_ms();
    // Fires every timer due by then (a zero step fires the ones already due).
    scheduler_->clock().advance_time(ms > now ? std::chrono::milliseconds(ms - now) : 0ms);
  }

  void apply(const Action& a) {
    trace_all(describe(a));
    switch (a.kind) {
      case ActionKind::publish:
        ++result_.publications;
        if (a.event->kind == nostr::nip34::kind::deletion) ++result_.deletions;
        for (auto relay : a.relays) network_.publish(relay, *a.event);
        return;
      case ActionKind::restart:
        ++result_.restarts;
        return restart(a.node);
      case ActionKind::push:
        ++result_.publications;
        ++result_.pushes;
        pushed_.push_back(&a);
        for (auto relay : a.relays) network_.publish(relay, *a.event);
        return push(a.node, *a.event);
      case ActionKind::git_outage:
        disks_.at(a.node)->outage_until_ms = now_ms() + a.duration_ms;
        break;
      case ActionKind::drop:
        network_.drop(a.node, a.relay, "connection reset");
        break;
      case ActionKind::refuse:
        network_.refuse(a.relay, now_ms() + a.duration_ms);
        break;
      case ActionKind::latency:
        network_.relay(a.relay).latency_ms = static_cast<std::int64_t>(a.value);
        network_.relay(a.relay).latency_until_ms = now_ms() + a.duration_ms;
        break;
      case ActionKind::rate_limit:
        network_.relay(a.relay).rate_limited_reqs += a.value;
        break;
      case ActionKind::cap_limit:
        network_.relay(a.relay).limit_cap = a.value;
        network_.relay(a.relay).cap_until_ms = now_ms() + a.duration_ms;
        break;
      case ActionKind::garbage:
        network_.garbage(a.node, a.relay, garbage_frames().at(a.value % garbage_frames().size()));
        break;
    }
    ++result_.faults;
  }

  /// A push of `state`'s commit to node `i`: taken once the node holds the state that authorises
  /// it (as a real push is), else tried again in 30 s, as a client retries a refused push.
  void push(std::size_t i, const nostr::Event& state) {
    auto repository = state_repository(state);
    const auto& disk = *disks_.at(i);
    auto repo = disk.repositories.find(repository);
    if (repo == disk.repositories.end() || !repo->second.states.count(state.id)) {
      trace(i, "push of " + repository.identifier + " refused: state " +
                   nostr::to_hex(state.id).substr(0, 12) + " not held here yet");
      auto copy = state;
      network_.later(now_ms() + 30'000, [this, i, copy] { push(i, copy); });
      return;
    }
    trace(i, "push of " + repository.identifier + " taken");
    caf::anon_send(nodes_.at(i)->git(), atom::git_pushed::value,
                   GitDataArrived{repository, {}, {}, state_tips(state), {}});
  }

  /// Node `to` fetches `commits` of `repository` from node `from`: answered after a round trip,
  /// with success when `from` runs, has no git outage and holds them all.
  void fetch(std::size_t to, std::size_t from, const RepositoryRef& repository,
             const std::vector<std::string>& commits, std::function<void(bool)> done) {
    network_.later(now_ms() + 100, [this, to, from, repository, commits, done] {
      const auto& disk = *disks_.at(from);
      auto repo = disk.repositories.find(repository);
      bool ok = nodes_.at(from)->running() && disk.outage_until_ms <= now_ms() &&
                repo != disk.repositories.end() &&
                std::all_of(commits.begin(), commits.end(),
                            [&](const std::string& c) { return repo->second.commits.count(c); });
      ++result_.git_fetches;
      trace(to, "git fetch of " + repository.identifier + " from node " + std::to_string(from) +
                    (ok ? " succeeded" : " failed"));
      done(ok);
    });
  }

  void add_totals(const SimNode& node) {
    auto totals = node.sync_totals();
    result_.consolidations += totals.consolidations;
    result_.daily_syncs += totals.daily_syncs;
  }

  /// Starts node `i`; in a cluster it serves the other nodes from then on.
  void start(std::size_t i) {
    auto& node = *nodes_.at(i);
    node.start(*system_, network_.factory(i, node.own_hosts()));
    if (node.serves()) network_.serve(node_host(i), &node);
  }

  void restart(std::size_t i) {
    auto& node = *nodes_.at(i);
    add_totals(node);
    if (node.serves()) network_.serve(node_host(i), nullptr);
    node.stop();
    network_.forget_node(i);
    scheduler_->run();
    node.release_store();
    start(i);
    scheduler_->run();
  }

  void check_contents(const std::string& when) {
    std::vector<const SimRelay*> relays;
    for (std::size_t i = 0; i < network_.relay_count(); ++i) relays.push_back(&network_.relay(i));
    result_.stored_events = 0;  // as of the latest check
    auto released = released_repositories(relays);
    for (std::size_t i = 0; i < nodes_.size(); ++i) {
      const auto& node = *nodes_[i];
      auto expected = expected_events(boot::policy_config(node.config()), relays, 0, &released);
      std::map<nostr::EventId, std::size_t> stored;
      node.store().for_each([&](std::string_view json) {
        if (auto ev = nostr::parse_event(json, nostr::ParseLimits{})) ++stored[ev->id];
        return true;
      });
      result_.properties_checked += 3;
      result_.stored_events += stored.size();
      for (const auto& [id, copies] : stored) {
        if (copies > 1)
          violate("node " + std::to_string(i) + " stores " + nostr::to_hex(id) + " " +
                  std::to_string(copies) + " times");
        if (!expected.count(id))
          violate("node " + std::to_string(i) + " stores " + describe_event(id) +
                  ", which no reachable relay offers it under the policy (" + when + ")");
      }
      for (const auto& id : expected)
        if (!stored.count(id))
          violate("node " + std::to_string(i) + " lacks " + describe_event(id) +
                  " (reachable and accepted; " + when + ")");
    }
  }

  /// The repositories whose git data exists somewhere a node can fetch it: pushed to a node that
  /// accepts the announcement (only there is the push taken). Every node accepting the
  /// announcement then fetches it from there.
  Released released_repositories(const std::vector<const SimRelay*>& relays) const {
    Released out;
    std::map<std::size_t, std::set<RepositoryRef>> accepted;
    for (const auto* action : pushed_) {
      auto node = action->node;
      if (!accepted.count(node))
        accepted[node] =
            accepted_repositories(boot::policy_config(nodes_.at(node)->config()), relays, 0);
      auto repository = state_repository(*action->event);
      auto tips = state_tips(*action->event);
      if (accepted[node].count(repository) && !tips.empty()) out.commits[repository] = tips.front();
    }
    return out;
  }

  /// After every hold ended: each node keeps a repository exactly for each announcement it stores
  /// (held ones that expired were removed), with the commit of every state it stores.
  void check_repositories() {
    for (std::size_t i = 0; i < nodes_.size(); ++i) {
      std::set<RepositoryRef> stored_repositories;
      std::vector<nostr::Event> stored_states;
      nodes_[i]->store().for_each([&](std::string_view json) {
        auto ev = nostr::parse_event(json, nostr::ParseLimits{});
        if (ev && ev->kind == nostr::nip34::kind::repo_announcement)
          stored_repositories.insert({ev->pubkey, std::string(ev->d_tag())});
        if (ev && ev->kind == nostr::nip34::kind::repo_state) stored_states.push_back(*ev);
        return true;
      });
      const auto& disk = *disks_[i];
      ++result_.properties_checked;
      for (const auto& [repository, repo] : disk.repositories)
        if (!stored_repositories.count(repository))
          violate("node " + std::to_string(i) + " keeps repository " + repository.identifier +
                  ", whose announcement it does not store (its hold should have ended it)");
      for (const auto& repository : stored_repositories)
        if (!disk.repositories.count(repository))
          violate("node " + std::to_string(i) + " stores the announcement of " +
                  repository.identifier + " but has no repository for it");
      for (const auto& state : stored_states) {
        auto repo = disk.repositories.find(state_repository(state));
        for (const auto& tip : state_tips(state))
          if (repo == disk.repositories.end() || !repo->second.commits.count(tip))
            violate("node " + std::to_string(i) + " serves state " +
                    nostr::to_hex(state.id).substr(0, 12) + " without its commit " + tip);
      }
    }
  }

  std::string describe_event(const nostr::EventId& id) const {
    std::string where;
    std::string kind = "?";
    for (std::size_t r = 0; r < network_.relay_count(); ++r) {
      const auto& relay = network_.relay(r);
      auto it = relay.events.find(id);
      if (it == relay.events.end()) continue;
      kind = std::to_string(it->second.first.kind);
      where += (where.empty() ? "" : ",") + std::to_string(r);
    }
    return "event " + nostr::to_hex(id).substr(0, 12) + " (kind " + kind + ", on relays " +
           (where.empty() ? "none" : where) + ")";
  }

  void finish() {
    for (const auto& node : nodes_) add_totals(*node);
    const auto& counts = network_.counts();
    result_.frames = counts.frames;
    result_.negentropy_rounds = counts.negentropy_rounds;
    result_.peer_frames = counts.peer_frames;
    result_.dials = counts.dials;
    result_.max_open_subscriptions = counts.max_open_subscriptions;
    result_.simulated_seconds = static_cast<double>(now_ms()) / 1000.0;
  }

  void trace(std::size_t node, const std::string& what) {
    auto line = std::to_string(now_ms()) + " " + what;
    hash(std::to_string(node) + "|" + line);
    if (options_.print_trace) std::printf("n%zu %s\n", node, line.c_str());
    auto& tail = result_.node_traces.at(node);
    tail.push_back(std::move(line));
    if (tail.size() > trace_tail && !options_.keep_full_trace) tail.pop_front();
  }

  void trace_all(const std::string& what) {
    for (std::size_t i = 0; i < nodes_.size(); ++i) trace(i, what);
  }

  void hash(const std::string& line) {
    ++result_.trace_lines;
    for (unsigned char c : line) {
      result_.trace_hash ^= c;
      result_.trace_hash *= 1099511628211ull;
    }
  }

  void violate(const std::string& what) {
    result_.violations.push_back("t=" + std::to_string(now_ms() / 1000) + "s " + what);
  }

  SimOptions options_;
  RunResult& result_;
  test::TempDir dir_{"graspd-sim", scratch_parent()};
  SimNetwork network_;
  /// Each node's repositories, kept across its restarts.
  std::vector<std::shared_ptr<SimGitDisk>> disks_;
  /// The push actions played so far (they name what git data exists).
  std::vector<const Action*> pushed_;
  std::vector<std::unique_ptr<SimNode>> nodes_;
  TestingConfig config_;
  std::unique_ptr<caf::actor_system> system_;
  caf::scheduler::test_coordinator* scheduler_ = nullptr;
  caf::actor_clock::time_point start_;
};

}  // namespace

RunResult run(const SimOptions& options, const std::vector<Action>& actions, std::size_t prefix) {
  RunResult result;
  result.trace_hash = 14695981039346656037ull;
  auto wall = std::chrono::steady_clock::now();
  {
    World world(options, result);
    world.play(actions, prefix);
  }
  result.wall_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall).count();
  return result;
}

std::size_t shrink(const SimOptions& options, const std::vector<Action>& actions) {
  std::size_t low = 0;  // passes (an empty schedule must pass; if not, 0 is the answer)
  std::size_t high = actions.size();
  if (!run(options, actions, 0).ok()) return 0;
  while (high - low > 1) {
    auto mid = low + (high - low) / 2;
    if (run(options, actions, mid).ok())
      low = mid;
    else
      high = mid;
  }
  return high;
}

std::string report(const SimOptions& options, const std::vector<Action>& actions,
                   const RunResult& failed, std::size_t shrunk_prefix, const RunResult& shrunk) {
  std::ostringstream out;
  out << "VIOLATION seed " << options.seed << " (" << options.nodes << " nodes, " << options.relays
      << " relays, " << options.seconds << " s)\n";
  for (const auto& v : failed.violations) out << "  " << v << "\n";
  out << "shortest failing prefix: " << shrunk_prefix << " of " << actions.size() << " actions\n";
  for (std::size_t i = 0; i < shrunk_prefix && i < actions.size(); ++i)
    out << "  [" << i << "] " << describe(actions[i]) << "\n";
  out << "its violations:\n";
  for (const auto& v : shrunk.violations) out << "  " << v << "\n";
  // Around the failure: each node's lines naming an event a violation names, then its last lines.
  std::vector<std::string> ids;
  for (const auto& v : shrunk.violations)
    if (auto at = v.find("event "); at != std::string::npos) ids.push_back(v.substr(at + 6, 12));
  const auto& traces = shrunk.ok() ? failed.node_traces : shrunk.node_traces;
  for (std::size_t n = 0; n < traces.size(); ++n) {
    out << "trace of node " << n << " (ms since start), lines naming the events above:\n";
    for (const auto& line : traces[n])
      for (const auto& id : ids)
        if (line.find(id) != std::string::npos) {
          out << "  " << line << "\n";
          break;
        }
    out << "trace of node " << n << ", last lines:\n";
    auto first = traces[n].size() > trace_tail ? traces[n].size() - trace_tail : 0;
    for (auto i = first; i < traces[n].size(); ++i) out << "  " << traces[n][i] << "\n";
  }
  return out.str();
}

}  // namespace graspd::sim
