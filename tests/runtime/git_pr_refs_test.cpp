// The refs/nostr side of held pull requests (runtime/git/git_pr_refs.*) against real git on a
// temporary bare repository: which commits `cat-file` finds, and `update-ref` creating a
// refs/nostr/<id> only where none exists and deleting it only while it names the expected commit.
// Jobs run one at a time in the order asked, so a check queued after other work is the test's
// signal that the work before it has finished.
#include <utility>  // before Asio, see toolchain.md §1

#include "runtime/git/git_pr_refs.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <string>
#include <vector>

#include "messages/nostr/nip34.hpp"
#include "runtime/git/git_http.hpp"
#include "tests/support/git_test_repos.hpp"
#include "tests/support/io_thread.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/wait_until.hpp"

namespace graspd::runtime::git {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using Ids = std::vector<std::string>;

const std::string pr_id(64, 'e');

using test::owner;

std::string nostr_ref(const std::string& id) {
  return std::string(nostr::nip34::refs_nostr_prefix) + id;
}

class GitPrRefsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    repositories_.prepare();
    ASSERT_TRUE(repositories_.create(name_));
    ASSERT_FALSE(git_.empty()) << "git is needed";
    c1_ = test::make_commit(path(), "one");
    c2_ = test::make_commit(path(), "two", c1_);
    blob_ = test::make_blob(path(), "a blob");
    ASSERT_EQ(c1_.size(), 40u);
    ASSERT_EQ(c2_.size(), 40u);
    ASSERT_EQ(blob_.size(), 40u);
  }

  fs::path path() const { return repositories_.path_of(name_); }

  /// check() and its answer, waited for (and, since jobs run in order, everything asked before).
  Ids check(GitPrRefs& refs, const RepositoryRef& name, Ids commits) {
    auto promise = std::make_shared<std::promise<Ids>>();
    auto future = promise->get_future();
    refs.check(name, std::move(commits), [promise](Ids present) { promise->set_value(present); });
    if (future.wait_for(60s) != std::future_status::ready) {
      ADD_FAILURE() << "check never answered";
      return {};
    }
    return future.get();
  }
  /// Waits until every job asked before has run.
  void drain(GitPrRefs& refs) { check(refs, name_, {c1_}); }

  test::TempDir dir_{"graspd-git-pr-refs"};
  Repositories repositories_{dir_.path() / "git"};
  RepositoryRef name_{owner(), "repo"};
  std::string git_ = find_git_binary();
  std::string c1_, c2_, blob_;
  test::IoThread io_;
};

