// State events applied to the repositories here (runtime/git/git_state_sync.*) with real git on
// temporary bare repositories: refs set (and removed) to match the owner's newest state, HEAD
// aligned, objects copied from another repository here with the identifier or fetched from a clone
// URL (a loopback `git http-backend`), and a push in progress left to finish first. The store is
// a map behind the hooks. Local steps run one task at a time, one identifier's lane after
// another's, so a want_commit for a commit that is here (in a lane of its own), asked after other
// work, is the test's signal that each lane's first task before it has ended.
#include <utility>  // before Asio, see toolchain.md §1

#include "runtime/git/git_state_sync.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <iostream>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "messages/nostr/nip19.hpp"
#include "messages/nostr/nip34.hpp"
#include "runtime/git/git_http.hpp"
#include "runtime/git/repository_locks.hpp"
#include "tests/support/git_backend_server.hpp"
#include "tests/support/git_test_repos.hpp"
#include "tests/support/io_thread.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/wait_until.hpp"

namespace graspd::runtime::git {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using ::graspd::git::StateRefs;

nostr::Pubkey key(std::uint8_t fill) {
  nostr::Pubkey out{};
  out.fill(fill);
  return out;
}

/// A kind 30618 event naming `identifier`: all the applier reads of it is its `d` tag.
nostr::EventPtr state_event(const std::string& identifier) {
  nostr::Event event;
  event.kind = 30618;
  event.tags = {{"d", identifier}};
  return std::make_shared<const nostr::Event>(std::move(event));
}

/// The store as the applier sees it, and what the applier told it back. Hooks run on the
/// applier's strand, the test reads from its own thread: everything under one mutex.
struct FakeStore {
  std::mutex mutex;
  std::map<std::pair<nostr::Pubkey, std::string>, StateRefs> states;
  std::map<std::string, std::vector<nostr::Pubkey>> owners;
  std::vector<std::string> clone_urls;
  std::vector<std::pair<RepositoryRef, nostr::EventId>> objects_present;
  std::vector<std::pair<RepositoryRef, std::string>> commits_present;
  int lock_attempts = 0;
  int lock_looks = 0;
  /// Set by the test: called (on the applier's strand) when objects are reported present.
  std::function<void(const RepositoryRef&)> on_present;

