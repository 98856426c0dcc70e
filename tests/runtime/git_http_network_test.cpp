// Git hosting's own network thread: a handed-off git connection keeps streaming while the relay's
// network thread (the one that accepted it) is busy. Before, clones were streamed on the relay's
// network threads, and twenty of them delayed WebSocket answers by seconds (docs/benchmarks.md,
// "Git hosting: clone").
#include <utility>  // before Asio, see docs/toolchain.md §1

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <future>
#include <string>
#include <thread>

#include "messages/nostr/nip19.hpp"
#include "runtime/git/git_http.hpp"
#include "runtime/git/git_repository.hpp"
#include "runtime/net/http_server.hpp"
#include "tests/support/temp_dir.hpp"

namespace graspd::runtime::git {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

/// The first line git prints for `command` run in `dir`, empty when it fails.
std::string git_line(const fs::path& dir, const std::string& command) {
  auto full = "cd '" + dir.string() +
              "' && env -i PATH=/usr/bin:/bin GIT_CONFIG_NOSYSTEM=1 GIT_AUTHOR_NAME=t "
              "GIT_AUTHOR_EMAIL=t@t GIT_COMMITTER_NAME=t GIT_COMMITTER_EMAIL=t@t "
              "GIT_AUTHOR_DATE='@1700000000 +0000' GIT_COMMITTER_DATE='@1700000000 +0000' git " +
              command + " </dev/null";
  FILE* pipe = ::popen(full.c_str(), "r");
  if (!pipe) return "";
  char line[256] = {};
  bool got = std::fgets(line, sizeof line, pipe) != nullptr;
  if (::pclose(pipe) != 0 || !got) return "";
  std::string text = line;
  if (!text.empty() && text.back() == '\n') text.pop_back();
  return text;
}

/// Gives the repository one commit and `count` tags on it: its advertisement is ~78 bytes a tag.
void add_tags(const fs::path& repository, int count) {
  auto tree = git_line(repository, "hash-object -t tree -w --stdin");
  ASSERT_FALSE(tree.empty());
  auto commit = git_line(repository, "commit-tree " + tree + " -m tags");
  ASSERT_EQ(commit.size(), 40u);
  std::ofstream refs(repository / "packed-refs");
  refs << "# pack-refs with: peeled fully-peeled sorted \n";
  char name[64];
  for (int i = 0; i < count; ++i) {
    std::snprintf(name, sizeof name, "refs/tags/advertised-tag-%07d", i);
    refs << commit << ' ' << name << '\n';
  }
}

/// A client socket that receives into a small buffer, connected to 127.0.0.1:`port`.
int connect_small_window(std::uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  int window = 16 * 1024;
  ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &window, sizeof window);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(port);
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

/// Reads from `fd` into `into` until `done(into)` or `deadline`; false on timeout or EOF first.
bool read_until(int fd, std::string& into, const std::function<bool(const std::string&)>& done,
                std::chrono::milliseconds deadline) {
  auto end = std::chrono::steady_clock::now() + deadline;
  char buffer[16 * 1024];
  while (!done(into)) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        end - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
    auto n = ::read(fd, buffer, sizeof buffer);
    if (n <= 0) return done(into);
    into.append(buffer, static_cast<std::size_t>(n));
  }
  return true;
}

TEST(GitHttpNetwork, GitAnswersStreamWhileTheRelayNetworkThreadIsBusy) {
  test::TempDir dir{"graspd-git-network"};
  Repositories repositories{dir.path() / "git"};
  repositories.prepare();
  nostr::Pubkey owner{};
  owner.fill(0x42);
  RepositoryRef name{owner, "tags"};
  ASSERT_TRUE(repositories.create(name));
  // ~16 MB of advertisement: far more than the socket buffers between git and the client hold.
  constexpr int tags = 200000;
  add_tags(repositories.path_of(name), tags);

  boost::asio::io_context relay_io{1};
  auto work = boost::asio::make_work_guard(relay_io);
  HttpServer server{relay_io, {}, [](const HttpRequestInfo&) { return HttpResponse{}; }};
  GitHttp git{repositories, {}, {}};
  ASSERT_FALSE(git.git_binary().empty()) << "git is needed";
  server.set_handoff_handler(git.predicate(), git.handler());
  server.start();
  std::thread relay_thread([&] { relay_io.run(); });

  int fd = connect_small_window(server.port());
  ASSERT_GE(fd, 0);
  std::string request = "GET /" + nostr::encode_npub(owner) +
                        "/tags.git/info/refs?service=git-upload-pack HTTP/1.1\r\nHost: x\r\n\r\n";
  ASSERT_EQ(::write(fd, request.data(), request.size()), static_cast<ssize_t>(request.size()));
  std::string answer;
  auto headers_read = [](const std::string& text) {
    return text.find("\r\n\r\n") != std::string::npos;
  };
  ASSERT_TRUE(read_until(fd, answer, headers_read, 10s)) << answer;
  EXPECT_EQ(answer.rfind("HTTP/1.1 200", 0), 0u) << answer;

  // The relay's only network thread is now busy (as with many WebSocket clients): the answer,
  // already handed off, must still arrive whole.
  std::promise<void> blocked, release;
  auto released = release.get_future();
  boost::asio::post(relay_io, [&] {
    blocked.set_value();
    released.wait();
  });
  blocked.get_future().wait();
  auto last_chunk = [](const std::string& text) {
    return text.size() >= 5 && text.compare(text.size() - 5, 5, "0\r\n\r\n") == 0;
  };
  bool whole = read_until(fd, answer, last_chunk, 20s);
  release.set_value();
  EXPECT_TRUE(whole) << "got " << answer.size() << " bytes";
  EXPECT_GT(answer.size(), static_cast<std::size_t>(tags) * 70);
  EXPECT_NE(answer.find("refs/tags/advertised-tag-0199999"), std::string::npos);

  ::close(fd);
  git.stop();
  server.stop();
  work.reset();
  relay_io.stop();
  relay_thread.join();
}

}  // namespace
}  // namespace graspd::runtime::git
