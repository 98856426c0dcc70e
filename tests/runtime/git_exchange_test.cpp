// One git Smart HTTP request at a time (runtime/git/git_exchange*.cpp behind GitHttp), over a real
// loopback TCP connection to graspd's HTTP listener, with hand-written requests: the ref
// advertisement, a fetch answered with a pack, a push refused with git's own report-status (`ng`)
// and one applied, and the limits (413 for a body too large as sent or once decoded, 404/405/415,
// the wall-clock limit and the process cap). Answers are parsed (HTTP, chunks, pkt-lines, side
// band) and the repository is read back with git: what the client is told and what happened agree.
#include <utility>  // before Asio, see toolchain.md §1

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>
#include <zlib.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "messages/nostr/nip19.hpp"
#include "runtime/git/git_http.hpp"
#include "runtime/git/git_repository.hpp"
#include "runtime/net/http_server.hpp"
#include "tests/support/git_test_repos.hpp"
#include "tests/support/http_client.hpp"
#include "tests/support/io_thread.hpp"
#include "tests/support/process_state.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/wait_until.hpp"

namespace graspd::runtime::git {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using ::graspd::git::PushAuthority;
using ::graspd::git::RefUpdate;
using ::graspd::git::StateRefs;
using ::graspd::git::zero_id;

// ------------------------------------------------------------------ parsing what comes back

/// The body of a chunked answer, decoded; `ok` false when the chunks are malformed or the last
/// chunk is missing (the answer was cut).
std::string dechunk(const std::string& body, bool* ok) {
  std::string out;
  std::size_t at = 0;
  *ok = false;
  while (at < body.size()) {
    auto eol = body.find("\r\n", at);
    if (eol == std::string::npos) return out;
    auto size = std::stoul(body.substr(at, eol - at), nullptr, 16);
    if (size == 0) {
      *ok = true;
      return out;
    }
    if (eol + 2 + size + 2 > body.size()) return out;
    out += body.substr(eol + 2, size);
    at = eol + 2 + size + 2;
  }
  return out;
}

/// The pkt-lines at the start of `data` (a flush is ""); what follows them (a pack) in `rest`.
std::vector<std::string> pkt_lines(std::string_view data, std::string* rest = nullptr) {
  std::vector<std::string> out;
  while (data.size() >= 4) {
    unsigned length = 0;
    if (std::sscanf(std::string(data.substr(0, 4)).c_str(), "%4x", &length) != 1) break;
    if (length == 0) {
      out.emplace_back();
      data.remove_prefix(4);
      continue;
    }
    if (length < 4 || length > data.size()) break;
    out.emplace_back(data.substr(4, length - 4));
    data.remove_prefix(length);
  }
  if (rest) *rest = std::string(data);
  return out;
}

/// Side-band-64k: band 1 joined, band 2 (progress and messages) joined.
std::pair<std::string, std::string> demux(const std::vector<std::string>& packets) {
  std::string band1, band2;
  for (const auto& p : packets) {
    if (p.empty()) continue;
    if (p[0] == '\1') band1 += p.substr(1);
    if (p[0] == '\2') band2 += p.substr(1);
  }
  return {band1, band2};
}

/// Sends `raw` to 127.0.0.1:`port` and reads until the server closes (or `deadline`); the answer
/// as read, `error` naming how reading ended when it was not a clean close.
test::HttpResult exchange(std::uint16_t port, const std::string& raw,
                          std::chrono::milliseconds deadline) {
  test::HttpResult failed;
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(port);
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    failed.error = std::string("connect: ") + std::strerror(errno);
    ::close(fd);
    return failed;
  }
  // The server may answer (413) before it read everything: a failed send is not the end.
  for (std::size_t sent = 0; sent < raw.size();) {
    auto n = ::send(fd, raw.data() + sent, raw.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    sent += static_cast<std::size_t>(n);
  }
  std::string text, ended = "deadline";
  auto end = std::chrono::steady_clock::now() + deadline;
  char buffer[16 * 1024];
  while (std::chrono::steady_clock::now() < end) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) continue;
    auto n = ::recv(fd, buffer, sizeof buffer, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n == 0) ended.clear();
    if (n < 0) ended = std::string("recv: ") + std::strerror(errno);
    if (n <= 0) break;
    text.append(buffer, static_cast<std::size_t>(n));
  }
  ::close(fd);
  auto result = test::parse_http_response(text);
  if (!ended.empty()) result.error += (result.error.empty() ? "" : "; ") + ended;
  return result;
}