  void set_state(const nostr::Pubkey& owner, StateRefs refs,
                 const std::string& identifier = "repo") {
    std::lock_guard lock{mutex};
    states[{owner, identifier}] = std::move(refs);
  }
  bool commit_reported(const std::string& commit) {
    std::lock_guard lock{mutex};
    for (const auto& [name, id] : commits_present)
      if (id == commit) return true;
    return false;
  }
  std::size_t objects_reported() {
    std::lock_guard lock{mutex};
    return objects_present.size();
  }
};

class GitStateSyncTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(git_.empty()) << "git is needed";
    repositories_.prepare();
    ASSERT_TRUE(repositories_.create(a_));
    ASSERT_TRUE(repositories_.create(marker_));
    marker_commit_ = test::make_commit(repositories_.path_of(marker_), "marker");
    ASSERT_EQ(marker_commit_.size(), 40u);
    store_.owners["repo"] = {a_.owner};
  }

  void TearDown() override { sync_.reset(); }

  fs::path path(const RepositoryRef& name) const { return repositories_.path_of(name); }

  GitStateSyncOptions options() const {
    GitStateSyncOptions o;
    o.git_binary = git_;
    o.allow_private_addresses = true;  // the other clone URL is on loopback
    o.fetch_delay = 0s;
    o.fetch_timeout = 60s;
    return o;
  }

  GitStateSyncHooks hooks() {
    GitStateSyncHooks h;
    h.newest_state = [this](const nostr::Pubkey& owner,
                            const std::string& identifier) -> std::optional<StateRefs> {
      std::lock_guard lock{store_.mutex};
      auto it = store_.states.find({owner, identifier});
      if (it == store_.states.end()) return std::nullopt;
      return it->second;
    };
    h.owners = [this](const std::string& identifier) {
      std::lock_guard lock{store_.mutex};
      return store_.owners[identifier];
    };
    h.clone_urls = [this](const RepositoryRef&) {
      std::lock_guard lock{store_.mutex};
      return store_.clone_urls;
    };
    h.objects_present = [this](const RepositoryRef& name, const nostr::EventId& id) {
      std::function<void(const RepositoryRef&)> call;
      {
        std::lock_guard lock{store_.mutex};
        store_.objects_present.emplace_back(name, id);
        call = store_.on_present;
      }
      if (call) call(name);
    };
    h.commit_present = [this](const RepositoryRef& name, const std::string& commit) {
      std::lock_guard lock{store_.mutex};
      store_.commits_present.emplace_back(name, commit);
    };
    h.try_lock = [this](const std::string& path) {
      {
        std::lock_guard lock{store_.mutex};
        ++store_.lock_attempts;
      }
      return locks_.try_lock(path);
    };
    h.unlock = [this](const std::string& path) { locks_.unlock(path); };
    h.is_locked = [this](const std::string& path) {
      {
        std::lock_guard lock{store_.mutex};
        ++store_.lock_looks;
      }
      return locks_.is_locked(path);
    };
    return h;
  }

  void start(GitStateSyncOptions o) {
    sync_ = std::make_unique<GitStateSync>(io_.io(), repositories_, std::move(o), hooks());
  }

  /// Waits until every step asked of the applier before has ended (see the file comment).
  void settle() {
    sync_->want_commit(marker_, marker_commit_, {});
    ASSERT_TRUE(test::wait_until([&] { return store_.commit_reported(marker_commit_); }));
    std::lock_guard lock{store_.mutex};
    store_.commits_present.clear();
  }

  /// A bare repository `name` under `served`, with `main` at a commit of its own (and `v1` at its
  /// parent when `two` is set), served by `server`; the commits, newest first.
  static std::vector<std::string> served_source(const fs::path& served, const std::string& name,
                                                bool two = false) {
    auto source = served / name;
    EXPECT_TRUE(test::init_bare(source));
    std::vector<std::string> commits{test::make_commit(source, "one")};
    if (two) commits.insert(commits.begin(), test::make_commit(source, "two", commits.front()));
    test::git_in(source, "update-ref refs/heads/main " + commits.front());
    return commits;
  }

  /// A state whose event id is 64 times `id_fill`.
  static StateRefs state(char id_fill, std::map<std::string, std::string> refs,
                         std::optional<std::string> head = std::nullopt) {
    StateRefs out;
    out.event_id = std::string(64, id_fill);
    out.refs = std::move(refs);
    out.head = std::move(head);
    return out;
  }

  test::TempDir dir_{"graspd-git-state-sync"};
  Repositories repositories_{dir_.path() / "git"};
  RepositoryRef a_{key(0x42), "repo"};
  RepositoryRef b_{key(0x43), "repo"};
  RepositoryRef marker_{key(0x4d), "marker"};
  std::string git_ = find_git_binary();
  std::string marker_commit_;
  FakeStore store_;
  RepositoryLocks locks_;
  test::IoThread io_;
  std::unique_ptr<GitStateSync> sync_;
};

TEST_F(GitStateSyncTest, AStateWhoseObjectsAreHereIsAppliedAtOnce) {
  auto c1 = test::make_commit(path(a_), "one");
  auto c2 = test::make_commit(path(a_), "two", c1);
  store_.set_state(a_.owner, state('a',
                                   {{"refs/heads/main", c2},
                                    {"refs/heads/dev", c1},
                                    {"refs/tags/v1", c1},
                                    {"refs/heads/bad..name", c1}},
                                   "dev"));
  // A repository of that name whose owner announced nothing is not touched.
  RepositoryRef stranger{key(0x44), "repo"};
  ASSERT_TRUE(repositories_.create(stranger));
  store_.set_state(stranger.owner, state('b', {{"refs/heads/main", c1}}));
  start(options());
  sync_->on_state(state_event("repo"));
  ASSERT_TRUE(test::wait_until([&] { return sync_->counters().applied == 1; }));
  EXPECT_EQ(test::refs_of(path(a_)),
            c1 + " refs/heads/dev\n" + c2 + " refs/heads/main\n" + c1 + " refs/tags/v1")
      << "an invalid ref name is skipped";
  EXPECT_EQ(test::read_file(path(a_) / "HEAD"), "ref: refs/heads/dev\n");
  ASSERT_EQ(store_.objects_reported(), 1u);
  EXPECT_EQ(store_.objects_present[0].first, a_);
  EXPECT_EQ(nostr::to_hex(store_.objects_present[0].second), std::string(64, 'a'));
  settle();
  EXPECT_EQ(test::refs_of(path(stranger)), "");
  EXPECT_EQ(sync_->counters().applied, 1u);
}

