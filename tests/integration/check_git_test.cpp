// `graspd check-git [--repair]` end to end (docs/operations.md, "check-git"): the real binary and
// the real git client. Two nodes host the same repository (B fetched it from A by the state's
// clone URL); B is stopped, its objects deleted and a branch the state does not name added; the
// check names the missing and the extra ref (exit 1), --repair refuses A's loopback address unless
// private addresses are allowed (exit 1), then fetches from A and deletes the stray
// branch (exit 0), the check is clean again, and a clone from the restarted B has the commit; with
// B running, a branch moved behind its back is named and moved back. Also: a clean repository
// checked while its daemon runs; a repair that copies from another owner's repository of the
// identifier on the same node; an unknown argument and a bad option (exit 2).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "messages/nostr/nip19.hpp"
#include "tests/integration/relay_test_helpers.hpp"
#include "tests/support/git_objects.hpp"
#include "tests/support/shell.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/wait_until.hpp"

namespace graspd::test {
// A named namespace: the integration program is compiled in unity batches.
namespace check_git_e2e {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using Env = std::vector<std::pair<std::string, std::string>>;

constexpr std::uint8_t repository_owner = 7;

std::string without_newline(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  return text;
}

std::int64_t millis_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                               start)
      .count();
}

class CheckGitE2E : public ::testing::Test {
 protected:
  /// A node with purgatory on (as deployed), sync off (what it holds came from its clients or a
  /// git fetch), fetching at once from loopback clone URLs.
  std::unique_ptr<GraspdProcess> start_node(const std::string& name) {
    auto node = std::make_unique<GraspdProcess>(GraspdOptions{node_env(name), {}, true});
    EXPECT_TRUE(node->start()) << node->stderr_text();
    return node;
  }

  Env node_env(const std::string& name) const {
    return {{"NGIT_SYNC_ENABLED", "false"},
            {"NGIT_GIT_DATA_PATH", git_root(name)},
            {"NGIT_GIT_FETCH_DELAY_SECS", "0"},
            {"NGIT_SYNC_ALLOW_PRIVATE_ADDRESSES", "true"}};
  }

  /// `graspd check-git` with `node`'s configuration (its bind address, store and git data).
  GraspdExit check_git(const GraspdProcess& node, const std::string& name,
                       std::vector<std::string> extra_args = {}, bool allow_private = false) {
    std::vector<std::string> args{"check-git", "--bind-address",
                                  "127.0.0.1:" + std::to_string(node.port()), "--relay-data-path",
                                  node.data_dir()};
    args.insert(args.end(), extra_args.begin(), extra_args.end());
    Env env{{"NGIT_GIT_DATA_PATH", git_root(name)},
            {"NGIT_SYNC_ALLOW_PRIVATE_ADDRESSES", allow_private ? "true" : "false"}};
    auto started = std::chrono::steady_clock::now();
    auto result = GraspdProcess::run_to_exit(args, env, 60s);
    std::cout << "check-git " << (extra_args.empty() ? "" : extra_args.front() + " ") << "on "
              << name << ": exit " << result.exit_code << " in " << millis_since(started)
              << " ms\n";
    return result;
  }

  std::string git_root(const std::string& name) const { return dir_.file("git-" + name); }
  std::string work() const { return dir_.file("work"); }
  std::string npub(std::uint8_t owner = repository_owner) const {
    return nostr::encode_npub(*nostr::pubkey_from_secret(secret_key(owner)));
  }
  std::string repository_path(std::uint8_t owner = repository_owner) const {
    return "/" + npub(owner) + "/repo.git";
  }
  std::string url(const GraspdProcess& node, std::uint8_t owner = repository_owner) const {
    return "http://127.0.0.1:" + std::to_string(node.port()) + repository_path(owner);
  }
  std::string bare(const std::string& name, std::uint8_t owner = repository_owner) const {
    return git_root(name) + repository_path(owner);
  }

