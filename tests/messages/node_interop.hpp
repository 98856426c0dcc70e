// Running node with the JavaScript reference packages of tests/interop
// (nostr-tools, pinned in package-lock.json, installed by deploy/install-deps.sh).
// Test targets that include this define GRASPD_SOURCE_DIR_FALLBACK.
#pragma once

#include <gtest/gtest.h>

#include <sys/wait.h>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

namespace graspd::nostr::testing {

inline std::filesystem::path source_dir() {
  if (const char* env = std::getenv("GRASPD_SOURCE_DIR")) return env;
  return GRASPD_SOURCE_DIR_FALLBACK;
}

inline std::filesystem::path interop_dir() {
  return source_dir() / "tests" / "interop";
}

struct CommandResult {
  int exit_code = -1;
  std::vector<std::string> lines;  // stdout, without newlines
};

/// Runs `command` through the shell and collects its output lines.
inline CommandResult run_command(const std::string& command) {
  CommandResult result;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return result;
  std::string line;
  char buf[4096];
  while (std::fgets(buf, sizeof buf, pipe) != nullptr) {
    line += buf;
    if (!line.empty() && line.back() == '\n') {
      line.pop_back();
      result.lines.push_back(std::move(line));
      line.clear();
    }
  }
  if (!line.empty()) result.lines.push_back(std::move(line));
  const int status = pclose(pipe);
  if (status != -1 && WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  return result;
}

/// Not a skip: CI must run the cross-checks. deploy/install-deps.sh runs `npm ci` there.
inline void require_node_and_nostr_tools() {
  ASSERT_TRUE(
      std::filesystem::exists(interop_dir() / "node_modules" / "nostr-tools" / "package.json"))
      << "nostr-tools is not installed in " << interop_dir()
      << "/node_modules: run deploy/install-deps.sh (or `npm ci` in tests/interop)";
  ASSERT_EQ(std::system("node --version > /dev/null 2>&1"), 0) << "node is not on PATH";
}

}  // namespace graspd::nostr::testing
