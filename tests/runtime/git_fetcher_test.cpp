// Git data fetches by object id (runtime/git/git_fetcher.*) from another git host on the loopback
// interface (`git http-backend` behind tests/support/git_backend_server.hpp) into a repository
// here: what reaches the repository, what the done callback says, the attempt outcomes counted
// (graspd_git_fetches_total), and the rules that keep a fetch in bounds (http URLs only, checked
// addresses, size and time limits). Loopback is a private address: the fetcher is allowed it
// through its options, except where that rule is the point.
#include <utility>  // before Asio, see toolchain.md §1

#include "runtime/git/git_fetcher.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <boost/asio/strand.hpp>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include <prometheus/registry.h>

#include "runtime/git/git_http.hpp"
#include "tests/support/git_backend_server.hpp"
#include "tests/support/git_test_repos.hpp"
#include "tests/support/io_thread.hpp"
#include "tests/support/silent_host.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/wait_until.hpp"

namespace graspd::runtime::git {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

/// What a request's done callback reported; shared with the callback, which may outlive a test.
struct Reported {
  std::atomic<int> calls{0};
  std::atomic<FetchResult> result{FetchResult::dropped};
};

class GitFetcherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(git_.empty()) << "git is needed";
    repositories_.prepare();
    ASSERT_TRUE(repositories_.create(name_));
    ASSERT_TRUE(test::init_bare(source()));
    // Fetching by id of any object the source has, as the clone URLs of other relays allow.
    ASSERT_EQ(test::run_command("git --git-dir=" + source().string() +
                                " config uploadpack.allowAnySHA1InWant true")
                  .exit_code,
              0);
    c1_ = test::make_commit(source(), "one");
    c2_ = test::make_commit(source(), "two", c1_);
    ASSERT_EQ(c2_.size(), 40u);
    test::git_in(source(), "update-ref refs/heads/main " + c2_);
    ASSERT_EQ(test::ref_of(source(), "refs/heads/main"), c2_);
  }

  void TearDown() override {
    if (fetcher_) io_.run_on(strand_, [this] { fetcher_->stop(); });
    io_.run_on(strand_, [this] { fetcher_.reset(); });
  }

  fs::path source() const { return served_.path() / "source.git"; }
  fs::path target() const { return repositories_.path_of(name_); }

  void make_fetcher(GitFetcherOptions options) {
    GitRunner runner{strand_, repositories_, git_};
    fetcher_ = std::make_shared<GitFetcher>(runner, std::move(options), &registry_);
  }
  static GitFetcherOptions loopback_allowed() {
    GitFetcherOptions options;
    options.allow_private_addresses = true;
    options.fetch_timeout = 60s;
    options.give_up_after = 0s;  // no retry round after every source failed: abandoned at once
    return options;
  }

  /// A job for `ids` from `urls` into the target; its done callback reports into the result.
  std::pair<FetchJob, std::shared_ptr<Reported>> job(std::string key, std::vector<std::string> ids,
                                                     std::vector<std::string> urls) {
    auto reported = std::make_shared<Reported>();
    FetchJob job;
    job.key = std::move(key);
    job.repository = target().string();
    job.ids = std::move(ids);
    job.urls = std::move(urls);
    job.done = [reported](FetchResult result) {
      reported->result = result;
      ++reported->calls;
    };
    return {std::move(job), reported};
  }
  /// Hands `job` to the fetcher on its strand (the only place it may be called from).
  void request(FetchJob job) {
    ASSERT_TRUE(io_.run_on(strand_, [&] { fetcher_->request(std::move(job)); }));
  }
  /// Waits for the done callback; its result.
  FetchResult wait_done(const Reported& reported) {
    EXPECT_TRUE(test::wait_until([&] { return reported.calls > 0; }, 60s)) << "done never called";
    EXPECT_EQ(reported.calls, 1);
    return reported.result;
  }

  /// graspd_git_fetches_total{outcome}: attempts and requests counted by outcome.
  double outcomes(const std::string& outcome) {
    for (const auto& family : registry_.Collect()) {
      if (family.name != "graspd_git_fetches_total") continue;
      for (const auto& metric : family.metric)
        for (const auto& label : metric.label)
          if (label.name == "outcome" && label.value == outcome) return metric.counter.value;
    }
    return -1;
  }

  test::TempDir dir_{"graspd-git-fetcher"};
  test::TempDir served_{"graspd-git-served"};
  test::GitBackendServer server_{served_.path()};
  Repositories repositories_{dir_.path() / "git"};
  RepositoryRef name_{nostr::Pubkey{}, "repo"};
  std::string git_ = find_git_binary();
  std::string c1_, c2_;
  prometheus::Registry registry_;
  test::IoThread io_;
  boost::asio::strand<boost::asio::io_context::executor_type> strand_{
      boost::asio::make_strand(io_.io())};
  std::shared_ptr<GitFetcher> fetcher_;
};

