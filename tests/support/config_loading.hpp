// Loads a Config the way the daemon does (arguments plus an environment), for the tests of the
// option table and of what reads it.
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "runtime/config/config.hpp"

namespace graspd::test {

using Env = std::map<std::string, std::string>;

/// An environment holding exactly `env`.
inline runtime::EnvironmentLookup lookup(const Env& env) {
  return [env](std::string_view name) -> std::optional<std::string> {
    auto it = env.find(std::string(name));
    if (it == env.end()) return std::nullopt;
    return it->second;
  };
}

/// The configuration `args` and `env` give, or the error naming the option.
inline Result<runtime::LoadedConfig, runtime::ConfigError> load(
    const std::vector<std::string>& args, const Env& env = {}) {
  return runtime::load_config(args, lookup(env));
}

/// The configuration `args` and `env` give; a test failure (and a default Config) on an error.
inline runtime::Config load_ok(const std::vector<std::string>& args, const Env& env = {}) {
  auto result = load(args, env);
  if (!result) {
    ADD_FAILURE() << result.error().message;
    return {};
  }
  return result.value().config;
}

}  // namespace graspd::test
