#include "runtime/cli/check_config.hpp"

#include <unistd.h>

#include <filesystem>
#include <ostream>
#include <string_view>
#include <utility>

#include "runtime/ops/version.hpp"

extern char** environ;

namespace graspd::runtime {

namespace {

constexpr int kConfigError = 2;

/// Options whose value must not be echoed: those the table marks secret (NGIT_RELAY_OWNER_NSEC),
/// and by name (and an nsec pasted anywhere) so a future key, token or password option is covered
/// even unmarked. A `_file` option holds where a secret is, not the secret: its path is shown.
bool is_secret(const EffectiveOption& option) {
  if (option.spec->secret) return true;
  std::string_view key = option.spec->key;
  const bool names_a_path = key.size() >= 5 && key.substr(key.size() - 5) == "_file";
  if (!names_a_path)
    for (std::string_view word : {"secret", "password", "token", "nsec", "private"})
      if (key.find(word) != std::string_view::npos) return true;
  return option.value.find("nsec1") != std::string::npos;
}

/// The nearest existing ancestor of `path` must be a writable directory for the daemon to
/// create its store there; returns why not, empty when it is fine.
std::string unwritable_reason(const std::filesystem::path& path) {
  std::error_code error;
  auto at = std::filesystem::absolute(path, error);
  while (!at.empty() && !std::filesystem::exists(at, error)) {
    if (at == at.parent_path()) break;
    at = at.parent_path();
  }
  if (!std::filesystem::is_directory(at, error)) return at.string() + " is not a directory";
  if (::access(at.c_str(), W_OK) != 0) return at.string() + " is not writable by this user";
  return {};
}

void warn_unknown_environment(const std::vector<std::string>& names, std::ostream& err) {
  for (const auto& name : names) {
    if (name.rfind("NGIT_", 0) != 0) continue;
    bool known = false;
    for (const auto& spec : option_table()) known = known || spec.env == name;
    if (!known) err << "warning: environment variable " << name << " is not a graspd option\n";
  }
}

void print_effective(const LoadedConfig& loaded, std::ostream& out) {
  out << "# graspd " << version() << " effective configuration";
  if (!loaded.config.config_file.empty())
    out << " (config file " << loaded.config.config_file << ")";
  out << "\n";
  for (const auto& option : loaded.effective) {
    auto value = is_secret(option) ? std::string("(elided)") : option.value;
    out << option.spec->key << " = \"" << value << "\"";
    if (option.set_explicitly) out << "  # from " << option.origin;
    out << "\n";
  }
}

}  // namespace

std::vector<std::string> process_environment_names() {
  std::vector<std::string> names;
  for (char** entry = environ; entry && *entry; ++entry) {
    std::string_view text = *entry;
    names.emplace_back(text.substr(0, text.find('=')));
  }
  return names;
}

int run_check_config(const std::vector<std::string>& args, const EnvironmentLookup& environment,
                     const std::vector<std::string>& environment_names, std::ostream& out,
                     std::ostream& err) {
  auto loaded = load_config(args, environment);
  if (!loaded) {
    err << "graspd check-config: " << loaded.error().message << "\n";
    return kConfigError;
  }
  auto& result = loaded.value();
  if (result.action != Action::run) {
    err << "usage: graspd check-config [--config FILE] [--option VALUE]...\n";
    return result.action == Action::help ? 0 : kConfigError;
  }
  for (const auto& warning : result.warnings) err << "warning: " << warning << "\n";
  warn_unknown_environment(environment_names, err);
  const std::pair<std::string_view, const std::string*> paths[] = {
      {"relay_data_path", &result.config.data_path},
      {"git_data_path", &result.config.git_data_path}};
  for (auto [key, path] : paths) {
    if (auto why = unwritable_reason(*path); !why.empty())
      err << "warning: " << key << " \"" << *path << "\": " << why << "\n";
  }
  print_effective(result, out);
  err << "configuration OK\n";
  return 0;
}

}  // namespace graspd::runtime