struct Answer {
  test::HttpResult http;
  std::string body;      ///< dechunked when chunked
  bool complete = true;  ///< the last chunk arrived
};

// ------------------------------------------------------------------ building requests

std::string gzip(const std::string& data) {
  z_stream z{};
  deflateInit2(&z, Z_BEST_COMPRESSION, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY);
  std::string out(deflateBound(&z, data.size()) + 64, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

/// The body as chunks of at most 8 KiB, with the last chunk.
std::string chunked(const std::string& body) {
  std::string out;
  for (std::size_t at = 0; at < body.size(); at += 8192) {
    auto piece = body.substr(at, 8192);
    char size[16];
    std::snprintf(size, sizeof size, "%zx\r\n", piece.size());
    out += size + piece + "\r\n";
  }
  return out + "0\r\n\r\n";
}

using test::owner;

std::string base() {
  return "/" + nostr::encode_npub(owner()) + "/repo.git";
}

// ------------------------------------------------------------------ the fixture

/// What the hooks were called with (on git hosting's network thread).
struct HookCalls {
  std::mutex mutex;
  PushAuthority authority;                                              ///< what the store answers
  std::vector<std::pair<std::string, std::vector<std::string>>> asked;  ///< identifier, pr ids
  std::vector<std::pair<RepositoryRef, std::vector<RefUpdate>>> pushed;
};

class GitExchangeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(find_git_binary().empty()) << "git is needed";
    repositories_.prepare();
    ASSERT_TRUE(repositories_.create(name_));
    // The same content and dates make the same ids: c1 is in both, c2 only in the work repo.
    ASSERT_TRUE(test::init_bare(work()));
    c1_ = test::make_commit(work(), "one");
    c2_ = test::make_commit(work(), "two", c1_);
    ASSERT_EQ(test::make_commit(hosted(), "one"), c1_);
    test::git_in(hosted(), "update-ref refs/heads/main " + c1_);
    ASSERT_EQ(test::ref_of(hosted(), "refs/heads/main"), c1_);
  }

  void TearDown() override {
    if (git_) git_->stop();
    if (server_) relay_.run_on([this] { server_->stop(); });
    relay_.run_on([this] { server_.reset(); });
    git_.reset();
  }

  fs::path work() const { return dir_.path() / "work.git"; }
  fs::path hosted() const { return repositories_.path_of(name_); }

  /// Starts the relay's HTTP listener with git hosting behind it.
  void serve(GitHttpOptions options = {}) {
    GitHttpHooks hooks;
    hooks.authority = [calls = calls_](const RepositoryRef& repository,
                                       const std::vector<std::string>& pr_ids) {
      std::lock_guard lock{calls->mutex};
      EXPECT_EQ(repository.owner, owner());
      calls->asked.emplace_back(repository.identifier, pr_ids);
      return calls->authority;
    };
    hooks.pushed = [calls = calls_](const RepositoryRef& name,
                                    const std::vector<RefUpdate>& updates,
                                    std::function<void()> reported) {
      {
        std::lock_guard lock{calls->mutex};
        calls->pushed.emplace_back(name, updates);
      }
      reported();
    };
    git_ = std::make_unique<GitHttp>(repositories_, std::move(options), std::move(hooks), locks_);
    ASSERT_TRUE(relay_.run_on([this] {
      server_ = std::make_unique<HttpServer>(relay_.io(), HttpServerOptions{},
                                             [](const HttpRequestInfo&) { return HttpResponse{}; });
      server_->set_handoff_handler(git_->predicate(), git_->handler());
      server_->start();
    }));
  }

  /// The state the store answers pushes with: branches and tags as given.
  void store_state(std::map<std::string, std::string> refs) {
    StateRefs state;
    state.event_id = std::string(64, 'f');
    state.refs = std::move(refs);
    std::lock_guard lock{calls_->mutex};
    calls_->authority.state = state;
  }

  /// Sends `raw` and reads the answer until the server closes.
  Answer send(const std::string& raw) {
    Answer answer;
    answer.http = exchange(server_->port(), raw, 30s);
    answer.body = answer.http.body;
    if (answer.http.header("transfer-encoding") == "chunked")
      answer.body = dechunk(answer.http.body, &answer.complete);
    return answer;
  }
  Answer get(const std::string& target, const std::string& extra_headers = "") {
    return send("GET " + target + " HTTP/1.1\r\nHost: x\r\n" + extra_headers + "\r\n");
  }
  Answer post(const std::string& service, const std::string& body,
              const std::string& extra_headers = "") {
    return send("POST " + base() + "/" + service +
                " HTTP/1.1\r\nHost: x\r\nContent-Type: " + "application/x-" + service +
                "-request\r\nContent-Length: " + std::to_string(body.size()) + "\r\n" +
                extra_headers + "\r\n" + body);
  }

  /// A pack of c2 (not c1, which the hosted repository has), as git push would send it.
  std::string pack_of_c2() {
    auto pack = test::run_command(
        "git --git-dir=" + test::shell_quote(work().string()) + " pack-objects --stdout --revs",
        c2_ + "\n^" + c1_ + "\n");
    EXPECT_EQ(pack.exit_code, 0);
    EXPECT_EQ(pack.out.substr(0, 4), "PACK");
    return pack.out;
  }
  std::string update_main(const std::string& capabilities) {
    return pkt_line(c1_ + " " + c2_ + " refs/heads/main" + '\0' + capabilities + "\n") + "0000";
  }

  /// Waits until no git process of git hosting runs (the answer may be out before the slot is).
  void expect_no_process_left() {
    EXPECT_TRUE(test::wait_until([&] { return git_->counters().processes_running == 0; }));
  }

  test::TempDir dir_{"graspd-git-exchange"};
  Repositories repositories_{dir_.path() / "git"};
  RepositoryRef name_{owner(), "repo"};
  std::string c1_, c2_;
  std::shared_ptr<HookCalls> calls_ = std::make_shared<HookCalls>();
  std::shared_ptr<RepositoryLocks> locks_ = std::make_shared<RepositoryLocks>();
  test::IoThread relay_;
  std::unique_ptr<GitHttp> git_;
  std::unique_ptr<HttpServer> server_;
};

