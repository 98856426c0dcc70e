// Deterministic tests of the git hosting actor under CAF's test_coordinator: repositories on disk
// created, found and removed on the acceptance actor's messages, the existence questions answered
// from the announcements in the store, and git data announced to subscribers as GitDataArrived
// (what a push reports and what git processes find). The git processes themselves (state
// applier, refs/nostr refs) are tested in tests/runtime.
#include "actors/git/git_host.hpp"

#include <gtest/gtest.h>
#include <atomic>

#include <boost/asio/io_context.hpp>
#include <caf/all.hpp>
#include <filesystem>

#include "messages/nostr/nip34.hpp"
#include "runtime/git/git_http.hpp"
#include "store/lmdb/store_view.hpp"
#include "tests/store/store_test_util.hpp"
#include "tests/support/actor_fixture.hpp"
#include "tests/support/git_test_repos.hpp"
#include "tests/support/io_thread.hpp"
#include "tests/support/wait_until.hpp"

namespace graspd {
namespace {

using store::test::bytes_of;
using store::test::unsigned_event;

class GitHostTest : public test::ActorTest {
 protected:
  GitHostTest()
      : store_(std::make_shared<store::EventStore>(store::test::options_for(store_dir_))),
        repositories_(repo_dir_.path()) {
    repositories_.prepare();
    GitHostConfig config;
    config.repositories = repositories_;
    config.view =
        std::make_shared<store::StoreAndHeldView>(std::shared_ptr<const store::EventStore>(store_));
    config.locks = std::make_shared<runtime::git::RepositoryLocks>();
    config.io = &io_;
    host_ = spawn(git_host, std::move(config));
    run();
  }

  /// The actor's state (its git process drivers) goes before the io_context and directories it
  /// uses; the base class would end the actor only after they are gone.
  ~GitHostTest() override {
    caf::anon_send_exit(host_, caf::exit_reason::kill);
    run();
  }

  /// An announcement of `identifier` by key `owner`, stored.
  nostr::EventPtr announce(std::uint64_t owner, const std::string& identifier) {
    auto ev = unsigned_event(next_id_++, owner, 1000, nostr::nip34::kind::repo_announcement,
                             {{"d", identifier}});
    store_->write_batch(std::vector<nostr::EventPtr>{ev});
    return ev;
  }

  RepositoryRef ref(std::uint64_t owner, const std::string& identifier) {
    return {bytes_of(owner, 0xaa), identifier};
  }

  /// A GitDataArrived subscriber recording what it receives.
  git_data_feed_actor subscribe(std::vector<GitDataArrived>& log) {
    auto subscriber = spawn([&log]() -> git_data_feed_actor::behavior_type {
      return {[&log](const GitDataArrived& arrived) { log.push_back(arrived); }};
    });
    caf::anon_send(host_, atom::feed_subscribe::value, subscriber);
    run();
    return subscriber;
  }

  /// Whether git hosting answered RepoAnnounced for `announcement` with success.
  bool created(const nostr::EventPtr& announcement) {
    bool answered = false;
    auto refusal = request_refusal(host_, answered, RepoAnnounced{announcement});
    return answered && !refusal;
  }