TEST_F(GitStateSyncTest, RefsTheStateDoesNotNameAreDeletedButRefsNostrStay) {
  auto c1 = test::make_commit(path(a_), "one");
  auto c2 = test::make_commit(path(a_), "two", c1);
  auto nostr_ref = std::string(nostr::nip34::refs_nostr_prefix) + std::string(64, 'e');
  for (auto ref : {"refs/heads/main", "refs/heads/old", "refs/tags/gone", nostr_ref.c_str()})
    test::git_in(path(a_), std::string("update-ref ") + ref + " " + c1);
  store_.set_state(a_.owner, state('a', {{"refs/heads/main", c2}}));
  start(options());
  sync_->on_state(state_event("repo"));
  ASSERT_TRUE(test::wait_until([&] { return sync_->counters().applied == 1; }));
  EXPECT_EQ(test::refs_of(path(a_)), c2 + " refs/heads/main\n" + c1 + " " + nostr_ref);
}

TEST_F(GitStateSyncTest, AStateAlreadyInLineTakesNoLockAndOnlyAlignsHead) {
  auto c1 = test::make_commit(path(a_), "one");
  test::git_in(path(a_), "update-ref refs/heads/trunk " + c1);
  store_.set_state(a_.owner, state('a', {{"refs/heads/trunk", c1}}));
  ASSERT_TRUE(locks_.try_lock(path(a_).string())) << "a push is in progress";
  start(options());
  sync_->on_state(state_event("repo"));
  settle();
  EXPECT_EQ(store_.objects_reported(), 1u);
  EXPECT_NE(test::read_file(path(a_) / "HEAD"), "ref: refs/heads/trunk\n")
      << "nothing is read or changed while the push holds the repository";
  locks_.unlock(path(a_).string());
  ASSERT_TRUE(test::wait_until(
      [&] { return test::read_file(path(a_) / "HEAD") == "ref: refs/heads/trunk\n"; }));
  EXPECT_EQ(sync_->counters().applied, 0u) << "nothing had to move";
  EXPECT_EQ(store_.lock_attempts, 0) << "a push right after another is not turned away";
}

TEST_F(GitStateSyncTest, AStateWaitsForAPushInProgressThenIsApplied) {
  auto c1 = test::make_commit(path(a_), "one");
  auto c2 = test::make_commit(path(a_), "two", c1);
  test::git_in(path(a_), "update-ref refs/heads/main " + c1);
  store_.set_state(a_.owner, state('a', {{"refs/heads/main", c2}}));
  ASSERT_TRUE(locks_.try_lock(path(a_).string()));
  start(options());
  sync_->on_state(state_event("repo"));
  ASSERT_TRUE(test::wait_until([&] {
    std::lock_guard lock{store_.mutex};
    return store_.lock_looks >= 2;
  })) << "the applier looks again while the push holds the lock";
  EXPECT_EQ(store_.lock_attempts, 0) << "the lock is looked at before the refs are read";
  EXPECT_EQ(test::ref_of(path(a_), "refs/heads/main"), c1) << "the push holds the lock";
  EXPECT_EQ(sync_->counters().applied, 0u);

  // The push ends without bringing the refs in line (it failed, or it moved only refs/nostr
  // refs): the state is applied all the same, with no further event.
  locks_.unlock(path(a_).string());
  ASSERT_TRUE(test::wait_until([&] { return sync_->counters().applied == 1; }));
  EXPECT_EQ(test::ref_of(path(a_), "refs/heads/main"), c2);
  EXPECT_TRUE(locks_.try_lock(path(a_).string())) << "the applier gave the lock back";
}

TEST_F(GitStateSyncTest, ObjectsAreCopiedFromAnotherRepositoryHereWithTheIdentifier) {
  ASSERT_TRUE(repositories_.create(b_));
  auto c1 = test::make_commit(path(a_), "one");
  auto c2 = test::make_commit(path(a_), "two", c1);
  store_.owners["repo"] = {a_.owner, b_.owner};
  store_.set_state(b_.owner, state('b', {{"refs/heads/main", c2}}));
  start(options());  // no clone URL: only the sibling has the objects
  sync_->on_state(state_event("repo"));
  ASSERT_TRUE(test::wait_until([&] { return sync_->counters().applied == 1; }));
  EXPECT_EQ(test::ref_of(path(b_), "refs/heads/main"), c2);
  EXPECT_TRUE(test::has_object(path(b_), c1)) << "with its history";
  EXPECT_EQ(test::refs_of(path(a_)), "") << "the sibling (no state of its own) is unchanged";
  EXPECT_EQ(sync_->counters().fetched, 0u);
}