// ------------------------------------------------------------------ fetch side

TEST_F(GitExchangeTest, InfoRefsAdvertisesTheRepositorysRefsAfterTheServiceLine) {
  serve();
  auto answer = get(base() + "/info/refs?service=git-upload-pack");
  ASSERT_EQ(answer.http.status, 200) << answer.http.error;
  EXPECT_EQ(answer.http.header("content-type"), "application/x-git-upload-pack-advertisement");
  EXPECT_EQ(answer.http.header("cache-control"), "no-cache, max-age=0, must-revalidate");
  EXPECT_TRUE(answer.complete);
  auto packets = pkt_lines(answer.body);
  ASSERT_GE(packets.size(), 4u) << answer.body;
  EXPECT_EQ(packets[0], "# service=git-upload-pack\n");
  EXPECT_EQ(packets[1], "") << "a flush after the service line";
  EXPECT_EQ(packets[2].substr(0, 46), c1_ + " HEAD" + '\0') << "HEAD first, with capabilities";
  EXPECT_EQ(packets[3], c1_ + " refs/heads/main\n");
  EXPECT_EQ(packets.back(), "");
  EXPECT_EQ(git_->counters().processes_started, 1u);
  EXPECT_EQ(git_->counters().requests, 1u);
  expect_no_process_left();

  auto push_side = get(base() + "/info/refs?service=git-receive-pack");
  ASSERT_EQ(push_side.http.status, 200) << push_side.http.error;
  EXPECT_EQ(push_side.http.header("content-type"), "application/x-git-receive-pack-advertisement");
  EXPECT_EQ(pkt_lines(push_side.body).at(0), "# service=git-receive-pack\n");
}

TEST_F(GitExchangeTest, ProtocolV2IsForwardedAndHasNoServiceLine) {
  serve();
  auto answer = get(base() + "/info/refs?service=git-upload-pack", "Git-Protocol: version=2\r\n");
  ASSERT_EQ(answer.http.status, 200) << answer.http.error;
  auto packets = pkt_lines(answer.body);
  ASSERT_FALSE(packets.empty()) << answer.body;
  EXPECT_EQ(packets[0], "version 2\n");
  // A header graspd does not forward leaves git at v0.
  auto dirty =
      get(base() + "/info/refs?service=git-upload-pack", "Git-Protocol: version=2;evil\r\n");
  ASSERT_EQ(dirty.http.status, 200) << dirty.http.error;
  EXPECT_EQ(pkt_lines(dirty.body).at(0), "# service=git-upload-pack\n");
}