  /// `owner`'s announcement of "repo" on `node` only, and its state naming `commit` on main.
  void announce_on(GraspdProcess& node, std::uint8_t owner, const std::string& commit) {
    auto announcement = make_event(
        30617, "", {{"d", "repo"}, {"clone", url(node, owner)}, {"relays", node.relay_url()}},
        1700000000, owner);
    auto state = make_event(
        30618, "", {{"d", "repo"}, {"refs/heads/main", commit}, {"HEAD", "ref: refs/heads/main"}},
        1700000100, owner);
    publish(node, {&announcement, &state});
  }

  bool serves(GraspdProcess& node, std::uint8_t owner, const std::string& commit) {
    return git("ls-remote " + url(node, owner)).output.find(commit + "\trefs/heads/main") !=
           std::string::npos;
  }

  /// git with a private HOME and no system or global configuration.
  ShellResult git(const std::string& args, const std::string& in = "") {
    fs::create_directories(work() + "/home");
    return run_shell(in.empty() ? work() : in,
                     "env -i PATH=/usr/bin:/bin HOME='" + work() +
                         "/home' GIT_CONFIG_NOSYSTEM=1 GIT_TERMINAL_PROMPT=0 "
                         "GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@t GIT_COMMITTER_NAME=t "
                         "GIT_COMMITTER_EMAIL=t@t git " +
                         args);
  }

  void publish(GraspdProcess& node, std::vector<const nostr::Event*> events) {
    auto client = TestClient::connect(node.port());
    if (!client) return;
    for (const auto* event : events) {
      auto ok = client->publish(*event);
      EXPECT_TRUE(ok && ok->accepted) << (ok ? ok->message : "no answer");
    }
  }

  /// Announcement (listing both nodes) and a state naming a new commit, published to both;
  /// the commit pushed to A only (B fetches it from A). Returns the commit.
  std::string host_on_both(GraspdProcess& a, GraspdProcess& b) {
    EXPECT_EQ(git("init -q -b main local").exit_code, 0);
    EXPECT_EQ(git("commit -q --allow-empty -m one", work() + "/local").exit_code, 0);
    auto commit = without_newline(git("rev-parse HEAD", work() + "/local").output);
    auto announcement = make_event(
        30617, "",
        {{"d", "repo"}, {"clone", url(a), url(b)}, {"relays", a.relay_url(), b.relay_url()}},
        1700000000, repository_owner);
    auto state = make_event(
        30618, "", {{"d", "repo"}, {"refs/heads/main", commit}, {"HEAD", "ref: refs/heads/main"}},
        1700000100, repository_owner);
    // A has the commit before B hears of the state: B's fetch finds it at once.
    publish(a, {&announcement, &state});
    auto pushed = git("push -q " + url(a) + " main", work() + "/local");
    EXPECT_EQ(pushed.exit_code, 0) << pushed.output;
    publish(b, {&announcement, &state});
    return commit;
  }

  /// A branch the state does not name, at a commit of its own (of git's empty tree, which every
  /// repository knows).
  std::string add_stray_branch(const std::string& repository) {
    auto commit =
        without_newline(git("--git-dir='" + repository +
                            "' commit-tree 4b825dc642cb6eb9a060e54bf8d69288fbee4904 -m stray")
                            .output);
    EXPECT_EQ(git("--git-dir='" + repository + "' update-ref refs/heads/stray " + commit).exit_code,
              0);
    return commit;
  }

  TempDir dir_{"graspd-check-git"};
};

