// Running the JavaScript interop scripts (tests/interop, nostr-tools) and other external programs
// from integration tests.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>

namespace graspd::test {

/// tests/interop of the source tree (GRASPD_SOURCE_DIR when set, else relative to this header).
inline std::filesystem::path interop_dir() {
  if (const char* source = std::getenv("GRASPD_SOURCE_DIR"))
    return std::filesystem::path(source) / "tests" / "interop";
  return std::filesystem::path(__FILE__).parent_path().parent_path() / "interop";
}

/// Runs `command` in a shell; its stdout and stderr together, `status` as pclose returns it.
inline std::string run_command(const std::string& command, int& status) {
  struct Closer {
    void operator()(FILE* f) const { pclose(f); }
  };
  std::unique_ptr<FILE, Closer> pipe(popen((command + " 2>&1").c_str(), "r"));
  if (!pipe) {
    status = -1;
    return "popen failed";
  }
  std::string output;
  char buffer[1024];
  while (std::fgets(buffer, sizeof buffer, pipe.get())) output += buffer;
  status = pclose(pipe.release());
  return output;
}

}  // namespace graspd::test
