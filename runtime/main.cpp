// graspd entry point: parse the configuration, then run the daemon (or a subcommand).
#include <iostream>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/boot/daemon.hpp"
#include "runtime/boot/sync_command.hpp"
#include "runtime/cli/check_config.hpp"
#include "runtime/cli/check_git.hpp"
#include "runtime/cli/store_commands.hpp"
#include "runtime/config/config.hpp"
#include "runtime/config/relay_key.hpp"
#include "runtime/ops/log.hpp"
#include "runtime/ops/version.hpp"

namespace {

/// Exit code for configuration and usage errors.
constexpr int usage_error = 2;

/// Puts the relay key into `config` (docs/identity.md), logging where it came from (a warning when
/// it was generated); false, with the reason on stderr, when there is none to be had.
bool resolve_relay_key(graspd::runtime::Config& config) {
  using namespace graspd::runtime;
  auto relay_key = load_relay_key(config, process_environment(), system_key_generator());
  if (!relay_key) {
    std::cerr << "graspd: " << relay_key.error().message << "\n";
    return false;
  }
  if (relay_key->source == RelayKeySource::generated)
    graspd::log::warn("config", describe(*relay_key));
  else
    graspd::log::info("config", describe(*relay_key));
  config.relay_key = relay_key->key;
  return true;
}

int run_daemon(const std::vector<std::string>& args) {
  using namespace graspd::runtime;
  auto loaded = load_config(args, process_environment());
  if (!loaded) {
    std::cerr << "graspd: " << loaded.error().message << "\n";
    return usage_error;
  }
  auto& result = loaded.value();
  switch (result.action) {
    case Action::help:
      std::cout << help_text();
      return 0;
    case Action::version:
      std::cout << "graspd " << version() << "\n";
      return 0;
    case Action::run:
      break;
  }
  graspd::log::set_level(result.config.log_level);
  for (const auto& warning : result.warnings) graspd::log::warn("config", warning);
  if (!resolve_relay_key(result.config)) return usage_error;
  return graspd::boot::Daemon{std::move(result.config)}.run();
}

}  // namespace

int main(int argc, char** argv) {
  // Subcommands dispatch on args[0] before the daemon's options are parsed.
  if (graspd::runtime::is_store_command(argc, argv))
    return graspd::runtime::run_store_command(argc, argv);
  if (graspd::boot::is_sync_command(argc, argv))
    return graspd::boot::run_sync_command(std::vector<std::string>(argv + 2, argv + argc));
  if (argc >= 2 && std::string_view(argv[1]) == "check-config") {
    using namespace graspd::runtime;
    return run_check_config(std::vector<std::string>(argv + 2, argv + argc), process_environment(),
                            process_environment_names(), std::cout, std::cerr);
  }
  if (argc >= 2 && std::string_view(argv[1]) == "check-git")
    return graspd::runtime::run_check_git(std::vector<std::string>(argv + 2, argv + argc),
                                          graspd::runtime::process_environment(), std::cout,
                                          std::cerr);
  return run_daemon(std::vector<std::string>(argv + 1, argv + argc));
}