TEST_F(GitFetcherTest, MissingObjectsAreFetchedByIdFromACloneUrl) {
  make_fetcher(loopback_allowed());
  auto [fetch, reported] = job("state repo", {c2_}, {server_.url("source.git")});
  request(std::move(fetch));
  EXPECT_EQ(wait_done(*reported), FetchResult::complete);
  EXPECT_TRUE(test::has_object(target(), c2_));
  EXPECT_TRUE(test::has_object(target(), c1_)) << "with its history";
  EXPECT_EQ(test::refs_of(target()), "") << "objects only: no ref moves";
  EXPECT_EQ(outcomes("complete"), 1);
  EXPECT_GT(server_.requests_for("/source.git/"), 0u);
}

TEST_F(GitFetcherTest, ASourceThatFailsIsFollowedByTheNextOne) {
  make_fetcher(loopback_allowed());
  auto [fetch, reported] =
      job("state repo", {c2_}, {server_.url("missing.git"), server_.url("source.git")});
  request(std::move(fetch));
  EXPECT_EQ(wait_done(*reported), FetchResult::complete);
  EXPECT_TRUE(test::has_object(target(), c2_));
  EXPECT_EQ(outcomes("failed"), 1) << "the 404 of missing.git";
  EXPECT_EQ(outcomes("complete"), 1);
  EXPECT_GT(server_.requests_for("/missing.git/"), 0u);
}

TEST_F(GitFetcherTest, AnIdNoSourceHasIsNotOurRefThenAbandoned) {
  auto elsewhere = served_.path() / "elsewhere.git";
  ASSERT_TRUE(test::init_bare(elsewhere));
  auto absent = test::make_commit(elsewhere, "only elsewhere");
  ASSERT_EQ(absent.size(), 40u);
  make_fetcher(loopback_allowed());
  auto [fetch, reported] = job("state repo", {absent}, {server_.url("source.git")});
  request(std::move(fetch));
  EXPECT_EQ(wait_done(*reported), FetchResult::abandoned);
  EXPECT_FALSE(test::has_object(target(), absent));
  EXPECT_EQ(outcomes("not_our_ref"), 1) << "upload-pack's `not our ref` was recognised";
  EXPECT_EQ(outcomes("abandoned"), 1);
}

TEST_F(GitFetcherTest, LoopbackIsRefusedUnlessPrivateAddressesAreAllowed) {
  auto options = loopback_allowed();
  options.allow_private_addresses = false;
  make_fetcher(options);
  auto [fetch, reported] = job("state repo", {c2_}, {server_.url("source.git")});
  request(std::move(fetch));
  EXPECT_EQ(wait_done(*reported), FetchResult::abandoned);
  EXPECT_EQ(outcomes("unreachable"), 1);
  EXPECT_TRUE(server_.requests().empty()) << "nothing may connect to a private address";
  EXPECT_FALSE(test::has_object(target(), c2_));
}

TEST_F(GitFetcherTest, OnlyHttpCloneUrlsAreFetchedFrom) {
  // Each of these would reach the source repository on disk if git were given it.
  make_fetcher(loopback_allowed());
  auto [fetch, reported] =
      job("state repo", {c2_},
          {"file://" + source().string(), source().string(), "ext::git %s " + source().string(),
           "http://user:secret@127.0.0.1:1/source.git"});
  request(std::move(fetch));
  EXPECT_EQ(wait_done(*reported), FetchResult::abandoned);
  EXPECT_FALSE(test::has_object(target(), c2_));
  EXPECT_EQ(outcomes("complete"), 0);
  EXPECT_EQ(outcomes("failed"), 0) << "no attempt at all";
}