TEST_F(CheckGitE2E, NamesMissingAndExtraRefsAndRepairsThemFromAnotherCloneUrl) {
  auto a = start_node("a");
  auto b = start_node("b");
  ASSERT_TRUE(a->running() && b->running());
  auto started = std::chrono::steady_clock::now();
  auto commit = host_on_both(*a, *b);
  ASSERT_TRUE(wait_until(
      [&] {
        return git("ls-remote " + url(*b)).output.find(commit + "\trefs/heads/main") !=
               std::string::npos;
      },
      15s))
      << b->stderr_text();
  std::cout << "B fetched the pushed commit from A " << millis_since(started) << " ms after the "
            << "announcement\n";

  // A clean repository, checked while its daemon runs.
  auto clean = check_git(*a, "a");
  EXPECT_EQ(clean.exit_code, 0) << clean.stdout_text << clean.stderr_text;
  EXPECT_NE(clean.stdout_text.find("checked 1 repositories: 0 differ"), std::string::npos)
      << clean.stdout_text;

  ASSERT_EQ(b->stop(), 0) << b->stderr_text();
  delete_git_objects(bare("b"));
  auto stray = add_stray_branch(bare("b"));

  auto broken = check_git(*b, "b");
  EXPECT_EQ(broken.exit_code, 1) << broken.stdout_text << broken.stderr_text;
  const auto label = npub() + "/repo.git: ";
  EXPECT_NE(
      broken.stdout_text.find(label + "missing refs/heads/main " + commit + " (object not here)"),
      std::string::npos)
      << broken.stdout_text;
  EXPECT_NE(broken.stdout_text.find(label + "extra refs/heads/stray " + stray), std::string::npos)
      << broken.stdout_text;
  EXPECT_NE(broken.stdout_text.find("checked 1 repositories: 1 differ"), std::string::npos)
      << broken.stdout_text;

  // The daemon's URL guard: A is on a loopback address, refused unless private addresses are
  // allowed, so nothing is fetched and nothing moves.
  auto guarded = check_git(*b, "b", {"--repair"});
  EXPECT_EQ(guarded.exit_code, 1) << guarded.stdout_text << guarded.stderr_text;
  EXPECT_NE(guarded.stdout_text.find(label + "still differs: objects found at no fetchable clone"),
            std::string::npos)
      << guarded.stdout_text;
  EXPECT_NE(guarded.stdout_text.find("1 differed, 0 repaired, 1 still differ"), std::string::npos)
      << guarded.stdout_text;

  auto repaired = check_git(*b, "b", {"--repair"}, /*allow_private=*/true);
  EXPECT_EQ(repaired.exit_code, 0) << repaired.stdout_text << repaired.stderr_text;
  EXPECT_NE(repaired.stdout_text.find(label + "repaired"), std::string::npos)
      << repaired.stdout_text;
  EXPECT_NE(repaired.stdout_text.find("1 differed, 1 repaired, 0 still differ"), std::string::npos)
      << repaired.stdout_text;

  auto again = check_git(*b, "b");
  EXPECT_EQ(again.exit_code, 0) << again.stdout_text << again.stderr_text;
  EXPECT_NE(again.stdout_text.find("checked 1 repositories: 0 differ"), std::string::npos)
      << again.stdout_text;

  ASSERT_TRUE(b->restart()) << b->stderr_text();
  auto cloned = git("clone -q " + url(*b) + " from-b");
  ASSERT_EQ(cloned.exit_code, 0) << cloned.output;
  EXPECT_EQ(without_newline(git("rev-parse HEAD", work() + "/from-b").output), commit);
  EXPECT_EQ(git("ls-remote " + url(*b)).output.find("refs/heads/stray"), std::string::npos);

  // Beside the running daemon: a branch moved behind its back is named and moved back.
  auto elsewhere = add_stray_branch(bare("b"));
  ASSERT_EQ(git("--git-dir='" + bare("b") + "' update-ref refs/heads/main " + elsewhere).exit_code,
            0);
  auto moved = check_git(*b, "b");
  EXPECT_EQ(moved.exit_code, 1) << moved.stdout_text << moved.stderr_text;
  EXPECT_NE(moved.stdout_text.find(label + "missing refs/heads/main " + commit + " (here at " +
                                   elsewhere + ")"),
            std::string::npos)
      << moved.stdout_text;
  auto moved_back = check_git(*b, "b", {"--repair"});
  EXPECT_EQ(moved_back.exit_code, 0) << moved_back.stdout_text << moved_back.stderr_text;
  EXPECT_NE(git("ls-remote " + url(*b)).output.find(commit + "\trefs/heads/main"),
            std::string::npos);
  EXPECT_EQ(b->stop(), 0) << b->stderr_text();
  EXPECT_EQ(a->stop(), 0) << a->stderr_text();
}

