// Ref advertisement probes (runtime/git/git_ref_probe.*) of another git host on the loopback
// interface (`git http-backend` behind tests/support/git_backend_server.hpp) and of repositories
// here: the exact branches and tags, that only the advertisement was asked for (no upload-pack
// POST: nothing downloaded), the clone-URL rule and checked addresses shared with the fetcher,
// the reasons of each failure, the bounds (time, size, refs, running and waiting probes), and that
// no repository around the data directory lends git its configuration. Loopback is a private
// address: the probe is allowed it through its options, except where that rule is the point.
#include <utility>  // before Asio, see toolchain.md §1

#include "runtime/git/git_ref_probe.hpp"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <boost/asio/strand.hpp>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "runtime/git/git_http.hpp"
#include "tests/support/git_backend_server.hpp"
#include "tests/support/git_test_repos.hpp"
#include "tests/support/graspd_process.hpp"
#include "tests/support/io_thread.hpp"
#include "tests/support/silent_host.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/wait_until.hpp"

namespace graspd::runtime::git {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using ProbedRefs = std::map<std::string, std::string>;

/// What a probe's done callback reported; shared with the callback, which may outlive a test.
class ProbeReport {
 public:
  void set(RefProbeResult result) {
    std::lock_guard lock{mutex_};
    ++calls_;
    result_ = std::move(result);
  }
  int calls() const {
    std::lock_guard lock{mutex_};
    return calls_;
  }
  RefProbeResult result() const {
    std::lock_guard lock{mutex_};
    return result_.value_or(RefProbeResult{});
  }

 private:
  mutable std::mutex mutex_;
  int calls_ = 0;
  std::optional<RefProbeResult> result_;
};

class GitRefProbeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(git_.empty()) << "git is needed";
    repositories_.prepare();
    ASSERT_TRUE(test::init_bare(source()));
    c1_ = test::make_commit(source(), "one");
    c2_ = test::make_commit(source(), "two", c1_);
    ASSERT_EQ(c2_.size(), 40u);
    test::git_in(source(), "update-ref refs/heads/main " + c2_);
    test::git_in(source(), "update-ref refs/heads/dev " + c1_);
    test::git_in(source(), "update-ref refs/tags/light " + c1_);
    test::git_in(source(), "tag -a v1 -m release " + c2_);
    // Neither a branch nor a tag: not listed.
    test::git_in(source(), "update-ref refs/nostr/pr1 " + c1_);
    test::git_in(source(), "symbolic-ref HEAD refs/heads/main");
    annotated_ = test::ref_of(source(), "refs/tags/v1");
    ASSERT_EQ(annotated_.size(), 40u);
    ASSERT_NE(annotated_, c2_) << "an annotated tag names a tag object";
  }

  void TearDown() override {
    if (probe_) io_.run_on(strand_, [this] { probe_->stop(); });
    io_.run_on(strand_, [this] { probe_.reset(); });
  }

  fs::path source() const { return served_.path() / "source.git"; }
  ProbedRefs source_refs() const {
    return {{"refs/heads/main", c2_},
            {"refs/heads/dev", c1_},
            {"refs/tags/light", c1_},
            {"refs/tags/v1", annotated_}};
  }

  static RefProbeOptions loopback_allowed() {
    RefProbeOptions options;
    options.service = HostPort{"relay.example", 443};
    options.allow_private_addresses = true;
    return options;
  }
  void make_probe(RefProbeOptions options, std::string git = {}) {
    GitRunner runner{strand_, repositories_, git.empty() ? git_ : std::move(git)};
    probe_ = std::make_shared<RefProbe>(runner, std::move(options));
  }

  /// Starts a probe of `url` on the strand (the only place it may be called from).
  std::shared_ptr<ProbeReport> probe(const std::string& url) {
    auto report = std::make_shared<ProbeReport>();
    EXPECT_TRUE(io_.run_on(strand_, [&] {
      probe_->probe(url, [report](RefProbeResult result) { report->set(std::move(result)); });
    }));
    return report;
  }
  std::shared_ptr<ProbeReport> local(const fs::path& path) {
    auto report = std::make_shared<ProbeReport>();
    EXPECT_TRUE(io_.run_on(strand_, [&] {
      probe_->local_refs(path.string(),
                         [report](RefProbeResult result) { report->set(std::move(result)); });
    }));
    return report;
  }
  /// Waits for the done callback; its result.
  static RefProbeResult wait_done(const ProbeReport& report) {
    EXPECT_TRUE(test::wait_until([&] { return report.calls() > 0; }, 60s)) << "done never called";
    EXPECT_EQ(report.calls(), 1);
    return report.result();
  }
  RefProbeResult probe_and_wait(const std::string& url) { return wait_done(*probe(url)); }

  /// Every request the served host saw fetched the ref advertisement and nothing else.
  void expect_advertisement_only() const {
    auto seen = server_.requests();
    EXPECT_FALSE(seen.empty());
    for (const auto& line : seen) {
      EXPECT_EQ(line.rfind("GET ", 0), 0u) << line;
      EXPECT_NE(line.find("/info/refs?service=git-upload-pack"), std::string::npos) << line;
    }
  }

  test::TempDir dir_{"graspd-git-ref-probe"};
  test::TempDir served_{"graspd-git-probed"};
  test::GitBackendServer server_{served_.path()};
  Repositories repositories_{dir_.path() / "git"};
  std::string git_ = find_git_binary();
  std::string c1_, c2_, annotated_;
  test::IoThread io_;
  boost::asio::strand<boost::asio::io_context::executor_type> strand_{
      boost::asio::make_strand(io_.io())};
  std::shared_ptr<RefProbe> probe_;
};