  store::test::TempDir store_dir_;
  store::test::TempDir repo_dir_;
  std::shared_ptr<store::EventStore> store_;
  runtime::git::Repositories repositories_;
  boost::asio::io_context io_;
  git_host_actor host_;
  std::uint64_t next_id_ = 1;
};

TEST_F(GitHostTest, AnAnnouncedRepositoryExistsOnDiskBeforeTheReply) {
  auto announcement = announce(1, "demo");
  EXPECT_TRUE(created(announcement));
  EXPECT_TRUE(repositories_.exists(ref(1, "demo")));
  EXPECT_TRUE(std::filesystem::is_regular_file(repositories_.path_of(ref(1, "demo")) / "HEAD"));
  EXPECT_EQ(request<bool>(host_, RepoExists{"demo"}), true);
  EXPECT_TRUE(created(announcement)) << "already there counts";
}

TEST_F(GitHostTest, AnInvalidIdentifierGetsNoRepository) {
  auto announcement = announce(1, "..");
  bool answered = false;
  auto refusal = request_refusal(host_, answered, RepoAnnounced{announcement});
  ASSERT_TRUE(answered);
  ASSERT_TRUE(refusal.has_value()) << "refused with git_errc::invalid_identifier";
  EXPECT_TRUE(is(*refusal, git_errc::invalid_identifier)) << system().render(*refusal);
  EXPECT_NE(system().render(*refusal).find("git: invalid_identifier"), std::string::npos)
      << "rendered by name: " << system().render(*refusal);
  EXPECT_EQ(request<bool>(host_, RepoExists{".."}), false);
}

TEST_F(GitHostTest, ARepositoryExistsOnlyForAnOwnerWhoseAnnouncementIsHere) {
  EXPECT_EQ(request<bool>(host_, RepoExists{"demo"}), false) << "nothing announced";
  // On disk but announced by nobody (left behind): not hosted.
  ASSERT_TRUE(repositories_.create(ref(2, "demo")));
  EXPECT_EQ(request<bool>(host_, RepoExists{"demo"}), false);
  announce(2, "demo");
  EXPECT_EQ(request<bool>(host_, RepoExists{"demo"}), true);
  EXPECT_EQ(request<bool>(host_, RepoExists{"other"}), false);
}

TEST_F(GitHostTest, ReposHostedKeepsTheOnesOnDiskInTheOrderAsked) {
  ASSERT_TRUE(repositories_.create(ref(1, "a")));
  ASSERT_TRUE(repositories_.create(ref(3, "c")));
  auto hosted = request<std::vector<RepositoryRef>>(
      host_, ReposHosted{{ref(3, "c"), ref(2, "b"), ref(1, "a"), ref(1, "..")}});
  ASSERT_TRUE(hosted);
  EXPECT_EQ(*hosted, (std::vector<RepositoryRef>{ref(3, "c"), ref(1, "a")}));
}

TEST_F(GitHostTest, AWithdrawnAnnouncementLosesItsRepository) {
  auto announcement = announce(1, "demo");
  ASSERT_TRUE(created(announcement));
  caf::anon_send(host_, RepoWithdrawn{announcement});
  run();
  EXPECT_FALSE(repositories_.exists(ref(1, "demo")));
}

TEST_F(GitHostTest, APushIsAnnouncedWithItsRefsNostrUpdatesOnly) {
  std::vector<GitDataArrived> arrived;
  subscribe(arrived);
  const std::string commit(40, 'c');
  nostr::EventId pr = bytes_of(9, 0x77);
  std::vector<git::RefUpdate> updates{
      {std::string(40, '0'), std::string(40, 'b'), "refs/heads/main"},
      {std::string(40, '0'), commit, nostr::nip34::refs_nostr_ref(pr)},
      {std::string(40, '0'), commit, "refs/nostr/NOT-AN-ID"},
      {commit, commit, nostr::nip34::refs_nostr_ref(bytes_of(8, 0x77))},  // unchanged
  };
  // `reported` comes once the subscribers were told (the push's HTTP answer waits for it).
  std::atomic<std::size_t> told_when_reported{0};
  std::atomic<bool> reported{false};
  push_reporter(host_)(ref(1, "demo"), updates, [&] {
    told_when_reported = arrived.size();
    reported = true;
  });
  ASSERT_TRUE(test::wait_until([&] {
    run();
    return reported.load();
  }));
  EXPECT_EQ(told_when_reported.load(), 1u);
  ASSERT_EQ(arrived.size(), 1u);
  EXPECT_EQ(arrived[0].repository, ref(1, "demo"));
  EXPECT_TRUE(arrived[0].states.empty());
  EXPECT_TRUE(arrived[0].commits.empty());
  ASSERT_EQ(arrived[0].pr_refs.size(), 1u);
  EXPECT_EQ(arrived[0].pr_refs[0].id, pr);
  EXPECT_EQ(arrived[0].pr_refs[0].commit, commit);
}

TEST_F(GitHostTest, WhatGitFoundReachesEverySubscriberOnce) {
  std::vector<GitDataArrived> first, second;
  auto subscriber = subscribe(first);
  subscribe(second);
  caf::anon_send(host_, atom::feed_subscribe::value, subscriber);  // again: no second copy
  run();
  caf::anon_send(host_, atom::git_found::value,
                 GitDataArrived{ref(1, "demo"), {bytes_of(5, 0x55)}, {}, {}, {}});
  run();
  ASSERT_EQ(first.size(), 1u);
  ASSERT_EQ(second.size(), 1u);
  EXPECT_EQ(first[0].states, std::vector<nostr::EventId>{bytes_of(5, 0x55)});
}

TEST_F(GitHostTest, ShutdownIsConfirmed) {
  EXPECT_EQ(request<bool>(host_, atom::shutdown::value), true);
}

// ---------------------------------------------------------------- maintenance

/// Git hosting with maintenance on (every 60 s of the test clock, auto-gc past one pack),
/// its git processes run by a thread of their own under a cap of one process.
class GitHostMaintenanceTest : public test::ActorTest {
 protected:
  GitHostMaintenanceTest()
      : store_(std::make_shared<store::EventStore>(store::test::options_for(store_dir_))),
        repositories_(repo_dir_.path()),
        slots_(std::make_shared<runtime::git::ProcessSlots>(1, 4)) {
    repositories_.prepare();
    GitHostConfig config;
    config.repositories = repositories_;
    config.view =
        std::make_shared<store::StoreAndHeldView>(std::shared_ptr<const store::EventStore>(store_));
    config.locks = std::make_shared<runtime::git::RepositoryLocks>();
    config.maintenance_interval = std::chrono::seconds(60);
    config.maintenance.git_binary = runtime::git::find_git_binary();
    config.maintenance.auto_pack_limit = 1;
    config.process_slots = slots_;
    config.io = &io_.io();
    host_ = spawn(git_host, std::move(config));
    run();
  }