TEST_F(GitStateSyncTest, MissingObjectsAreFetchedFromACloneUrlThenApplied) {
  test::TempDir served{"graspd-git-served"};
  test::GitBackendServer server{served.path()};
  auto commits = served_source(served.path(), "source.git", true);
  auto c2 = commits[0], c1 = commits[1];
  store_.clone_urls = {server.url("source.git")};
  store_.set_state(a_.owner, state('a', {{"refs/heads/main", c2}, {"refs/tags/v1", c1}}));
  start(options());
  sync_->on_state(state_event("repo"));
  ASSERT_TRUE(test::wait_until([&] { return sync_->counters().applied == 1; }, 60s));
  EXPECT_EQ(sync_->counters().fetched, 1u);
  EXPECT_EQ(test::refs_of(path(a_)), c2 + " refs/heads/main\n" + c1 + " refs/tags/v1");
  EXPECT_EQ(store_.objects_reported(), 1u) << "reported once every object was here";
  sync_.reset();  // before the server goes
}

TEST_F(GitStateSyncTest, AStateThatCameBySyncIsFetchedAtOnceAClientsAfterThePushWindow) {
  test::TempDir served{"graspd-git-served"};
  test::GitBackendServer server{served.path()};
  auto c1 = served_source(served.path(), "source.git")[0];
  store_.clone_urls = {server.url("source.git")};
  store_.set_state(a_.owner, state('a', {{"refs/heads/main", c1}}));
  auto o = options();
  o.fetch_delay = std::chrono::hours(1);
  o.push_window = std::chrono::hours(1);
  start(o);
  // A client's state: a push usually follows it, so the fetch waits (an hour here).
  sync_->on_state(state_event("repo"));
  settle();
  EXPECT_EQ(sync_->counters().fetched, 0u);
  // The same state from a sync peer: no push comes here for it, the fetch starts at once.
  sync_->on_state(state_event("repo"), true);
  ASSERT_TRUE(test::wait_until([&] { return sync_->counters().applied == 1; }, 60s));
  EXPECT_EQ(test::refs_of(path(a_)), c1 + " refs/heads/main");
  sync_.reset();  // before the server goes
}

TEST_F(GitStateSyncTest, AClientsStateWaitsOnlyThePushWindowWhenNoPushBegins) {
  test::TempDir served{"graspd-git-served"};
  test::GitBackendServer server{served.path()};
  auto c1 = served_source(served.path(), "source.git")[0];
  store_.clone_urls = {server.url("source.git")};
  store_.set_state(a_.owner, state('a', {{"refs/heads/main", c1}}));
  auto o = options();
  o.fetch_delay = std::chrono::hours(1);
  o.push_window = 1s;
  start(o);
  sync_->on_state(state_event("repo"));
  ASSERT_TRUE(test::wait_until([&] { return sync_->counters().applied == 1; }, 60s))
      << "no push began within the window: fetched without waiting the fetch delay";
  EXPECT_EQ(test::refs_of(path(a_)), c1 + " refs/heads/main");
  sync_.reset();
}

TEST_F(GitStateSyncTest, APushUnderWayExtendsAClientsWaitAndItsEndBringsTheState) {
  test::TempDir served{"graspd-git-served"};
  test::GitBackendServer server{served.path()};
  auto c1 = served_source(served.path(), "source.git")[0];
  store_.clone_urls = {server.url("source.git")};
  store_.set_state(a_.owner, state('a', {{"refs/heads/main", c1}}));
  auto o = options();
  o.fetch_delay = std::chrono::hours(1);
  o.push_window = 1s;
  start(o);
  ASSERT_TRUE(locks_.try_lock(path(a_).string())) << "a push is under way";
  sync_->on_state(state_event("repo"));
  // The fetch looks at the lock at the end of each window and waits again.
  ASSERT_TRUE(test::wait_until([&] {
    std::lock_guard lock{store_.mutex};
    return store_.lock_looks >= 3;
  }));
  EXPECT_TRUE(server.requests().empty()) << "nothing fetched while the push is under way";
  // The push brings the objects and ends: its report brings the state in line, no fetch needed.
  test::git_in(path(a_), "fetch --quiet " + (served.path() / "source.git").string() + " " + c1);
  locks_.unlock(path(a_).string());
  sync_->on_pushed(a_);
  ASSERT_TRUE(test::wait_until([&] { return sync_->counters().applied == 1; }));
  EXPECT_EQ(test::refs_of(path(a_)), c1 + " refs/heads/main");
  settle();
  EXPECT_TRUE(server.requests().empty()) << "the waiting fetch was dropped";
  sync_.reset();
}

