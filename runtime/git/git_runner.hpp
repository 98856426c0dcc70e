// Git commands in graspd's environment (runtime/git/git_repository.hpp, git_environment) on one
// executor, as non-blocking child processes (runtime/git/git_process.*): in a repository here, or
// outside any repository for the commands that only talk to another server (ls-remote). Shared by
// the state applier, the fetcher and the ref probe. Include only in runtime/git_* (Asio).
#pragma once
#include <utility>  // before Asio, see docs/toolchain.md §1

#include <boost/asio/any_io_executor.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "runtime/git/git_process.hpp"
#include "runtime/git/git_repository.hpp"

namespace graspd::runtime::git {

/// Runs git commands in graspd's environment on one executor.
struct GitRunner {
  boost::asio::any_io_executor executor;
  Repositories repositories;
  std::string git_binary;

  /// `git --git-dir=<path> <args…>`.
  std::vector<std::string> argv(const std::string& path, std::vector<std::string> args) const;
  /// Runs to the end (stdout up to 16 MiB); `done` runs on the executor.
  void run(std::vector<std::string> argv, std::string input, std::chrono::seconds timeout,
           std::uint64_t max_file_bytes, std::function<void(Collected)> done) const;
  /// Runs `git <args…>` outside any repository: in `.home`, with repository discovery stopped
  /// there (GIT_CEILING_DIRECTORIES), so no repository's config, ours or one the data directory
  /// happens to sit in, applies. Stdout up to `max_output` (beyond it the process is killed);
  /// `max_memory_bytes` > 0 limits its address space. `done` runs on the executor.
  void run_outside(std::vector<std::string> args, std::chrono::seconds timeout,
                   std::size_t max_output, std::uint64_t max_memory_bytes,
                   std::function<void(Collected)> done) const;
  /// Which of `ids` repository `path` lacks (`cat-file --batch-check`); nullopt when git failed.
  void missing(const std::string& path, const std::vector<std::string>& ids,
               std::function<void(std::optional<std::vector<std::string>>)> done) const;
};

}  // namespace graspd::runtime::git
