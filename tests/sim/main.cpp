// graspd-sim: runs seeded (or hand-written) schedules against a simulated mesh of graspd nodes and
// plain relays and checks the sync properties (docs/simulation.md). Exit status 1 when a property
// is violated, 2 on bad arguments.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "runtime/ops/log.hpp"
#include "tests/sim/world.hpp"

namespace {

using graspd::sim::Action;
using graspd::sim::SimOptions;

constexpr const char* usage =
    "usage: graspd-sim [--seed N | --seeds A-B | --scenario FILE] [--nodes N] [--relays M]\n"
    "                  [--seconds S] [--repos R] [--publications P] [--faults-per-hour F]\n"
    "                  [--restarts-per-hour R] [--min-limit-cap C] [--no-shrink] [--quiet]\n"
    "                  [--cluster] [--trace]\n";

struct Args {
  SimOptions options;
  std::uint64_t first = 1;
  std::uint64_t last = 1;
  std::string scenario;
  bool shrink = true;
  bool quiet = false;
};

bool parse_uint(const std::string& text, std::uint64_t& out) {
  if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos) return false;
  out = std::strtoull(text.c_str(), nullptr, 10);
  return true;
}

bool parse_args(int argc, char** argv, Args& args) {
  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i];
    if (flag == "--no-shrink") {
      args.shrink = false;
      continue;
    }
    if (flag == "--trace") {
      args.options.print_trace = true;
      continue;
    }
    if (flag == "--quiet") {
      args.quiet = true;
      continue;
    }
    if (flag == "--cluster") {
      args.options.cluster = true;
      continue;
    }
    if (i + 1 >= argc) return false;
    std::string value = argv[++i];
    std::uint64_t n = 0;
    if (flag == "--seed" && parse_uint(value, n)) {
      args.first = args.last = n;
    } else if (flag == "--seeds") {
      auto dash = value.find('-');
      if (dash == std::string::npos || !parse_uint(value.substr(0, dash), args.first) ||
          !parse_uint(value.substr(dash + 1), args.last) || args.last < args.first)
        return false;
    } else if (flag == "--scenario") {
      args.scenario = value;
    } else if (flag == "--nodes" && parse_uint(value, n) && n >= 1 && n <= 16) {
      args.options.nodes = n;
    } else if (flag == "--relays" && parse_uint(value, n) && n >= 1 && n <= 16) {
      args.options.relays = n;
    } else if (flag == "--seconds" && parse_uint(value, n) && n >= 1) {
      args.options.seconds = static_cast<std::int64_t>(n);
    } else if (flag == "--repos" && parse_uint(value, n) && n >= 1) {
      args.options.repos = n;
    } else if (flag == "--publications" && parse_uint(value, n)) {
      args.options.publications = n;
    } else if (flag == "--min-limit-cap" && parse_uint(value, n) && n >= 1) {
      args.options.min_limit_cap = n;
    } else if (flag == "--faults-per-hour") {
      args.options.faults_per_hour = std::strtod(value.c_str(), nullptr);
    } else if (flag == "--restarts-per-hour") {
      args.options.restarts_per_hour = std::strtod(value.c_str(), nullptr);
    } else {
      return false;
    }
  }
  return true;
}