TEST_F(CheckGitE2E, ARepairCopiesFromAnotherOwnersRepositoryOfTheIdentifierHere) {
  constexpr std::uint8_t other_owner = 8;
  auto node = start_node("n");
  ASSERT_TRUE(node->running());
  EXPECT_EQ(git("init -q -b main local").exit_code, 0);
  EXPECT_EQ(git("commit -q --allow-empty -m one", work() + "/local").exit_code, 0);
  auto commit = without_newline(git("rev-parse HEAD", work() + "/local").output);
  announce_on(*node, repository_owner, commit);
  auto pushed = git("push -q " + url(*node) + " main", work() + "/local");
  ASSERT_EQ(pushed.exit_code, 0) << pushed.output;
  // The other owner's state: the node copies the objects from the first owner's repository.
  announce_on(*node, other_owner, commit);
  ASSERT_TRUE(wait_until([&] { return serves(*node, other_owner, commit); }, 15s))
      << node->stderr_text();
  ASSERT_EQ(node->stop(), 0) << node->stderr_text();
  delete_git_objects(bare("n"));

  // The only clone URL is this node's own (never fetched from): the sibling is the one source.
  auto repaired = check_git(*node, "n", {"--repair"});
  EXPECT_EQ(repaired.exit_code, 0) << repaired.stdout_text << repaired.stderr_text;
  EXPECT_NE(repaired.stdout_text.find(npub() + "/repo.git: repaired"), std::string::npos)
      << repaired.stdout_text;
  EXPECT_NE(repaired.stdout_text.find("checked 2 repositories: 1 differed, 1 repaired"),
            std::string::npos)
      << repaired.stdout_text;
  ASSERT_TRUE(node->restart()) << node->stderr_text();
  EXPECT_TRUE(serves(*node, repository_owner, commit));
  auto cloned = git("clone -q " + url(*node) + " copied");
  EXPECT_EQ(cloned.exit_code, 0) << cloned.output;
  EXPECT_EQ(node->stop(), 0) << node->stderr_text();
}

TEST_F(CheckGitE2E, AnUnknownArgumentOrABadOptionIsAUsageError) {
  auto unknown = GraspdProcess::run_to_exit({"check-git", "--no-such-flag"});
  EXPECT_EQ(unknown.exit_code, 2) << unknown.stderr_text;
  EXPECT_NE(unknown.stderr_text.find("--no-such-flag"), std::string::npos) << unknown.stderr_text;

  auto bad = GraspdProcess::run_to_exit({"check-git"}, {{"NGIT_GIT_FETCH_TIMEOUT_SECS", "soon"}});
  EXPECT_EQ(bad.exit_code, 2) << bad.stderr_text;
  EXPECT_NE(bad.stderr_text.find("NGIT_GIT_FETCH_TIMEOUT_SECS"), std::string::npos)
      << bad.stderr_text;

  auto no_store =
      GraspdProcess::run_to_exit({"check-git", "--relay-data-path", dir_.file("nothing")},
                                 {{"NGIT_GIT_DATA_PATH", dir_.file("nothing-git")}});
  EXPECT_EQ(no_store.exit_code, 2) << no_store.stderr_text;
  EXPECT_NE(no_store.stderr_text.find("relay_data_path"), std::string::npos)
      << no_store.stderr_text;
}

}  // namespace
}  // namespace check_git_e2e
}  // namespace graspd::test