TEST_F(GitExchangeTest, UploadPackAnswersAWantWithAPackHoldingTheCommit) {
  serve();
  auto request = pkt_line("want " + c1_ + "\n") + "0000" + pkt_line("done\n");
  auto answer = post("git-upload-pack", request);
  ASSERT_EQ(answer.http.status, 200) << answer.http.error;
  EXPECT_EQ(answer.http.header("content-type"), "application/x-git-upload-pack-result");
  ASSERT_TRUE(answer.complete);
  std::string pack;
  auto packets = pkt_lines(answer.body, &pack);
  EXPECT_EQ(packets, std::vector<std::string>{"NAK\n"});
  ASSERT_EQ(pack.substr(0, 4), "PACK");
  // The pack is whole: git indexes it into an empty repository, and the commit is there.
  auto fresh = dir_.path() / "fresh.git";
  ASSERT_TRUE(test::init_bare(fresh));
  { std::ofstream(dir_.path() / "answer.pack", std::ios::binary) << pack; }
  EXPECT_EQ(test::run_command("git --git-dir=" + fresh.string() + " index-pack --stdin < " +
                              (dir_.path() / "answer.pack").string())
                .exit_code,
            0);
  EXPECT_TRUE(test::has_object(fresh, c1_));
  expect_no_process_left();
}

TEST_F(GitExchangeTest, AGzipRequestBodyIsDecodedOnItsWayToGit) {
  serve();
  auto request = pkt_line("want " + c1_ + "\n") + "0000" + pkt_line("done\n");
  auto answer = post("git-upload-pack", gzip(request), "Content-Encoding: gzip\r\n");
  ASSERT_EQ(answer.http.status, 200) << answer.http.error;
  std::string pack;
  EXPECT_EQ(pkt_lines(answer.body, &pack), std::vector<std::string>{"NAK\n"});
  EXPECT_EQ(pack.substr(0, 4), "PACK");

  auto truncated = gzip(request);
  truncated.resize(truncated.size() / 2);
  auto bad = post("git-upload-pack", truncated, "Content-Encoding: gzip\r\n");
  EXPECT_TRUE(bad.http.status == 400 || !bad.complete)
      << "a cut gzip stream is an error, not a short request: " << bad.http.status;
}

// ------------------------------------------------------------------ push side

TEST_F(GitExchangeTest, ARefusedPushIsAnsweredWithReportStatusNgAndChangesNothing) {
  store_state({{"refs/heads/main", c1_}});  // the maintainers' state keeps main at c1
  serve();
  auto answer = post("git-receive-pack", update_main("report-status") + pack_of_c2());
  ASSERT_EQ(answer.http.status, 200) << answer.http.error;
  EXPECT_EQ(answer.http.header("content-type"), "application/x-git-receive-pack-result");
  ASSERT_TRUE(answer.complete);
  auto report = pkt_lines(answer.body);
  ASSERT_EQ(report.size(), 3u) << answer.body;
  EXPECT_EQ(report[0], "unpack ok\n");
  EXPECT_EQ(report[1].rfind("ng refs/heads/main ", 0), 0u) << report[1];
  EXPECT_GT(report[1].size(), std::string("ng refs/heads/main \n").size()) << "with a reason";
  EXPECT_EQ(report[2], "");

  EXPECT_EQ(test::ref_of(hosted(), "refs/heads/main"), c1_);
  EXPECT_FALSE(test::has_object(hosted(), c2_)) << "the pack was read and dropped, not unpacked";
  EXPECT_EQ(git_->counters().pushes_refused, 1u);
  EXPECT_EQ(git_->counters().pushes_accepted, 0u);
  std::lock_guard lock{calls_->mutex};
  ASSERT_EQ(calls_->asked.size(), 1u);
  EXPECT_EQ(calls_->asked[0].first, "repo");
  EXPECT_TRUE(calls_->asked[0].second.empty()) << "no refs/nostr ref pushed";
  EXPECT_TRUE(calls_->pushed.empty());
}

