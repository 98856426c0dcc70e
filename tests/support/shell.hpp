// Shell commands for end-to-end tests: run one (stdout and stderr together) in a directory and
// read its exit code and output.
#pragma once

#include <sys/wait.h>

#include <cstdio>
#include <string>

namespace graspd::test {

struct ShellResult {
  int exit_code = -1;
  std::string output;
};

/// Runs `command` with `sh` in `dir`; stdout and stderr together.
inline ShellResult run_shell(const std::string& dir, const std::string& command) {
  const std::string full = "cd '" + dir + "' && " + command + " 2>&1";
  ShellResult out;
  FILE* pipe = ::popen(full.c_str(), "r");
  if (!pipe) return out;
  char buffer[4096];
  while (std::size_t n = std::fread(buffer, 1, sizeof buffer, pipe)) out.output.append(buffer, n);
  int status = ::pclose(pipe);
  out.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return out;
}

}  // namespace graspd::test
