// Crash safety of the store against the real binary: `graspd import` of a
// large signed JSONL file is killed with SIGKILL after it reported some
// committed batches; every event it reported as committed must be in the
// store, the store must open and answer queries, and a second import must
// complete (accepting the rest, reporting the committed ones as duplicates).
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include "messages/nostr/json.hpp"
#include "store/lmdb/event_store.hpp"
#include "tests/support/nostr_builders.hpp"
#include "tests/support/temp_dir.hpp"

extern char** environ;

namespace graspd {
namespace {

namespace fs = std::filesystem;
using test::signed_event;
using test::TempDir;

std::string graspd_binary() {
  const char* path = std::getenv("GRASPD_BINARY");
  return path ? path : "";
}

/// A running `graspd import` whose stderr we read line by line.
class ImportProcess {
 public:
  ImportProcess(const fs::path& store, const fs::path& input) {
    int fds[2];
    if (::pipe(fds) != 0) throw std::runtime_error("pipe failed");
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, input.c_str(), O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_adddup2(&actions, fds[1], 2);
    posix_spawn_file_actions_addclose(&actions, fds[0]);
    std::string binary = graspd_binary();
    std::string data = store.string();
    std::vector<char*> argv{binary.data(), const_cast<char*>("import"), const_cast<char*>("--data"),
                            data.data(), nullptr};
    int rc = posix_spawn(&pid_, binary.c_str(), &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    ::close(fds[1]);
    if (rc != 0) throw std::runtime_error("cannot start " + binary);
    stderr_ = ::fdopen(fds[0], "r");
  }
  ~ImportProcess() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      wait();
    }
    if (stderr_) std::fclose(stderr_);
  }

  /// Next stderr line, nullopt at EOF.
  std::optional<std::string> next_line() {
    char* line = nullptr;
    std::size_t cap = 0;
    ssize_t n = ::getline(&line, &cap, stderr_);
    std::optional<std::string> out;
    if (n >= 0) out = std::string(line, static_cast<std::size_t>(n));
    std::free(line);
    return out;
  }
  void kill9() { ::kill(pid_, SIGKILL); }
  /// Waits for exit; returns the raw wait status.
  int wait() {
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
    return status;
  }

 private:
  pid_t pid_ = -1;
  FILE* stderr_ = nullptr;
};

std::optional<std::uint64_t> committed_lines(const std::string& line) {
  static const std::regex pattern("import: committed ([0-9]+) lines");
  std::smatch m;
  if (!std::regex_search(line, m, pattern)) return std::nullopt;
  return std::stoull(m[1]);
}

class StoreCrashTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(graspd_binary().empty()) << "GRASPD_BINARY is not set";
    input_ = dir_.path() / "events.jsonl";
    write_events();
  }

  void write_events() {
    std::ofstream out(input_);
    for (std::size_t i = 0; i < kEvents; ++i) {
      auto ev = signed_event(1, {{"t", "crash-test"}, {"n", std::to_string(i)}},
                             1'700'000'000 + static_cast<std::int64_t>(i),
                             "event number " + std::to_string(i) + std::string(200, '.'),
                             static_cast<std::uint8_t>(1 + i % 7));  // a few authors
      ids_.push_back(ev.id);
      out << nostr::serialize_event(ev) << '\n';
    }
  }

  static constexpr std::size_t kEvents = 60'000;
  TempDir dir_{"graspd-crash"};
  fs::path input_;
  std::vector<nostr::EventId> ids_;
};

TEST_F(StoreCrashTest, Kill9DuringImportLosesNothingCommitted) {
  fs::path store_dir = dir_.path() / "store";
  std::uint64_t committed = 0;
  int reports = 0;
  {
    ImportProcess import(store_dir, input_);
    while (auto line = import.next_line()) {
      if (auto n = committed_lines(*line)) {
        committed = *n;
        if (++reports == 5) {
          import.kill9();
          break;
        }
      }
    }
    int status = import.wait();
    ASSERT_GE(reports, 5) << "import ended before it was killed (status " << status << ")";
    ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "status " << status;
  }
  ASSERT_GT(committed, 0u);
  ASSERT_LT(committed, kEvents) << "the kill came too late to test anything";

  {
    store::StoreOptions options;
    options.path = store_dir;
    store::EventStore store(options);
    for (std::uint64_t i = 0; i < committed; ++i)
      ASSERT_TRUE(store.contains(ids_[i])) << "committed event on line " << i + 1 << " lost";
    nostr::Filter f;
    f.tags['t'] = {"crash-test"};
    EXPECT_GE(store.count({f}), committed);
    EXPECT_EQ(store.count({f}), store.size());
  }

  ImportProcess again(store_dir, input_);
  std::string last;
  while (auto line = again.next_line()) last = *line;
  int status = again.wait();
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status << " " << last;
  EXPECT_NE(last.find("import: done:"), std::string::npos) << last;
  EXPECT_NE(last.find("rejected 0"), std::string::npos) << last;
  EXPECT_NE(last.find("lines, accepted"), std::string::npos) << last;

  store::StoreOptions options;
  options.path = store_dir;
  store::EventStore store(options);
  EXPECT_EQ(store.size(), kEvents);
  for (const auto& id : ids_) ASSERT_TRUE(store.contains(id));
}

}  // namespace
}  // namespace graspd