TEST_F(GitRefProbeTest, TheAdvertisedBranchesAndTagsAreListedFromTheAdvertisementAlone) {
  make_probe(loopback_allowed());
  auto result = probe_and_wait(server_.url("source.git"));
  ASSERT_TRUE(result.ok) << result.reason;
  EXPECT_EQ(result.reason, "");
  EXPECT_EQ(result.refs, source_refs()) << "the annotated tag by its own id, no peeled entry";
  expect_advertisement_only();
  EXPECT_EQ(server_.requests_for("POST"), 0u) << "no upload-pack request: nothing downloaded";
}

TEST_F(GitRefProbeTest, ARepositoryHereListsTheSameRefsAsItsAdvertisement) {
  make_probe(loopback_allowed());
  auto advertised = probe_and_wait(server_.url("source.git"));
  auto here = wait_done(*local(source()));
  ASSERT_TRUE(here.ok) << here.reason;
  EXPECT_EQ(here.refs, source_refs());
  EXPECT_EQ(here.refs, advertised.refs);
}

TEST_F(GitRefProbeTest, ARepositoryWithoutRefsListsNone) {
  RepositoryRef name{nostr::Pubkey{}, "empty"};
  ASSERT_TRUE(repositories_.create(name));
  ASSERT_TRUE(test::init_bare(served_.path() / "empty.git"));
  make_probe(loopback_allowed());
  auto here = wait_done(*local(repositories_.path_of(name)));
  EXPECT_TRUE(here.ok) << here.reason;
  EXPECT_TRUE(here.refs.empty());
  auto advertised = probe_and_wait(server_.url("empty.git"));
  EXPECT_TRUE(advertised.ok) << advertised.reason;
  EXPECT_TRUE(advertised.refs.empty());
}

TEST_F(GitRefProbeTest, ARepositoryNotHereYetSaysSo) {
  make_probe(loopback_allowed());
  auto here = wait_done(*local(repositories_.path_of({nostr::Pubkey{}, "absent"})));
  EXPECT_FALSE(here.ok);
  EXPECT_EQ(here.reason, "no git data here yet");
  EXPECT_TRUE(here.refs.empty());
}