/// Runs one schedule; prints the failure report (shrunk) on a violation.
bool run_one(const std::string& name, const SimOptions& options, const std::vector<Action>& actions,
             bool shrink, bool quiet, graspd::sim::RunResult& total) {
  auto result = graspd::sim::run(options, actions);
  total.publications += result.publications;
  total.deletions += result.deletions;
  total.faults += result.faults;
  total.restarts += result.restarts;
  total.pushes += result.pushes;
  total.git_fetches += result.git_fetches;
  total.frames += result.frames;
  total.negentropy_rounds += result.negentropy_rounds;
  total.peer_frames += result.peer_frames;
  total.properties_checked += result.properties_checked;
  total.consolidations += result.consolidations;
  total.daily_syncs += result.daily_syncs;
  total.simulated_seconds += result.simulated_seconds;
  if (!quiet || !result.ok())
    std::printf(
        "%s: %s, %llu publications (%llu deletions), %llu faults, %llu restarts, %llu events "
        "stored, "
        "trace %016llx, %.0f s simulated in %.2f s\n",
        name.c_str(), result.ok() ? "ok" : "VIOLATED",
        static_cast<unsigned long long>(result.publications),
        static_cast<unsigned long long>(result.deletions),
        static_cast<unsigned long long>(result.faults),
        static_cast<unsigned long long>(result.restarts),
        static_cast<unsigned long long>(result.stored_events),
        static_cast<unsigned long long>(result.trace_hash), result.simulated_seconds,
        result.wall_seconds);
  if (result.ok()) return true;
  auto prefix = shrink ? graspd::sim::shrink(options, actions) : actions.size();
  auto traced = options;
  traced.keep_full_trace = true;
  auto shrunk = graspd::sim::run(traced, actions, prefix);
  std::cout << graspd::sim::report(options, actions, result, prefix, shrunk) << std::flush;
  total.violations.push_back(name);
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  if (!parse_args(argc, argv, args)) {
    std::cerr << usage;
    return 2;
  }
  // The nodes' own logs would drown the report; warnings and errors still show.
  graspd::log::set_level(graspd::log::Level::warn);
  const auto wall = std::chrono::steady_clock::now();
  graspd::sim::RunResult total;
  std::uint64_t runs = 0;
  if (!args.scenario.empty()) {
    std::ifstream in(args.scenario);
    std::stringstream text;
    text << in.rdbuf();
    if (!in) {
      std::cerr << "graspd-sim: cannot read " << args.scenario << "\n";
      return 2;
    }
    std::vector<Action> actions;
    if (auto error = graspd::sim::parse_scenario(text.str(), args.options, actions)) {
      std::cerr << "graspd-sim: " << args.scenario << ": " << error->message << "\n";
      return 2;
    }
    run_one("scenario " + args.scenario, args.options, actions, args.shrink, args.quiet, total);
    runs = 1;
  } else {
    for (auto seed = args.first; seed <= args.last; ++seed, ++runs) {
      args.options.seed = seed;
      run_one("seed " + std::to_string(seed), args.options, graspd::sim::generate(args.options),
              args.shrink, args.quiet, total);
    }
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall).count();
  std::printf(
      "graspd-sim: %llu runs (%zu nodes, %zu relays), %llu violated; %llu publications "
      "(%llu deletions), "
      "%llu faults, %llu restarts, %llu pushes, %llu git fetches, %llu frames (%llu between "
      "nodes), %llu NIP-77 rounds, %llu consolidations, "
      "%llu daily resyncs, "
      "%llu property checks; %.1f h simulated in "
      "%.1f s wall (%.0f simulated h per wall s)\n",
      static_cast<unsigned long long>(runs), args.options.nodes, args.options.relays,
      static_cast<unsigned long long>(total.violations.size()),
      static_cast<unsigned long long>(total.publications),
      static_cast<unsigned long long>(total.deletions),
      static_cast<unsigned long long>(total.faults),
      static_cast<unsigned long long>(total.restarts),
      static_cast<unsigned long long>(total.pushes),
      static_cast<unsigned long long>(total.git_fetches),
      static_cast<unsigned long long>(total.frames),
      static_cast<unsigned long long>(total.peer_frames),
      static_cast<unsigned long long>(total.negentropy_rounds),
      static_cast<unsigned long long>(total.consolidations),
      static_cast<unsigned long long>(total.daily_syncs),
      static_cast<unsigned long long>(total.properties_checked), total.simulated_seconds / 3600.0,
      seconds, seconds > 0 ? total.simulated_seconds / 3600.0 / seconds : 0.0);
  return total.violations.empty() ? 0 : 1;
}
