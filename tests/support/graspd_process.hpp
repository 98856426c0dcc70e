// Runs the real graspd binary (path from env GRASPD_BINARY) for end-to-end tests: on a free
// loopback port, with a temporary data directory (the event store, the relay key file, and git
// repositories unless NGIT_GIT_DATA_PATH is given), stderr captured to a file, readiness awaited
// with a deadline (the "listening on" log line, then GET /healthz). Stops with SIGTERM and reports
// the exit code; kill -9 and restart on the same data directory (and port) on demand.
//
//   graspd::test::GraspdProcess graspd({.env = {{"NGIT_RELAY_NAME", "t"}}});
//   ASSERT_TRUE(graspd.start()) << graspd.stderr_text();
//   auto reply = graspd::test::http_get(graspd.port(), "/healthz");
//   EXPECT_EQ(graspd.stop(), 0);
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tests/support/temp_dir.hpp"

namespace graspd::test {

struct GraspdOptions {
  std::vector<std::pair<std::string, std::string>> env;  ///< added to the inherited environment
  std::vector<std::string> args;                         ///< extra command-line arguments
  /// NGIT_PURGATORY_ENABLED for the run. Off unless a test turns it on: most tests publish
  /// announcements without pushing git data and expect them served at once. An `env` entry wins.
  bool purgatory = false;
  /// The loopback port to listen on; 0 = any free one. A cluster's nodes name each other
  /// (NGIT_SYNC_PEERS) before they start, so their ports are chosen first (free_port()).
  std::uint16_t port = 0;
  /// A command graspd runs under (absolute path first, then its arguments), e.g. valgrind: the
  /// process keeps its pid across the launcher's exec. Empty: graspd itself.
  std::vector<std::string> launcher{};
};

/// A loopback port nothing is bound to right now, outside the kernel's ephemeral range.
std::uint16_t free_port();

/// Result of running graspd to completion (e.g. configuration error cases).
struct GraspdExit {
  int exit_code = -1;  ///< -1 when it did not exit in time (it was killed)
  std::string stdout_text;
  std::string stderr_text;
};

class GraspdProcess {
 public:
  explicit GraspdProcess(GraspdOptions options = {});
  /// Kills a still-running process (SIGKILL) and removes the temporary directory.
  ~GraspdProcess();
  GraspdProcess(const GraspdProcess&) = delete;
  GraspdProcess& operator=(const GraspdProcess&) = delete;

  /// Starts graspd and waits until /healthz answers 200. False on timeout or early exit.
  bool start(std::chrono::milliseconds deadline = std::chrono::seconds(15));

  /// SIGTERM, then waits for the exit. Returns the exit code, or -1 when it did not exit within
  /// `deadline` (it is then killed with SIGKILL) or died from a signal.
  int stop(std::chrono::milliseconds deadline = std::chrono::seconds(5));

  /// kill -9 and reap.
  void kill();

  /// Starts again on the same data directory and the same port.
  bool restart(std::chrono::milliseconds deadline = std::chrono::seconds(15));

  bool running() const { return pid_ > 0; }
  pid_t pid() const { return pid_; }
  /// The process's resident memory now (VmRSS) and at its peak so far (VmHWM), in KiB; 0 when
  /// it is not running.
  std::size_t resident_kib() const;
  std::size_t peak_resident_kib() const;
  std::uint16_t port() const { return port_; }
  /// "ws://127.0.0.1:<port>"
  std::string relay_url() const;
  const std::string& data_dir() const { return data_dir_; }
  const std::string& work_dir() const { return work_dir_; }
  /// Everything graspd wrote to stderr so far (all runs).
  std::string stderr_text() const;
  /// Time from SIGTERM to exit measured by the last stop().
  std::chrono::milliseconds last_stop_duration() const { return last_stop_duration_; }

  /// Runs graspd with `args` and `env` (no port or data dir added) until it exits, within
  /// `deadline`. For configuration error and --help/--version tests.
  static GraspdExit run_to_exit(const std::vector<std::string>& args,
                                const std::vector<std::pair<std::string, std::string>>& env = {},
                                std::chrono::milliseconds deadline = std::chrono::seconds(10));

  /// Path of the graspd binary (env GRASPD_BINARY).
  static std::string binary();

 private:
  bool launch(std::chrono::milliseconds deadline);
  std::optional<int> wait_exit(std::chrono::milliseconds deadline);

  GraspdOptions options_;
  TempDir temp_{"graspd-test"};  // removed after the process is stopped
  std::string work_dir_;
  std::string data_dir_;
  std::string stderr_path_;
  pid_t pid_ = -1;
  std::uint16_t port_ = 0;
  std::chrono::milliseconds last_stop_duration_{0};
};

}  // namespace graspd::test