  ~GitHostMaintenanceTest() override {
    caf::anon_send_exit(host_, caf::exit_reason::kill);
    run();
    io_.stop();
  }

  /// Adds a commit on main in a pack of its own.
  void add_pack(const RepositoryRef& name, const std::string& content) {
    auto path = repositories_.path_of(name);
    auto parent = test::ref_of(path, "refs/heads/main");
    test::git_in(path, "update-ref refs/heads/main " + test::make_commit(path, content, parent));
    test::git_in(path, "repack -q");
  }

  /// A repository of two packs, more than gc.autoPackLimit: git gc --auto has work to do.
  RepositoryRef repository_with_two_packs(const std::string& identifier) {
    RepositoryRef name{bytes_of(1, 0xaa), identifier};
    EXPECT_TRUE(repositories_.create(name));
    add_pack(name, "one");
    add_pack(name, "two");
    return name;
  }

  std::size_t packs(const RepositoryRef& name) {
    return test::pack_count(repositories_.path_of(name));
  }

  const runtime::git::GitMaintenanceCounters& counters() {
    return state<GitHostState, git_host_actor::base>(host_).maintenance->counters();
  }

  /// Lets the run that the last step started end, and the actor hear of it.
  bool runs_done(std::uint64_t n) {
    bool ended = test::wait_until([&] { return counters().done + counters().failed >= n; });
    run();
    return ended && counters().done == n;
  }

  store::test::TempDir store_dir_;
  store::test::TempDir repo_dir_;
  std::shared_ptr<store::EventStore> store_;
  runtime::git::Repositories repositories_;
  std::shared_ptr<runtime::git::ProcessSlots> slots_;
  test::IoThread io_;
  git_host_actor host_;
};

TEST_F(GitHostMaintenanceTest, ARepositoryWrittenToIsRepackedOneIntervalLaterAndAtMostOncePerIt) {
  auto name = repository_with_two_packs("demo");
  ASSERT_EQ(packs(name), 2u);
  caf::anon_send(host_, atom::git_found::value, GitDataArrived{name, {}, {}, {}, {}});
  run();
  advance_time(std::chrono::seconds(59));
  EXPECT_EQ(counters().done, 0u) << "a burst of writes settles first";
  advance_time(std::chrono::seconds(1));
  ASSERT_TRUE(runs_done(1));
  EXPECT_EQ(packs(name), 1u) << "git gc --auto repacked them into one";
  EXPECT_EQ(slots_->running(), 0u) << "the process slot was given back";

  // Written again at once: not maintained again before a whole interval has passed.
  add_pack(name, "three");
  caf::anon_send(host_, atom::git_found::value, GitDataArrived{name, {}, {}, {}, {}});
  run();
  advance_time(std::chrono::seconds(30));
  EXPECT_EQ(counters().done, 1u);
  advance_time(std::chrono::seconds(30));
  EXPECT_TRUE(runs_done(2));
  EXPECT_EQ(packs(name), 1u);
}

TEST_F(GitHostMaintenanceTest, MaintenanceWaitsForAFreeGitProcessUnderTheSharedCap) {
  auto name = repository_with_two_packs("demo");
  // A client's request holds the only git process.
  ASSERT_EQ(slots_->take_or_queue("127.0.0.9", [] {}), runtime::git::ProcessSlots::Grant::taken);
  caf::anon_send(host_, atom::git_found::value, GitDataArrived{name, {}, {}, {}, {}});
  run();
  advance_time(std::chrono::seconds(60));
  ASSERT_TRUE(test::wait_until([&] { return slots_->waiting() == 1; }))
      << "maintenance waits in line";
  EXPECT_EQ(counters().done, 0u);
  EXPECT_EQ(packs(name), 2u);
  slots_->give("127.0.0.9");  // the slot passes to maintenance
  EXPECT_TRUE(runs_done(1));
  EXPECT_EQ(packs(name), 1u);
  EXPECT_EQ(slots_->running(), 0u);
}

}  // namespace
}  // namespace graspd