TEST_F(GitExchangeTest, ARefusalAskedForSideBandComesOnBandOneWithTheReasonOnBandTwo) {
  serve();  // no state at all: a branch cannot be pushed
  auto answer = post("git-receive-pack", update_main("report-status side-band-64k") + pack_of_c2());
  ASSERT_EQ(answer.http.status, 200) << answer.http.error;
  auto packets = pkt_lines(answer.body);
  ASSERT_FALSE(packets.empty());
  EXPECT_EQ(packets.back(), "");
  auto [band1, band2] = demux(packets);
  EXPECT_EQ(band2.rfind("graspd: push refused: ", 0), 0u) << band2;
  auto report = pkt_lines(band1);
  ASSERT_EQ(report.size(), 3u) << band1;
  EXPECT_EQ(report[0], "unpack ok\n");
  EXPECT_EQ(report[1].rfind("ng refs/heads/main ", 0), 0u);
  EXPECT_EQ(test::ref_of(hosted(), "refs/heads/main"), c1_);
}

TEST_F(GitExchangeTest, AnAuthorisedPushIsAppliedReportedAndAnnounced) {
  store_state({{"refs/heads/main", c2_}});
  serve();
  auto answer = post("git-receive-pack", update_main("report-status") + pack_of_c2());
  ASSERT_EQ(answer.http.status, 200) << answer.http.error;
  auto report = pkt_lines(answer.body);
  EXPECT_EQ(report, (std::vector<std::string>{"unpack ok\n", "ok refs/heads/main\n", ""}));
  EXPECT_EQ(test::ref_of(hosted(), "refs/heads/main"), c2_);
  EXPECT_EQ(git_->counters().pushes_accepted, 1u);
  {
    std::lock_guard lock{calls_->mutex};
    ASSERT_EQ(calls_->pushed.size(), 1u);
    EXPECT_EQ(calls_->pushed[0].first, name_);
    EXPECT_EQ(calls_->pushed[0].second, (std::vector<RefUpdate>{{c1_, c2_, "refs/heads/main"}}));
  }
  expect_no_process_left();
  EXPECT_TRUE(locks_->try_lock(hosted().string())) << "the push lock was given back";
}

TEST_F(GitExchangeTest, AnEmptyCommandListIsTheProbeAndAnsweredEmpty) {
  serve();
  auto answer = post("git-receive-pack", "0000");
  ASSERT_EQ(answer.http.status, 200) << answer.http.error;
  EXPECT_TRUE(answer.complete);
  EXPECT_EQ(answer.body, "");
  EXPECT_EQ(git_->counters().processes_started, 0u);
}

// ------------------------------------------------------------------ limits and errors

/// A command list that never ends: ~90 KiB of valid commands and no flush.
std::string endless_commands() {
  std::string body;
  for (int i = 0; body.size() < 90 * 1024; ++i)
    body +=
        pkt_line(zero_id + " " + std::string(40, 'a') + " refs/heads/b" + std::to_string(i) + "\n");
  return body;
}

TEST_F(GitExchangeTest, ABodyBeyondTheLimitIs413AsSentOrOnceDecoded) {
  GitHttpOptions options;
  options.max_body_bytes = 64 * 1024;
  serve(options);
  // Announced too large: answered before any byte of it is read, and before git runs.
  auto announced = send("POST " + base() +
                        "/git-upload-pack HTTP/1.1\r\nHost: x\r\nContent-Type: "
                        "application/x-git-upload-pack-request\r\nContent-Length: 100000\r\n\r\n");
  EXPECT_EQ(announced.http.status, 413) << announced.http.error;
  EXPECT_EQ(announced.body, "request body too large\n");

  // Chunked (no length announced): cut at the limit while reading.
  auto body = endless_commands();
  auto streamed =
      send("POST " + base() +
           "/git-receive-pack HTTP/1.1\r\nHost: x\r\nContent-Type: "
           "application/x-git-receive-pack-request\r\nTransfer-Encoding: chunked\r\n\r\n" +
           chunked(body));
  EXPECT_EQ(streamed.http.status, 413);

  // Small as sent, too large once decoded.
  auto compressed = gzip(body);
  ASSERT_LT(compressed.size(), options.max_body_bytes / 4);
  auto decoded = post("git-receive-pack", compressed, "Content-Encoding: gzip\r\n");
  EXPECT_EQ(decoded.http.status, 413);

  EXPECT_EQ(git_->counters().too_large, 3u);
  EXPECT_EQ(git_->counters().processes_started, 0u);
  std::lock_guard lock{calls_->mutex};
  EXPECT_TRUE(calls_->asked.empty()) << "no authorisation for a push never read to its end";
}