TEST_F(GitPrRefsTest, CheckFindsOnlyTheCommitsThatArePresent) {
  GitPrRefs refs{io_.io(), repositories_, git_};
  std::string upper = c2_;
  for (auto& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  auto present =
      check(refs, name_, {c1_, blob_, std::string(40, '1'), upper, c2_.substr(0, 39), "HEAD", c2_});
  EXPECT_EQ(present, (Ids{c1_, c2_})) << "a blob is not a commit; bad ids are not asked";
  EXPECT_EQ(refs.counters().checks, 1u);
}

TEST_F(GitPrRefsTest, CheckFindsNothingWithoutTheRepositoryOrGit) {
  GitPrRefs refs{io_.io(), repositories_, git_};
  nostr::Pubkey stranger{};
  stranger.fill(0x43);
  EXPECT_TRUE(check(refs, RepositoryRef{stranger, "repo"}, {c1_}).empty());
  EXPECT_TRUE(check(refs, RepositoryRef{owner(), "other"}, {c1_}).empty());
  EXPECT_TRUE(check(refs, name_, {"not-an-id"}).empty());
  EXPECT_EQ(refs.counters().checks, 0u) << "no git process for those";

  GitPrRefs without_git{io_.io(), repositories_, ""};
  EXPECT_TRUE(check(without_git, name_, {c1_}).empty());
  without_git.set_ref(name_, pr_id, c1_);
  drain(without_git);
  EXPECT_EQ(test::ref_of(path(), nostr_ref(pr_id)), "");
}

TEST_F(GitPrRefsTest, SetRefCreatesTheRefOnlyWhereNoneExists) {
  GitPrRefs refs{io_.io(), repositories_, git_};
  refs.set_ref(name_, pr_id, c1_);
  drain(refs);
  EXPECT_EQ(test::ref_of(path(), nostr_ref(pr_id)), c1_);
  EXPECT_EQ(refs.counters().refs_set, 1u);

  // A push (or an earlier event) put the ref there first: it stays.
  refs.set_ref(name_, pr_id, c2_);
  drain(refs);
  EXPECT_EQ(test::ref_of(path(), nostr_ref(pr_id)), c1_);
  EXPECT_EQ(refs.counters().refs_set, 1u);
}

TEST_F(GitPrRefsTest, DeleteRefRemovesTheRefOnlyWhileItNamesTheCommit) {
  GitPrRefs refs{io_.io(), repositories_, git_};
  refs.set_ref(name_, pr_id, c1_);
  refs.delete_ref(name_, pr_id, c2_);  // moved meanwhile (here: never at c2): left alone
  drain(refs);
  EXPECT_EQ(test::ref_of(path(), nostr_ref(pr_id)), c1_);
  EXPECT_EQ(refs.counters().refs_deleted, 0u);

  refs.delete_ref(name_, pr_id, c1_);
  drain(refs);
  EXPECT_EQ(test::ref_of(path(), nostr_ref(pr_id)), "");
  EXPECT_EQ(refs.counters().refs_deleted, 1u);
}

TEST_F(GitPrRefsTest, WorkRunsInTheOrderAsked) {
  // A creation, a deletion and a creation posted back to back: the last one wins.
  GitPrRefs refs{io_.io(), repositories_, git_};
  refs.set_ref(name_, pr_id, c1_);
  refs.delete_ref(name_, pr_id, c1_);
  refs.set_ref(name_, pr_id, c2_);
  drain(refs);
  EXPECT_EQ(test::ref_of(path(), nostr_ref(pr_id)), c2_);
  EXPECT_EQ(refs.counters().refs_set, 2u);
  EXPECT_EQ(refs.counters().refs_deleted, 1u);
}

TEST_F(GitPrRefsTest, RefsWithInvalidIdsAreNeverWritten) {
  GitPrRefs refs{io_.io(), repositories_, git_};
  refs.set_ref(name_, pr_id.substr(1), c1_);
  refs.set_ref(name_, std::string(64, 'E'), c1_);
  refs.set_ref(name_, "../../heads/main" + std::string(48, 'e'), c1_);
  refs.set_ref(name_, pr_id, "HEAD");
  drain(refs);
  EXPECT_EQ(test::refs_of(path()), "") << "no ref at all";
  EXPECT_EQ(refs.counters().refs_set, 0u);
}

TEST_F(GitPrRefsTest, BeyondAFullQueueWorkIsDroppedAndAnsweredEmpty) {
  // A stand-in git that blocks until released keeps the one running job busy while the queue
  // (1024 jobs) fills.
  auto release = dir_.path() / "release";
  auto fake = dir_.path() / "fake-git";
  test::write_script(fake, "while [ ! -e '" + release.string() + "' ]; do sleep 0.02; done");
  GitPrRefs refs{io_.io(), repositories_, fake.string()};
  auto first = std::make_shared<std::promise<Ids>>();
  refs.check(name_, {c1_}, [first](Ids present) { first->set_value(present); });
  for (int i = 0; i < 1024; ++i) refs.set_ref(name_, pr_id, c1_);
  EXPECT_TRUE(check(refs, name_, {c1_}).empty()) << "dropped: answered at once, empty";
  EXPECT_EQ(refs.counters().dropped, 1u);

  refs.stop();  // the queued jobs go; the running one ends when released
  test::write_script(release, "");
  auto future = first->get_future();
  ASSERT_EQ(future.wait_for(60s), std::future_status::ready);
  EXPECT_TRUE(future.get().empty()) << "the stand-in printed nothing";
  EXPECT_EQ(refs.counters().refs_set, 0u);
}

}  // namespace
}  // namespace graspd::runtime::git
