// The refs/nostr side of held pull requests (runtime/git/git_pr_refs.*) against real git on a
// temporary bare repository: which commits `cat-file` finds, and `update-ref` creating a
// refs/nostr/<id> only where none exists and deleting it only while it names the expected commit.
// Jobs run one at a time in the order asked, so a check queued after other work is the test's
// signal that the work before it has finished.
#include <utility>  // before Asio, see toolchain.md §1

#include "runtime/git/git_pr_refs.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <fstream>
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
  /// delete_refs() and the refs it answers left, waited for.
  std::vector<GitPrRefs::Ref> delete_refs(GitPrRefs& refs, std::vector<GitPrRefs::Ref> asked) {
    auto promise = std::make_shared<std::promise<std::vector<GitPrRefs::Ref>>>();
    auto future = promise->get_future();
    refs.delete_refs(name_, std::move(asked),
                     [promise](std::vector<GitPrRefs::Ref> left) { promise->set_value(left); });
    if (future.wait_for(60s) != std::future_status::ready) {
      ADD_FAILURE() << "delete_refs never answered";
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

TEST_F(GitPrRefsTest, DeleteRefsRemovesRefsOnlyWhileTheyNameTheirCommits) {
  GitPrRefs refs{io_.io(), repositories_, git_};
  const std::string other(64, 'f');
  refs.set_ref(name_, pr_id, c1_);
  refs.set_ref(name_, other, c1_);
  drain(refs);
  // One of them moved meanwhile (here: never at c2): the transaction fails, nothing is deleted,
  // and the answer says which are left and where they are.
  auto left = delete_refs(refs, {{pr_id, c2_}, {other, c1_}, {std::string(64, 'a'), c1_}});
  ASSERT_EQ(left.size(), 2u);
  EXPECT_EQ(left[0].id_hex, pr_id);
  EXPECT_EQ(left[0].commit, c1_) << "the commit it names now";
  EXPECT_EQ(left[1].id_hex, other);
  EXPECT_EQ(test::ref_of(path(), nostr_ref(pr_id)), c1_);
  EXPECT_EQ(refs.counters().refs_deleted, 0u);

  // Asked with what they name: all gone in one transaction (an absent ref is gone already).
  EXPECT_TRUE(delete_refs(refs, {{pr_id, c1_}, {other, c1_}}).empty());
  EXPECT_EQ(test::ref_of(path(), nostr_ref(pr_id)), "");
  EXPECT_EQ(test::ref_of(path(), nostr_ref(other)), "");
  EXPECT_EQ(refs.counters().refs_deleted, 2u);
  EXPECT_TRUE(delete_refs(refs, {{pr_id, c1_}}).empty()) << "not there: gone";
}

TEST_F(GitPrRefsTest, ManyDeletionsAreOneProcessAndNoneIsDropped) {
  GitPrRefs refs{io_.io(), repositories_, git_};
  std::vector<GitPrRefs::Ref> asked;
  for (int i = 0; i < 1500; ++i) {
    char id[65];
    std::snprintf(id, sizeof id, "%064x", i + 1);
    asked.push_back({id, c1_});
  }
  std::string input;
  for (const auto& ref : asked) input += "create " + nostr_ref(ref.id_hex) + " " + c1_ + "\n";
  auto file = dir_.path() / "create-refs";
  std::ofstream(file) << input;
  ASSERT_EQ(test::run_command("git --git-dir=" + test::shell_quote(path().string()) +
                              " update-ref --stdin < " + test::shell_quote(file.string()))
                .exit_code,
            0);
  EXPECT_TRUE(delete_refs(refs, asked).empty());
  EXPECT_EQ(refs.counters().refs_deleted, 1500u);
  EXPECT_EQ(test::refs_of(path()), "") << "every one gone, more than a job queue holds";
}

TEST_F(GitPrRefsTest, WorkRunsInTheOrderAsked) {
  // A creation, a deletion and a creation posted back to back: the last one wins.
  GitPrRefs refs{io_.io(), repositories_, git_};
  refs.set_ref(name_, pr_id, c1_);
  refs.delete_refs(name_, {{pr_id, c1_}}, [](std::vector<GitPrRefs::Ref>) {});
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
