// Repository maintenance (runtime/git/git_maintenance.*) against real git on a temporary bare
// repository: `git gc --auto` repacks a repository over its pack limit under a process slot it
// gives back, a run whose memory limit git cannot live within fails without harming the repository,
// a full line is answered `busy` without running anything, and the memory limit sizes git's caches.
#include <utility>  // before Asio, see toolchain.md §1

#include "runtime/git/git_maintenance.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <string>
#include <vector>

#include "runtime/git/git_http.hpp"
#include "tests/support/git_test_repos.hpp"
#include "tests/support/io_thread.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/wait_until.hpp"

namespace graspd::runtime::git {
namespace {

using test::owner;

class GitMaintenanceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    repositories_.prepare();
    ASSERT_TRUE(repositories_.create(name_));
    options_.git_binary = find_git_binary();
    ASSERT_FALSE(options_.git_binary.empty()) << "git is needed";
    options_.auto_pack_limit = 1;
    // Two packs (more than gc.autoPackLimit): git gc --auto has work to do.
    auto head = test::make_commit(path(), "one");
    test::git_in(path(), "update-ref refs/heads/main " + head);
    test::git_in(path(), "repack -q");
    head = test::make_commit(path(), "two", head);
    test::git_in(path(), "update-ref refs/heads/main " + head);
    test::git_in(path(), "repack -q");
    head_ = head;
  }

  std::filesystem::path path() const { return repositories_.path_of(name_); }

  std::size_t packs() const { return test::pack_count(path()); }

  /// Runs maintenance once and waits for its outcome.
  std::optional<MaintenanceOutcome> run_once(GitMaintenance& maintenance) {
    std::atomic<int> outcome{-1};
    maintenance.run(name_, [&](MaintenanceOutcome o) { outcome = static_cast<int>(o); });
    if (!test::wait_until([&] { return outcome >= 0; }, std::chrono::seconds(60)))
      return std::nullopt;
    return static_cast<MaintenanceOutcome>(outcome.load());
  }

  test::TempDir dir_;
  Repositories repositories_{dir_.path()};
  RepositoryRef name_{owner(), "demo"};
  GitMaintenanceOptions options_;
  std::string head_;
  test::IoThread io_;
};

TEST_F(GitMaintenanceTest, GcAutoRepacksUnderAProcessSlotItGivesBack) {
  auto slots = std::make_shared<ProcessSlots>(1, 4);
  GitMaintenance maintenance(io_.io(), repositories_, options_, slots);
  ASSERT_EQ(packs(), 2u);
  EXPECT_EQ(run_once(maintenance), MaintenanceOutcome::done);
  EXPECT_EQ(packs(), 1u) << "git gc --auto repacked them into one";
  EXPECT_EQ(test::ref_of(path(), "refs/heads/main"), head_);
  EXPECT_EQ(slots->running(), 0u);
  EXPECT_EQ(maintenance.counters().done, 1u);
}

TEST_F(GitMaintenanceTest, ARunBeyondItsMemoryLimitFailsAndLeavesTheRepositoryWhole) {
  options_.max_memory_bytes = 1 << 20;  // no git lives in 1 MiB of address space
  auto slots = std::make_shared<ProcessSlots>(1, 4);
  GitMaintenance maintenance(io_.io(), repositories_, options_, slots);
  EXPECT_EQ(run_once(maintenance), MaintenanceOutcome::failed);
  EXPECT_EQ(maintenance.counters().failed, 1u);
  EXPECT_EQ(slots->running(), 0u);
  EXPECT_EQ(test::ref_of(path(), "refs/heads/main"), head_);
  EXPECT_TRUE(test::has_object(path(), head_));
  EXPECT_EQ(packs(), 2u);
}

TEST_F(GitMaintenanceTest, AFullLineIsBusyAndRunsNothing) {
  auto slots = std::make_shared<ProcessSlots>(1, 0);  // no line
  ASSERT_EQ(slots->take_or_queue("127.0.0.9", [] {}), ProcessSlots::Grant::taken);
  GitMaintenance maintenance(io_.io(), repositories_, options_, slots);
  EXPECT_EQ(run_once(maintenance), MaintenanceOutcome::busy);
  EXPECT_EQ(maintenance.counters().busy, 1u);
  EXPECT_EQ(packs(), 2u);
  EXPECT_EQ(slots->running(), 1u) << "the client's slot only";
}

TEST(GitMaintenanceSettings, RunInTheForegroundWithCachesSizedWithinTheMemoryLimit) {
  GitMaintenanceOptions options;
  options.max_memory_bytes = 1ull << 30;
  auto settings = maintenance_settings(options);
  auto has = [&](const std::string& s) {
    return std::find(settings.begin(), settings.end(), s) != settings.end();
  };
  EXPECT_TRUE(has("gc.autoDetach=false"));
  EXPECT_TRUE(has("pack.threads=1"));
  EXPECT_TRUE(has("gc.auto=6700"));
  EXPECT_TRUE(has("pack.windowMemory=256m"));
  EXPECT_TRUE(has("core.packedGitLimit=256m"));
  EXPECT_TRUE(has("core.packedGitWindowSize=32m"));
  EXPECT_TRUE(has("pack.deltaCacheSize=64m"));
  options.max_memory_bytes = 0;
  settings = maintenance_settings(options);
  EXPECT_FALSE(std::any_of(settings.begin(), settings.end(), [](const std::string& s) {
    return s.rfind("pack.windowMemory", 0) == 0;
  })) << "no limit, git's own defaults";
}

}  // namespace
}  // namespace graspd::runtime::git