TEST_F(GitFetcherTest, APackBeyondMaxFetchBytesIsNotKept) {
  // 64 KiB of hex that compresses to well over the 4 KiB allowed.
  std::string noise;
  std::uint64_t state = 88172645463325252ull;
  while (noise.size() < 64 * 1024) {
    state ^= state << 13, state ^= state >> 7, state ^= state << 17;
    static const char* hex = "0123456789abcdef";
    noise += hex[state & 15];
  }
  auto big = test::make_commit(source(), noise);
  ASSERT_EQ(big.size(), 40u);
  auto options = loopback_allowed();
  options.max_fetch_bytes = 4096;
  make_fetcher(options);
  auto [fetch, reported] = job("state repo", {big}, {server_.url("source.git")});
  request(std::move(fetch));
  EXPECT_EQ(wait_done(*reported), FetchResult::abandoned);
  EXPECT_FALSE(test::has_object(target(), big));
  EXPECT_EQ(outcomes("failed"), 1);
}

TEST_F(GitFetcherTest, AHostThatNeverAnswersIsCutAtTheFetchTimeout) {
  test::SilentHost silent;
  auto options = loopback_allowed();
  options.fetch_timeout = 1s;
  make_fetcher(options);
  auto [fetch, reported] = job("state repo", {c2_}, {silent.url("source.git")});
  auto started = std::chrono::steady_clock::now();
  request(std::move(fetch));
  EXPECT_EQ(wait_done(*reported), FetchResult::abandoned);
  EXPECT_LT(std::chrono::steady_clock::now() - started, 30s) << "git's own limit is 60 s";
  EXPECT_EQ(outcomes("failed"), 1);
}

TEST_F(GitFetcherTest, ARequestNoLongerWantedIsDroppedWithoutAFetch) {
  ASSERT_EQ(test::run_command("git clone --quiet --bare " + source().string() + " " +
                              (served_.path() / "copy.git").string())
                .exit_code,
            0);
  make_fetcher(loopback_allowed());
  auto asked = std::make_shared<std::atomic<int>>(0);
  auto [unwanted, dropped] = job("pr 1", {c2_}, {server_.url("copy.git")});
  unwanted.still_wanted = [asked] {
    ++*asked;
    return false;
  };
  request(std::move(unwanted));
  // A second request, wanted: once it is done, the first had every chance to fetch.
  auto [wanted, reported] = job("pr 2", {c2_}, {server_.url("source.git")});
  request(std::move(wanted));
  EXPECT_EQ(wait_done(*reported), FetchResult::complete);
  EXPECT_GE(*asked, 1);
  EXPECT_EQ(dropped->calls, 0) << "a request no longer wanted ends silently";
  EXPECT_EQ(server_.requests_for("/copy.git/"), 0u);
}

TEST_F(GitFetcherTest, ANewRequestWithTheSameKeyReplacesTheOlder) {
  make_fetcher(loopback_allowed());
  auto [older, replaced] = job("state repo", {c1_}, {server_.url("source.git")});
  older.delay = 3600s;  // would wait for an hour
  request(std::move(older));
  auto [newer, reported] = job("state repo", {c2_}, {server_.url("source.git")});
  auto started = std::chrono::steady_clock::now();
  request(std::move(newer));
  EXPECT_EQ(wait_done(*reported), FetchResult::complete);
  EXPECT_LT(std::chrono::steady_clock::now() - started, 60s);
  EXPECT_EQ(replaced->calls, 0) << "the replaced request's done is never called";
  EXPECT_TRUE(test::has_object(target(), c2_));
}

TEST_F(GitFetcherTest, TheFirstAttemptWaitsForTheDelay) {
  make_fetcher(loopback_allowed());
  auto [fetch, reported] = job("state repo", {c2_}, {server_.url("source.git")});
  fetch.delay = 1s;
  auto started = std::chrono::steady_clock::now();
  request(std::move(fetch));
  EXPECT_EQ(wait_done(*reported), FetchResult::complete);
  EXPECT_GE(std::chrono::steady_clock::now() - started, 1s);
}

}  // namespace
}  // namespace graspd::runtime::git