TEST_F(GitRefProbeTest, AClosedPortIsUnreachable) {
  make_probe(loopback_allowed());
  auto result = probe_and_wait("http://127.0.0.1:" + std::to_string(test::free_port()) + "/x.git");
  EXPECT_FALSE(result.ok);
  EXPECT_EQ(result.reason, "unreachable");
}

TEST_F(GitRefProbeTest, APathWithoutARepositoryIsNotAGitRepository) {
  make_probe(loopback_allowed());
  auto result = probe_and_wait(server_.url("missing.git"));
  EXPECT_FALSE(result.ok);
  EXPECT_EQ(result.reason, "not a git repository");
  EXPECT_GT(server_.requests_for("/missing.git/"), 0u);
}

TEST_F(GitRefProbeTest, URLsBreakingThePlainUrlRuleAreRefusedWithoutAConnection) {
  make_probe(loopback_allowed());
  EXPECT_EQ(probe_and_wait(server_.url("source.git?x=1")).reason, "refused: query");
  EXPECT_EQ(probe_and_wait(server_.url("source.git#x")).reason, "refused: fragment");
  EXPECT_EQ(probe_and_wait("ssh://127.0.0.1/source.git").reason, "refused: scheme");
  EXPECT_EQ(probe_and_wait(source().string()).reason, "refused: malformed");
  EXPECT_EQ(probe_and_wait("http://user:secret@127.0.0.1:1/source.git").reason,
            "refused: user_info");
  EXPECT_EQ(probe_and_wait("https://relay.example/npub1x/source.git").reason,
            "refused: this_service");
  EXPECT_TRUE(server_.requests().empty());
}

TEST_F(GitRefProbeTest, LoopbackHasNoPublicAddressUnlessAllowedOrTrusted) {
  auto options = loopback_allowed();
  options.allow_private_addresses = false;
  make_probe(options);
  auto refused = probe_and_wait(server_.url("source.git"));
  EXPECT_FALSE(refused.ok);
  EXPECT_EQ(refused.reason, "no public address");
  EXPECT_TRUE(server_.requests().empty()) << "nothing may connect to a private address";

  options.trusted_hosts = {"127.0.0.1:" + std::to_string(server_.port())};
  make_probe(options);
  auto trusted = probe_and_wait(server_.url("source.git"));
  ASSERT_TRUE(trusted.ok) << trusted.reason;
  EXPECT_EQ(trusted.refs, source_refs());
}

TEST_F(GitRefProbeTest, AHostThatNeverAnswersTimesOut) {
  test::SilentHost silent;
  auto options = loopback_allowed();
  options.timeout = 1s;
  make_probe(options);
  auto started = std::chrono::steady_clock::now();
  auto result = probe_and_wait(silent.url("source.git"));
  EXPECT_EQ(result.reason, "timeout");
  EXPECT_LT(std::chrono::steady_clock::now() - started, 30s) << "git's own limit is 60 s";
}

TEST_F(GitRefProbeTest, AnAdvertisementBeyondItsLimitIsRefused) {
  auto options = loopback_allowed();
  options.max_advertisement_bytes = 100;  // under two of the five lines ls-remote prints
  make_probe(options);
  auto result = probe_and_wait(server_.url("source.git"));
  EXPECT_FALSE(result.ok);
  EXPECT_EQ(result.reason, "advertisement too large");
  EXPECT_TRUE(result.refs.empty());
}

TEST_F(GitRefProbeTest, MoreRefsThanTheLimitAreRefused) {
  auto options = loopback_allowed();
  options.max_refs = 3;
  make_probe(options);
  EXPECT_EQ(probe_and_wait(server_.url("source.git")).reason, "too many refs");
  EXPECT_EQ(wait_done(*local(source())).reason, "too many refs");
  options.max_refs = 4;
  make_probe(options);
  EXPECT_TRUE(probe_and_wait(server_.url("source.git")).ok) << "exactly the limit is kept";
  EXPECT_TRUE(wait_done(*local(source())).ok);
}

