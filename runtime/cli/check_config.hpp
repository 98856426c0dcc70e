// `graspd check-config [--config FILE] [--option VALUE]...`: loads the configuration exactly as the
// daemon would (flags, environment, file, defaults), reports errors and warnings, and prints the
// effective configuration in config-file syntax with each value's origin and secrets elided.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include "runtime/config/config.hpp"

namespace graspd::runtime {

/// Runs the check on `args` (after "check-config"). Returns 0 when the configuration is valid,
/// 2 (the daemon's configuration-error code) otherwise; the error names the option.
/// `environment_names` lists the names of the environment variables set (for unknown NGIT_*).
int run_check_config(const std::vector<std::string>& args, const EnvironmentLookup& environment,
                     const std::vector<std::string>& environment_names, std::ostream& out,
                     std::ostream& err);

/// The names of the process's environment variables.
std::vector<std::string> process_environment_names();

}  // namespace graspd::runtime
