// Real git on temporary bare repositories, for the tests of git hosting's I/O (runtime/git/):
// commits made without a work tree (hash-object, mktree, commit-tree), refs and objects read back,
// fake git executables written as shell scripts. Every git command runs with a clean,
// deterministic environment (no user or system config, fixed dates), so ids are reproducible.
#pragma once

#include <sys/stat.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "messages/nostr/event.hpp"

namespace graspd::test {

/// The owner of the repositories git hosting's I/O tests create.
inline nostr::Pubkey owner() {
  nostr::Pubkey key{};
  key.fill(0x42);
  return key;
}

struct CommandResult {
  int exit_code = -1;
  std::string out;
};

/// `text` as one single-quoted shell word.
inline std::string shell_quote(const std::string& text) {
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

/// Runs `command` under /bin/sh with `input` on its stdin (from a printf), the environment cleared
/// but for PATH and git's identity and dates; its stdout and exit code.
inline CommandResult run_command(const std::string& command, const std::string& input = "") {
  auto full = "printf '%s' " + shell_quote(input) +
              " | env -i PATH=/usr/bin:/bin HOME=/nonexistent GIT_CONFIG_NOSYSTEM=1 "
              "GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@t GIT_COMMITTER_NAME=t "
              "GIT_COMMITTER_EMAIL=t@t GIT_AUTHOR_DATE='@1700000000 +0000' "
              "GIT_COMMITTER_DATE='@1700000000 +0000' sh -c " +
              shell_quote(command);
  CommandResult result;
  FILE* pipe = ::popen(full.c_str(), "r");
  if (!pipe) return result;
  char buffer[4096];
  while (auto n = std::fread(buffer, 1, sizeof buffer, pipe)) result.out.append(buffer, n);
  int status = ::pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

/// `git --git-dir=<git_dir> <args>`: its stdout without the trailing newline, empty on failure.
inline std::string git_in(const std::filesystem::path& git_dir, const std::string& args,
                          const std::string& input = "") {
  auto result = run_command("git --git-dir=" + shell_quote(git_dir.string()) + " " + args, input);
  if (result.exit_code != 0) return "";
  while (!result.out.empty() && result.out.back() == '\n') result.out.pop_back();
  return result.out;
}

/// Creates an empty bare repository at `path` with `git init --bare`; true on success.
inline bool init_bare(const std::filesystem::path& path) {
  return run_command("git init --quiet --bare " + shell_quote(path.string())).exit_code == 0;
}

/// Writes a blob holding `content`; its id.
inline std::string make_blob(const std::filesystem::path& git_dir, const std::string& content) {
  return git_in(git_dir, "hash-object -w --stdin", content);
}

/// Writes a commit whose tree holds one file with `content`, on `parent` when given; its id (empty
/// on failure). No ref is touched.
inline std::string make_commit(const std::filesystem::path& git_dir, const std::string& content,
                               const std::string& parent = "") {
  auto blob = make_blob(git_dir, content);
  if (blob.empty()) return "";
  auto tree = git_in(git_dir, "mktree", "100644 blob " + blob + "\tfile\n");
  if (tree.empty()) return "";
  auto parent_arg = parent.empty() ? std::string() : " -p " + parent;
  return git_in(git_dir, "commit-tree " + tree + parent_arg + " -m " + shell_quote(content));
}

/// The packs in the repository (objects/pack/*.pack).
inline std::size_t pack_count(const std::filesystem::path& git_dir) {
  std::size_t n = 0;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(git_dir / "objects" / "pack", ec))
    if (entry.path().extension() == ".pack") ++n;
  return n;
}

/// The id `ref` names, empty when it does not exist.
inline std::string ref_of(const std::filesystem::path& git_dir, const std::string& ref) {
  return git_in(git_dir, "rev-parse --verify --quiet " + shell_quote(ref));
}

/// Every ref as "<id> <name>" lines (for-each-ref), for messages and exact comparisons.
inline std::string refs_of(const std::filesystem::path& git_dir) {
  return git_in(git_dir, "for-each-ref '--format=%(objectname) %(refname)'");
}

/// True when `id` is an object of the repository.
inline bool has_object(const std::filesystem::path& git_dir, const std::string& id) {
  return run_command("git --git-dir=" + shell_quote(git_dir.string()) + " cat-file -e " + id)
             .exit_code == 0;
}

/// Writes an executable `#!/bin/sh` script with `body` at `path` (a fake git, a stand-in child).
inline void write_script(const std::filesystem::path& path, const std::string& body) {
  {
    std::ofstream file(path);
    file << "#!/bin/sh\n" << body << "\n";
  }
  ::chmod(path.c_str(), 0755);
}

/// The whole content of a file, empty when it cannot be read.
inline std::string read_file(const std::filesystem::path& path) {
  std::ifstream file(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(file)), {});
}

}  // namespace graspd::test
