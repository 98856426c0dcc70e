// Loading the configuration: command line, environment and config file over the table defaults
// (config_table.cpp), then the checks that span options; and the --help text.
#include "runtime/config/config.hpp"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>

namespace graspd::runtime {

namespace {

// ---- loading ----

std::string in_quotes(std::string_view value) {
  return "\"" + std::string(value) + "\"";
}

ConfigError invalid(std::string_view source, std::string_view value, std::string_view expected) {
  return {config_errc::invalid_value,
          "invalid " + std::string(source) + " " + in_quotes(value) + ": " + std::string(expected)};
}

const OptionSpec* find_by(std::string_view OptionSpec::*field, std::string_view name) {
  for (const auto& spec : option_table()) {
    if (spec.*field == name) return &spec;
  }
  return nullptr;
}

/// Values by option key, remembering where each came from for error messages.
struct Source {
  std::string value;
  std::string origin;  // e.g. "NGIT_LOG_LEVEL", "--log-level", "log_level (graspd.conf:3)"
};
using Assignments = std::map<std::string_view, Source>;

struct CommandLine {
  Action action = Action::run;
  std::string config_file;
  Assignments flags;
};

Result<CommandLine, ConfigError> parse_args(const std::vector<std::string>& args) {
  CommandLine result;
  for (std::size_t i = 0; i < args.size(); ++i) {
    std::string_view arg = args[i];
    if (arg == "--help" || arg == "-h") {
      result.action = Action::help;
      continue;
    }
    if (arg == "--version" || arg == "-V") {
      result.action = Action::version;
      continue;
    }
    if (arg.substr(0, 2) != "--")
      return ConfigError{config_errc::unexpected_argument, "unexpected argument " + in_quotes(arg)};
    std::string_view name = arg;
    std::optional<std::string> value;
    if (auto equals = arg.find('='); equals != std::string_view::npos) {
      name = arg.substr(0, equals);
      value = std::string(arg.substr(equals + 1));
    }
    const OptionSpec* spec = nullptr;
    if (name != "--config") {
      spec = find_by(&OptionSpec::flag, name);
      if (!spec)
        return ConfigError{config_errc::unknown_option,
                           "unknown option " + in_quotes(name) + " (see graspd --help)"};
    }
    if (!value) {
      if (i + 1 >= args.size())
        return ConfigError{config_errc::missing_value,
                           "option " + std::string(name) + " needs a value"};
      value = args[++i];
    }
    if (spec) {
      result.flags[spec->key] = Source{*value, std::string(name)};
    } else {
      result.config_file = *value;
    }
  }
  return result;
}

Result<Assignments, ConfigError> read_config_file(const std::string& path) {
  std::ifstream file(path);
  if (!file) {
    return ConfigError{config_errc::unreadable_file, "invalid --config " + in_quotes(path) +
                                                         ": expected a readable config file (" +
                                                         std::strerror(errno) + ")"};
  }
  Assignments result;
  std::string line;
  for (int number = 1; std::getline(file, line); ++number) {
    std::string_view text = line;
    if (auto hash = text.find('#'); hash != std::string_view::npos) text = text.substr(0, hash);
    text = trim(text);
    if (text.empty()) continue;
    auto where = path + ":" + std::to_string(number);
    auto equals = text.find('=');
    if (equals == std::string_view::npos) {
      return ConfigError{config_errc::invalid_line,
                         "invalid line in " + where + ": expected key = value"};
    }
    auto key = trim(text.substr(0, equals));
    auto value = trim(text.substr(equals + 1));
    if (value.size() >= 2 && value.front() == '"' && value.back() == '"') {
      value = value.substr(1, value.size() - 2);
    }
    const auto* spec = find_by(&OptionSpec::key, key);
    if (!spec)
      return ConfigError{config_errc::unknown_option,
                         "unknown key " + in_quotes(key) + " in " + where};
    result[spec->key] = Source{std::string(value), std::string(key) + " (" + where + ")"};
  }
  return result;
}

/// GRASP-05's fatal combinations (as ngit-grasp's): a service list beside the other archive
/// sources, read-only without a source, a repository whitelist while read-only. Derives whether
/// read-only is in effect.
std::optional<ConfigError> check_archive_options(Config& config) {
  const bool any_source = config.archive_all || !config.archive_whitelist.empty() ||
                          !config.archive_grasp_services.empty();
  auto inconsistent = [](std::string message) {
    return ConfigError{config_errc::inconsistent_options, std::move(message)};
  };
  if (!config.archive_grasp_services.empty() &&
      (config.archive_all || !config.archive_whitelist.empty()))
    return inconsistent(
        "invalid NGIT_ARCHIVE_GRASP_SERVICES: expected it alone, not with NGIT_ARCHIVE_ALL or "
        "NGIT_ARCHIVE_WHITELIST (one archive source at a time)");
  config.archive_read_only = config.archive_read_only_option.value_or(any_source);
  if (config.archive_read_only && !any_source)
    return inconsistent(
        "invalid NGIT_ARCHIVE_READ_ONLY \"true\": expected an archive source as well "
        "(NGIT_ARCHIVE_ALL, NGIT_ARCHIVE_WHITELIST or NGIT_ARCHIVE_GRASP_SERVICES)");
  if (config.archive_read_only && !config.repository_whitelist.empty())
    return inconsistent(
        "invalid NGIT_REPOSITORY_WHITELIST: a read-only archive hosts nothing, so there is "
        "nothing for it to curate (set NGIT_ARCHIVE_READ_ONLY=false to host as well)");
  return std::nullopt;
}

Result<void, ConfigError> check_consistency(Config& config) {
  if (config.domain.text.empty())
    config.domain = domain_of(config.bind_address, config.bind_address.port);
  if (config.sync_daily_resync_min_secs > config.sync_daily_resync_max_secs) {
    return ConfigError{config_errc::inconsistent_options,
                       "invalid NGIT_SYNC_DAILY_RESYNC_MIN_SECS \"" +
                           std::to_string(config.sync_daily_resync_min_secs) +
                           "\": expected at most NGIT_SYNC_DAILY_RESYNC_MAX_SECS (" +
                           std::to_string(config.sync_daily_resync_max_secs) + ")"};
  }
  if (auto error = check_archive_options(config)) return *error;
  if (config.sync_base_backoff_secs > config.sync_max_backoff_secs) {
    return ConfigError{config_errc::inconsistent_options,
                       "invalid NGIT_SYNC_BASE_BACKOFF_SECS \"" +
                           std::to_string(config.sync_base_backoff_secs) +
                           "\": expected at most NGIT_SYNC_MAX_BACKOFF_SECS (" +
                           std::to_string(config.sync_max_backoff_secs) + ")"};
  }
  return {};
}

}  // namespace

EnvironmentLookup process_environment() {
  return [](std::string_view name) -> std::optional<std::string> {
    const char* value = std::getenv(std::string(name).c_str());
    if (!value) return std::nullopt;
    return std::string(value);
  };
}

Result<LoadedConfig, ConfigError> load_config(const std::vector<std::string>& args,
                                              const EnvironmentLookup& environment) {
  auto command_line = parse_args(args);
  if (!command_line) return command_line.error();
  auto& flags = *command_line;

  LoadedConfig loaded;
  loaded.action = flags.action;
  if (flags.action != Action::run) return loaded;

  Assignments from_file;
  auto config_file = flags.config_file;
  if (config_file.empty()) config_file = environment("GRASPD_CONFIG").value_or("");
  if (!config_file.empty()) {
    auto file = read_config_file(config_file);
    if (!file) return file.error();
    from_file = std::move(*file);
    loaded.config.config_file = config_file;
  }

  for (const auto& spec : option_table()) {
    Source chosen{std::string(spec.default_value), "default of " + std::string(spec.env)};
    bool set_explicitly = true;
    if (auto it = flags.flags.find(spec.key); it != flags.flags.end()) {
      chosen = it->second;
    } else if (auto value = environment(spec.env)) {
      chosen = Source{*value, std::string(spec.env)};
    } else if (auto it = from_file.find(spec.key); it != from_file.end()) {
      chosen = it->second;
    } else {
      set_explicitly = false;
    }
    if (spec.secret && set_explicitly && trim(chosen.value).empty())
      return invalid(chosen.origin, "", "expected a value (set empty: unset it instead)");
    if (auto expected = spec.set(loaded.config, chosen.value)) {
      // A secret is not echoed, not even a wrong one (it may be a real key with a typo).
      return invalid(chosen.origin, spec.secret ? "(elided)" : chosen.value, *expected);
    }
    loaded.effective.push_back({&spec, chosen.value, chosen.origin, set_explicitly});
    if (set_explicitly && !spec.no_effect_yet.empty()) {
      loaded.warnings.push_back(chosen.origin +
                                " has no effect yet: " + std::string(spec.no_effect_yet));
    }
  }
  if (auto consistent = check_consistency(loaded.config); !consistent) return consistent.error();
  // An identifier alone archives that name under every owner: anyone can claim it.
  for (const auto& rule : loaded.config.archive_whitelist)
    if (!rule.owner && rule.identifier)
      loaded.warnings.push_back("NGIT_ARCHIVE_WHITELIST entry \"" + *rule.identifier +
                                "\" names no owner: any author's repository of that name is "
                                "archived");
  return loaded;
}

std::string help_text() {
  std::ostringstream text;
  text
      << "graspd - GRASP relay daemon (git over Nostr)\n\n"
         "Usage:\n"
         "  graspd [--config FILE] [--option VALUE | --option=VALUE]...   run the daemon\n"
         "  graspd --help                                                 this text\n"
         "  graspd --version                                              print the version\n"
         "  graspd check-config [--config FILE] [--option VALUE]...       validate, print the\n"
         "                                                                effective configuration\n"
         "  graspd check-git [--repair] [--option VALUE]...               compare repositories'\n"
         "                                                                refs with their state\n"
         "                                                                events (and repair)\n"
         "  graspd stats [--data PATH]                                    store counts, size\n"
         "  graspd export | import | sync ...                             see "
         "docs/operations.md\n\n"
         "Every option is read from its flag, else its environment variable, else the config\n"
         "file (--config FILE or GRASPD_CONFIG; lines `key = value`, # comments), else its\n"
         "default. See docs/configuration.md.\n\n"
         "Options:\n";
  for (const auto& spec : option_table()) {
    // A secret has no flag: the option is listed by its environment variable.
    text << "  " << (spec.flag.empty() ? spec.env : spec.flag) << " <" << spec.type << ">"
         << (spec.flag.empty() ? "  (no flag: environment or config file only)" : "") << "\n"
         << "      env " << spec.env << ", file key " << spec.key << ", default "
         << (spec.default_value.empty() ? std::string("(empty)") : in_quotes(spec.default_value))
         << "\n      " << spec.description << "\n";
    if (!spec.no_effect_yet.empty()) text << "      No effect yet: " << spec.no_effect_yet << ".\n";
  }
  return text.str();
}

void adopt_bound_port(Config& config, std::uint16_t port) {
  if (config.bind_address.port != 0 || config.domain.text != config.bind_address.text) return;
  config.domain = domain_of(config.bind_address, port);
  config.bind_address.port = port;
}

}  // namespace graspd::runtime