TEST_F(GitStateSyncTest, ACrowdedIdentifierDelaysAnotherIdentifiersStateByAtMostOneTask) {
  // 200 keys announce one identifier, each with a state naming a commit no repository has: every
  // one of their tasks copies from siblings in vain. A victim's new repository, another
  // identifier, has its objects here.
  constexpr int crowd = 200;
  std::vector<nostr::Pubkey> owners;
  for (int i = 0; i < crowd; ++i) {
    auto owner = key(0x10);
    owner[0] = static_cast<std::uint8_t>(i);
    owners.push_back(owner);
    ASSERT_TRUE(repositories_.create({owner, "crowd"}));
    store_.set_state(owner, state('c', {{"refs/heads/main", std::string(40, 'e')}}), "crowd");
  }
  store_.owners["crowd"] = owners;
  auto c1 = test::make_commit(path(a_), "one");
  store_.set_state(a_.owner, state('a', {{"refs/heads/main", c1}}));
  std::atomic<std::uint64_t> tasks_before_victim{0};
  store_.on_present = [&](const RepositoryRef& name) {
    if (name == a_) tasks_before_victim = sync_->counters().tasks - 1;
  };
  auto o = options();
  o.fetch_enabled = false;
  start(o);
  auto began = std::chrono::steady_clock::now();
  sync_->on_state(state_event("crowd"));
  sync_->on_state(state_event("crowd"));  // again: one look is pending already
  sync_->on_state(state_event("repo"));
  ASSERT_TRUE(test::wait_until([&] { return sync_->counters().applied == 1; }));
  auto served_after = std::chrono::steady_clock::now() - began;
  EXPECT_EQ(test::ref_of(path(a_), "refs/heads/main"), c1);
  // At most the crowd task running when the victim's state arrived and one more turn of the
  // crowd's lane (without lanes: all 200 tasks, each copying from 199 siblings).
  EXPECT_LE(tasks_before_victim.load(), 2u)
      << "the crowded identifier's lane gave way after one of its 200 tasks";
  std::cout << "victim served after " << tasks_before_victim.load() << " other task(s), "
            << std::chrono::duration_cast<std::chrono::milliseconds>(served_after).count()
            << " ms\n";
  // Each crowd task copies from at most max_siblings of its 199 siblings.
  ASSERT_TRUE(test::wait_until([&] { return sync_->counters().tasks >= 6; }, 60s));
  settle();
  auto tasks = sync_->counters().tasks.load();
  EXPECT_LE(sync_->counters().copies.load(), tasks * o.max_siblings);
}

TEST_F(GitStateSyncTest, WithFetchingOffAStateMissingObjectsIsLeftAlone) {
  test::TempDir other{"graspd-git-other"};
  ASSERT_TRUE(test::init_bare(other.path() / "x.git"));
  auto elsewhere = test::make_commit(other.path() / "x.git", "elsewhere");
  store_.set_state(a_.owner, state('a', {{"refs/heads/main", elsewhere}}));
  auto o = options();
  o.fetch_enabled = false;
  start(o);
  sync_->on_state(state_event("repo"));
  settle();
  EXPECT_EQ(test::refs_of(path(a_)), "") << "a ref never points at an object that is not here";
  EXPECT_EQ(store_.objects_reported(), 0u);
  EXPECT_EQ(sync_->counters().applied, 0u);
}

TEST_F(GitStateSyncTest, AWantedCommitIsReportedWhenHereOrOnceFetchedFromThePrsCloneUrl) {
  auto here = test::make_commit(path(a_), "here");
  test::TempDir served{"graspd-git-served"};
  test::GitBackendServer server{served.path()};
  auto pr_commit = served_source(served.path(), "fork.git")[0];
  start(options());
  sync_->want_commit(a_, here, {});
  ASSERT_TRUE(test::wait_until([&] { return store_.commit_reported(here); }));
  EXPECT_TRUE(server.requests().empty());

  sync_->want_commit(a_, pr_commit, {server.url("fork.git")});
  ASSERT_TRUE(test::wait_until([&] { return store_.commit_reported(pr_commit); }, 60s));
  EXPECT_TRUE(test::has_object(path(a_), pr_commit));
  EXPECT_EQ(test::refs_of(path(a_)), "") << "a wanted commit moves no ref";
  std::lock_guard lock{store_.mutex};
  EXPECT_EQ(store_.commits_present.back().first, a_);
  sync_.reset();
}

}  // namespace
}  // namespace graspd::runtime::git
