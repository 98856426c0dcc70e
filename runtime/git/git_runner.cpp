#include <utility>  // before Asio, see docs/toolchain.md §1

#include "runtime/git/git_runner.hpp"

#include <algorithm>
#include <string_view>

#include "runtime/ops/log.hpp"

namespace graspd::runtime::git {

namespace {

constexpr std::size_t runner_max_listing = 16 * 1024 * 1024;
constexpr std::chrono::seconds runner_local_timeout{60};

}  // namespace

std::vector<std::string> GitRunner::argv(const std::string& path,
                                         std::vector<std::string> args) const {
  std::vector<std::string> out{git_binary, "--git-dir=" + path};
  out.insert(out.end(), std::make_move_iterator(args.begin()), std::make_move_iterator(args.end()));
  return out;
}

void GitRunner::run(std::vector<std::string> argv, std::string input, std::chrono::seconds timeout,
                    std::uint64_t max_file_bytes, std::function<void(Collected)> done) const {
  run_collect(executor, std::move(argv), repositories.git_environment(),
              repositories.root().string(), std::move(input), timeout, runner_max_listing,
              max_file_bytes, std::move(done));
}

void GitRunner::run_outside(std::vector<std::string> args, std::chrono::seconds timeout,
                            std::size_t max_output, std::uint64_t max_memory_bytes,
                            std::function<void(Collected)> done) const {
  std::vector<std::string> argv{git_binary};
  argv.insert(argv.end(), std::make_move_iterator(args.begin()),
              std::make_move_iterator(args.end()));
  auto env = repositories.git_environment();
  // git looks for a repository in its working directory and upwards: `.home` is none, and the
  // data directory above it is a ceiling it does not climb into.
  env.push_back("GIT_CEILING_DIRECTORIES=" + repositories.root().string());
  run_collect(executor, std::move(argv), std::move(env), repositories.home_dir().string(), "",
              timeout, max_output, 0, std::move(done), max_memory_bytes);
}

void GitRunner::missing(const std::string& path, const std::vector<std::string>& ids,
                        std::function<void(std::optional<std::vector<std::string>>)> done) const {
  std::string input;
  for (const auto& id : ids) input += id + "\n";
  run(argv(path, {"cat-file", "--batch-check"}), std::move(input), runner_local_timeout, 0,
      [done = std::move(done), path](Collected result) {
        if (result.exit_code != 0) {
          log::warn(log::components::git, "cat-file failed in ", path, ": ", result.err);
          return done(std::nullopt);
        }
        // One line per id: "<id> <type> <size>" or "<id> missing".
        std::vector<std::string> out;
        std::string_view text = result.out;
        constexpr std::string_view marker = " missing";
        while (!text.empty()) {
          auto line = text.substr(0, text.find('\n'));
          if (line.size() > marker.size() && line.substr(line.size() - marker.size()) == marker)
            out.emplace_back(line.substr(0, line.size() - marker.size()));
          text.remove_prefix(std::min(text.size(), line.size() + 1));
        }
        done(std::move(out));
      });
}

}  // namespace graspd::runtime::git
