// A git child process driven without blocking: posix_spawn with a fixed argv and a replaced
// environment, its stdin/stdout/stderr as non-blocking pipes and its exit as a pidfd, all wrapped
// in asio descriptors on the caller's executor (a strand). Used by git hosting
// (runtime/git/git_http.*) and the state applier (runtime/git/git_state_sync.*). Include only there
// (Asio).
#pragma once
#include <utility>  // before Asio, see docs/toolchain.md §1

#include <sys/types.h>

#include <array>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "messages/errors.hpp"

namespace graspd::runtime::git {

struct Child {
  explicit Child(const boost::asio::any_io_executor& executor)
      : in(executor), out(executor), err(executor), exit(executor) {}
  ~Child() { kill_and_forget(); }
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  /// Kills the process group; reaps on a helper thread if it has not been reaped yet.
  void kill_and_forget();

  boost::asio::posix::stream_descriptor in;
  boost::asio::posix::stream_descriptor out;
  boost::asio::posix::stream_descriptor err;
  boost::asio::posix::stream_descriptor exit;  ///< pidfd: readable once the process exited
  pid_t pid = -1;
  bool reaped = false;
  int exit_code = -1;
  std::string stderr_text;  ///< the last bytes of stderr (see keep_stderr)
  std::array<char, 512> err_buffer{};
};

/// Spawns `argv` (argv[0] is the program path) with exactly `env`, in `cwd`, in its own process
/// group, signal mask and SIGPIPE/SIGINT/SIGTERM reset to defaults. `max_file_bytes` > 0 limits the
/// size of any file it writes (RLIMIT_FSIZE; beyond it the process dies of SIGXFSZ);
/// `max_memory_bytes` > 0 limits its address space (RLIMIT_AS; beyond it allocations fail). Both
/// are set right after the spawn and are inherited by what it starts. `nice_increment` > 0 runs it
/// that many nice steps below the daemon's own CPU priority (at most 19), also set right after the
/// spawn and inherited. A git_errc::process_not_started failure saying which call failed when it
/// cannot be started.
Result<std::unique_ptr<Child>, GitFailure> spawn_child(
    const boost::asio::any_io_executor& executor, const std::vector<std::string>& argv,
    const std::vector<std::string>& env, const std::string& cwd, std::uint64_t max_file_bytes,
    std::uint64_t max_memory_bytes = 0, int nice_increment = 0);

/// Exit code of a wait status: the exit code, or 128 + the signal.
int exit_code_of(int status);

/// Result of run_collect.
struct Collected {
  int exit_code = -1;  ///< -1: could not start, or killed at the timeout
  std::string out;
  std::string err;
  bool timed_out = false;
};

/// Runs a process to its end: `input` on its stdin, stdout kept up to `max_output` bytes (beyond it
/// the process is killed), killed after `timeout`. `done` runs on `executor`. The limits are
/// spawn_child's.
void run_collect(const boost::asio::any_io_executor& executor, std::vector<std::string> argv,
                 std::vector<std::string> env, std::string cwd, std::string input,
                 std::chrono::seconds timeout, std::size_t max_output, std::uint64_t max_file_bytes,
                 std::function<void(Collected)> done, std::uint64_t max_memory_bytes = 0);

}  // namespace graspd::runtime::git