TEST_F(GitRefProbeTest, ProbesBeyondTheRunningAndWaitingBoundsAreBusy) {
  test::SilentHost silent;
  auto options = loopback_allowed();
  options.timeout = 3s;  // the busy answer comes at once, long before
  options.max_running = 1;
  options.max_queued = 1;
  make_probe(options);
  auto running = probe(silent.url("a.git"));
  auto waiting = probe(silent.url("b.git"));
  auto refused = probe(server_.url("source.git"));
  std::size_t now_running = 0, now_queued = 0;
  ASSERT_TRUE(io_.run_on(strand_, [&] {
    now_running = probe_->running();
    now_queued = probe_->queued();
  }));
  EXPECT_EQ(now_running, 1u);
  EXPECT_EQ(now_queued, 1u);
  EXPECT_EQ(wait_done(*refused).reason, "busy, try later");
  EXPECT_EQ(running->calls(), 0) << "refused at once, while the first still ran";
  EXPECT_EQ(wait_done(*running).reason, "timeout");
  EXPECT_EQ(wait_done(*waiting).reason, "timeout") << "the waiting probe ran in its turn";
  EXPECT_TRUE(server_.requests().empty());
}

TEST_F(GitRefProbeTest, GitRunsWithTheSharedRemoteOptionsAndItsFirstErrorLineIsTheReason) {
  // A stand-in git: records its arguments, then fails with a long line holding a control byte.
  auto args_file = dir_.path() / "args";
  auto fake = dir_.path() / "fake-git";
  test::write_script(fake, "for a in \"$@\"; do printf '%s\\n' \"$a\"; done > " +
                               test::shell_quote(args_file.string()) +
                               "\nprintf '\\n\\nfatal: bad\\001 news %0300d\\nsecond\\n' 0 >&2\n"
                               "exit 128");
  make_probe(loopback_allowed(), fake.string());
  auto url = server_.url("source.git");
  auto result = probe_and_wait(url);
  EXPECT_FALSE(result.ok);
  EXPECT_EQ(result.reason, "git failed: fatal: bad? news " + std::string(160 - 17, '0'));
  std::vector<std::string> args;
  std::string text = test::read_file(args_file);
  for (std::size_t at = 0; at < text.size();) {
    auto end = text.find('\n', at);
    args.push_back(text.substr(at, end - at));
    at = end + 1;
  }
  auto port = std::to_string(server_.port());
  std::vector<std::string> expected{
      "-c",        "protocol.allow=never",
      "-c",        "protocol.https.allow=always",
      "-c",        "protocol.http.allow=always",
      "-c",        "http.followRedirects=false",
      "-c",        "http.curloptResolve=127.0.0.1:" + port + ":127.0.0.1",
      "-c",        "credential.helper=",
      "-c",        "http.lowSpeedLimit=1024",
      "-c",        "http.lowSpeedTime=60",
      "-c",        "protocol.version=0",
      "ls-remote", "--refs",
      "--",        url};
  EXPECT_EQ(args, expected);
}

TEST_F(GitRefProbeTest, ARepositoryAroundTheDataDirectoryLendsGitNoConfiguration) {
  // The data directory sits in a repository whose configuration would send the probe elsewhere,
  // and the daemon's own environment names it: neither reaches git.
  ASSERT_EQ(
      test::run_command("git init --quiet " + test::shell_quote(dir_.path().string())).exit_code,
      0);
  ASSERT_EQ(
      test::run_command("git -C " + test::shell_quote(dir_.path().string()) + " config url." +
                        server_.url("missing.git") + ".insteadOf " + server_.url("source.git"))
          .exit_code,
      0);
  ::setenv("GIT_DIR", (dir_.path() / ".git").c_str(), 1);
  make_probe(loopback_allowed());
  auto result = probe_and_wait(server_.url("source.git"));
  ::unsetenv("GIT_DIR");
  ASSERT_TRUE(result.ok) << result.reason;
  EXPECT_EQ(result.refs, source_refs());
  EXPECT_EQ(server_.requests_for("/missing.git/"), 0u);
}

}  // namespace
}  // namespace graspd::runtime::git