TEST_F(GitExchangeTest, BadPathsMethodsAndTypesAreRefusedWithoutGit) {
  serve();
  auto npub = nostr::encode_npub(owner());
  auto missing = get("/" + npub + "/missing.git/info/refs?service=git-upload-pack");
  EXPECT_EQ(missing.http.status, 404);
  EXPECT_EQ(missing.body, "repository not found\n");
  EXPECT_EQ(get(base() + "/HEAD").http.status, 404) << "no dumb HTTP";
  EXPECT_EQ(get(base() + "/info/refs?service=git-upload-archive").http.status, 404);
  EXPECT_EQ(get("/" + npub + "/..%2Frepo.git/info/refs?service=git-upload-pack").http.status, 404);
  EXPECT_EQ(get("/" + npub + "/%zz.git").http.status, 400);

  auto wrong_method = send("POST " + base() +
                           "/info/refs?service=git-upload-pack HTTP/1.1\r\nHost: x\r\n"
                           "Content-Length: 0\r\n\r\n");
  EXPECT_EQ(wrong_method.http.status, 405);
  EXPECT_EQ(wrong_method.http.header("allow"), "GET, HEAD, OPTIONS");
  auto get_rpc = get(base() + "/git-upload-pack");
  EXPECT_EQ(get_rpc.http.status, 405);
  EXPECT_EQ(get_rpc.http.header("allow"), "POST, OPTIONS");

  auto wrong_type = send("POST " + base() +
                         "/git-upload-pack HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\n"
                         "Content-Length: 4\r\n\r\n0000");
  EXPECT_EQ(wrong_type.http.status, 415);
  EXPECT_EQ(post("git-upload-pack", "0000", "Content-Encoding: br\r\n").http.status, 415);

  EXPECT_EQ(git_->counters().processes_started, 0u);
  EXPECT_EQ(git_->counters().requests, 9u);
}

TEST_F(GitExchangeTest, AGitProcessBeyondTheWallClockLimitIsKilledAndTheConnectionClosed) {
  // A stand-in git that never answers (and would run for minutes).
  auto pid_file = dir_.path() / "git.pid";
  auto fake = dir_.path() / "fake-git";
  test::write_script(fake, "echo $$ > '" + pid_file.string() + "'; exec sleep 300");
  GitHttpOptions options;
  options.git_binary = fake.string();
  options.process_timeout = 2s;
  serve(options);
  auto started = std::chrono::steady_clock::now();
  auto answer = get(base() + "/info/refs?service=git-upload-pack");
  EXPECT_LT(std::chrono::steady_clock::now() - started, 25s);
  EXPECT_FALSE(answer.http.status == 200 && answer.complete) << "no complete answer";
  EXPECT_EQ(git_->counters().timeouts, 1u);
  auto pid_text = test::read_file(pid_file);
  ASSERT_FALSE(pid_text.empty());
  auto pid = static_cast<pid_t>(std::stol(pid_text));
  EXPECT_TRUE(test::wait_until([&] { return test::process_ended(pid); }))
      << "the stand-in survived";
  expect_no_process_left();
}

/// A connection holding one request open (the stand-in git never answers it).
class OpenRequest {
 public:
  OpenRequest(std::uint16_t port, const std::string& raw) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(port);
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ =
        ::connect(fd_, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0 &&
        ::send(fd_, raw.data(), raw.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(raw.size());
  }
  ~OpenRequest() { ::close(fd_); }
  bool connected() const { return connected_; }

 private:
  int fd_ = -1;
  bool connected_ = false;
};

TEST_F(GitExchangeTest, BeyondTheProcessCapWithoutALineARequestIs503) {
  auto fake = dir_.path() / "fake-git";
  test::write_script(fake, "exec sleep 300");
  GitHttpOptions options;
  options.git_binary = fake.string();
  options.max_processes = 1;
  options.queue_wait = 0s;
  serve(options);
  OpenRequest first(server_->port(), "GET " + base() +
                                         "/info/refs?service=git-upload-pack HTTP/1.1\r\n"
                                         "Host: x\r\n\r\n");
  ASSERT_TRUE(first.connected());
  ASSERT_TRUE(test::wait_until([&] { return git_->counters().processes_running == 1; }));
  auto second = get(base() + "/info/refs?service=git-upload-pack");
  EXPECT_EQ(second.http.status, 503);
  EXPECT_EQ(second.http.header("retry-after"), "5");
  EXPECT_EQ(git_->counters().busy, 1u);
  EXPECT_EQ(git_->counters().processes_started, 1u);
}

}  // namespace
}  // namespace graspd::runtime::git
