// The status page in a real browser: headless Chromium (Debian's `chromium`) loads GET / from a
// graspd holding a few repositories (one named with a <script>) and syncing from a peer, lets the
// page's script refresh the sync rows from /api/sync, and dumps the DOM; a screenshot is kept as
// status_page.png in the test's working directory (the build tree). A repository's page fills its
// Replication section with a script: it is loaded from graspd's own HTTP transport serving that
// page and canned replication JSON (RepositoryPageBrowser, screenshot repository_page.png), and,
// once the daemon serves the view, from the daemon. Skipped when chromium is not installed.
#include <utility>  // before Asio, see docs/toolchain.md §1

#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <regex>

#include "messages/nostr/nip19.hpp"
#include "runtime/git/git_http.hpp"
#include "runtime/net/http_server.hpp"
#include "runtime/net/site_url.hpp"
#include "tests/integration/relay_test_helpers.hpp"
#include "tests/support/http_client.hpp"
#include "tests/support/io_thread.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/wait_until.hpp"

namespace graspd::test {
namespace {

using namespace std::chrono_literals;

std::string chromium_binary() {
  if (const char* path = std::getenv("GRASPD_CHROMIUM")) return path;
  for (const char* path : {"/usr/bin/chromium", "/usr/bin/chromium-browser"})
    if (std::filesystem::exists(path)) return path;
  return {};
}

/// Runs headless chromium with `args` on `url` (at most 30 s); returns its stdout.
std::string run_chromium(const std::string& binary, const TempDir& profile, const std::string& args,
                         const std::string& url) {
  auto command = "timeout 30 " + binary +
                 " --headless --no-sandbox --disable-gpu --no-first-run --user-data-dir=" +
                 profile.path().string() + " " + args + " '" + url + "' 2>/dev/null";
  std::string out;
  if (FILE* pipe = ::popen(command.c_str(), "r")) {
    char buffer[4096];
    while (auto n = std::fread(buffer, 1, sizeof buffer, pipe)) out.append(buffer, n);
    ::pclose(pipe);
  }
  return out;
}

nostr::Event repository(const std::string& d, const std::string& name, std::int64_t at) {
  return make_event(30617, "", {{"d", d}, {"name", name}, {"description", "about " + d}}, at);
}

std::size_t count_of(const std::string& text, const std::string& part) {
  std::size_t n = 0;
  for (auto at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

TEST(StatusPageBrowser, RendersRelayRowsAndRepositoriesWithUntrustedTextAsText) {
  auto chromium = chromium_binary();
  if (chromium.empty()) GTEST_SKIP() << "chromium not installed (apt-get install chromium)";

  GraspdProcess peer(relay_options());
  ASSERT_TRUE(peer.start()) << peer.stderr_text();
  GraspdProcess relay({.env = {{"NGIT_ACCEPTANCE_POLICY", "open"},
                               {"NGIT_RELAY_NAME", "Browser test relay"},
                               {"NGIT_SYNC_BOOTSTRAP_RELAY_URL", peer.relay_url()}},
                       .args = {}});
  ASSERT_TRUE(relay.start()) << relay.stderr_text();

  auto client = TestClient::connect(relay.port());
  ASSERT_TRUE(client);
  const std::string evil = "<script>document.title='pwned'</script>";
  for (const auto& ev :
       {repository("graspd", "graspd", 1764547200), repository("evil", evil, 1764547300),
        repository("tools", "tools", 1764547400)}) {
    auto ok = client->publish(ev);
    ASSERT_TRUE(ok && ok->accepted) << (ok ? ok->message : "no OK");
  }
  ASSERT_TRUE(wait_until(
      [&] {
        return http_get(relay.port(), "/api/sync").body.find("\"status\":\"connected\"") !=
               std::string::npos;
      },
      10s))
      << http_get(relay.port(), "/api/sync").body;

  TempDir profile("graspd-chromium");
  auto url = "http://127.0.0.1:" + std::to_string(relay.port()) + "/";
  // The virtual time budget lets the page's script fetch /api/sync and redraw the rows.
  auto dom = run_chromium(chromium, profile, "--virtual-time-budget=3000 --dump-dom", url);
  ASSERT_FALSE(dom.empty()) << "chromium printed no DOM";

  EXPECT_NE(dom.find("<title>Browser test relay</title>"), std::string::npos)
      << "the injected script must not have run";
  // The peer's row, as the script redrew it ("updated ..." is written by the script only).
  EXPECT_NE(dom.find("<td>" + peer.relay_url()), std::string::npos) << dom;
  EXPECT_NE(dom.find("<td class=\"connected\">connected</td>"), std::string::npos) << dom;
  EXPECT_TRUE(std::regex_search(dom, std::regex("1 tracked relays, [0-9]+ repositories followed; "
                                                "updated [0-9-]+ [0-9:]+ UTC")))
      << dom;
  // The repositories, newest first, the script's name as text.
  EXPECT_NE(dom.find("id=\"repo-count\">3<"), std::string::npos);
  auto list = dom.substr(dom.find("id=\"repo-list\""));
  EXPECT_EQ(count_of(list, "<li "), 3u);
  EXPECT_LT(list.find(">tools</a>"),
            list.find("&lt;script&gt;document.title='pwned'&lt;/script&gt;"));
  EXPECT_EQ(dom.find(evil), std::string::npos);
  // Each repository's clone URL as `git clone` takes it, and its replication line: no measurement
  // is published here, so none was checked yet.
  auto author = nostr::encode_npub(repository("graspd", "graspd", 1764547200).pubkey);
  auto origin = "http://127.0.0.1:" + std::to_string(relay.port());
  EXPECT_NE(list.find("<code class=\"clone\">" + origin + "/" + author + "/graspd.git</code>"),
            std::string::npos)
      << list;
  EXPECT_NE(dom.find("<code>ws://127.0.0.1:" + std::to_string(relay.port()) + "</code>"),
            std::string::npos);
  EXPECT_EQ(count_of(list, "<span class=\"replication unchecked\">replication not checked yet · "),
            3u)
      << list;
  EXPECT_NE(list.find("href=\"/api/repositories/" + author + "/tools/replication\""),
            std::string::npos);
  EXPECT_EQ(dom.find("id=\"repo-search\" placeholder=\"Filter by name, description or author\" "
                     "aria-label=\"Filter repositories\" hidden"),
            std::string::npos)
      << "the script shows the filter";

  auto screenshot = std::filesystem::current_path() / "status_page.png";
  std::filesystem::remove(screenshot);
  run_chromium(chromium, profile,
               "--virtual-time-budget=3000 --window-size=1280,1400 --hide-scrollbars "
               "--screenshot=" +
                   screenshot.string(),
               url);
  ASSERT_TRUE(std::filesystem::exists(screenshot));
  EXPECT_GT(std::filesystem::file_size(screenshot), 10000u);
  std::cout << "screenshot: " << screenshot.string() << "\n";
}

// ---- a repository's page ----

nostr::Pubkey page_owner() {
  nostr::Pubkey key;
  key.fill(7);
  return key;
}

/// A repository's page (runtime/git repository_page_html, its script included) and canned answers
/// for its replication JSON, served by graspd's HTTP transport on the loopback interface: the
/// n-th request for the JSON gets answers[n] (the last one from then on).
class CannedReplicationSite {
 public:
  struct Answer {
    unsigned status;
    std::string body;
  };

  explicit CannedReplicationSite(std::vector<Answer> answers) : answers_(std::move(answers)) {
    runtime::HttpServerOptions options;
    server_ = std::make_unique<runtime::HttpServer>(
        io_.io(), options, [this](const runtime::HttpRequestInfo& request) {
          return answer(std::string(request.target));
        });
    EXPECT_TRUE(io_.run_on([this] { server_->start(); }));
  }
  ~CannedReplicationSite() {
    io_.run_on([this] { server_->stop(); });
    io_.stop();
  }
  CannedReplicationSite(const CannedReplicationSite&) = delete;
  CannedReplicationSite& operator=(const CannedReplicationSite&) = delete;

  std::string page_url() const {
    return "http://127.0.0.1:" + std::to_string(server_->port()) +
           runtime::repository_path(page_owner(), identifier);
  }
  std::size_t replication_requests() const { return requests_; }

  static inline const std::string identifier = "a b";

 private:
  runtime::HttpResponse answer(const std::string& target) {
    if (target == runtime::repository_path(page_owner(), identifier))
      return {200, "text/html; charset=utf-8",
              runtime::git::repository_page_html({page_owner(), identifier}, "127.0.0.1")};
    if (target != runtime::replication_api_path(page_owner(), identifier))
      return {404, "text/plain", "not found\n"};
    auto n = requests_++;
    const auto& canned = answers_[std::min<std::size_t>(n, answers_.size() - 1)];
    return {canned.status, canned.status == 200 ? "application/json" : "text/plain", canned.body};
  }

  std::vector<Answer> answers_;
  std::atomic<std::size_t> requests_{0};
  IoThread io_;
  std::unique_ptr<runtime::HttpServer> server_;
};

/// A replication document of the contract (docs/operations.md): two relays, two servers; while
/// `pending`, the Sync+ relay is being measured.
std::string replication_json(bool pending) {
  const std::string evil_url =
      R"(wss://evil.example/<img src=x onerror=\"document.title='pwned'\">)";
  const std::string evil_reason = "<script>document.title='pwned'</script>";
  std::string want(40, 'a'), other(40, 'b');
  return R"({"repository":"30617:)" + nostr::to_hex(page_owner()) + R"(:a b","npub":")" +
         nostr::encode_npub(page_owner()) + R"(","identifier":"a b",)" + R"("state":{"id":")" +
         std::string(64, 'c') + R"(","created_at":1764547200},"relays":[)" +
         R"({"url":"wss://relay.one.example","source":"announcement","only_there":0,)" +
         R"("only_here":0,"complete":true,"measured_at":1764547200,"pending":false,"reason":null},)" +
         R"({"url":")" + evil_url + R"(","source":"sync_plus","only_there":)" +
         (pending ? "null" : "5") + R"(,"only_here":)" + (pending ? "null" : "10") +
         R"(,"complete":)" + (pending ? "null" : "false") + R"(,"measured_at":)" +
         (pending ? "null" : "1764547260") + R"(,"pending":)" + (pending ? "true" : "false") +
         R"(,"reason":")" + evil_reason + R"("}],"servers":[)" +
         R"({"url":"http://127.0.0.1/npub/a%20b.git","self":true,"current":true,)" +
         R"("measured_at":1764547200,"pending":false,"reason":null,"refs":[)" +
         R"({"ref":"refs/heads/main","want":")" + want + R"(","have":")" + want +
         R"(","status":"current"}]},)" +
         R"({"url":"https://git.example/a.git","self":false,"current":false,)" +
         R"("measured_at":1764547200,"pending":false,"reason":null,"refs":[)" +
         R"({"ref":"refs/heads/main","want":")" + want + R"(","have":")" + other +
         R"(","status":"differs"},{"ref":"refs/tags/v1","want":")" + want +
         R"(","have":null,"status":"missing"}]}],)" +
         R"("summary":{"relays":2,"relays_complete":1,"servers":2,"servers_current":1,)" +
         R"("measured_at":)" + (pending ? "1764547200" : "1764547260") + "}}";
}

TEST(RepositoryPageBrowser, ReplicationTablesFillFromTheJsonAndRefetchWhilePending) {
  auto chromium = chromium_binary();
  if (chromium.empty()) GTEST_SKIP() << "chromium not installed (apt-get install chromium)";
  rapidjson::Document check;
  ASSERT_FALSE(check.Parse(replication_json(true).c_str()).HasParseError());
  ASSERT_FALSE(check.Parse(replication_json(false).c_str()).HasParseError());
  // Measuring twice, then done: the script asks three times and stops.
  CannedReplicationSite site({{200, replication_json(true)},
                              {200, replication_json(true)},
                              {200, replication_json(false)}});
  TempDir profile("graspd-chromium");
  auto dom =
      run_chromium(chromium, profile, "--virtual-time-budget=30000 --dump-dom", site.page_url());
  ASSERT_FALSE(dom.empty()) << "chromium printed no DOM";
  EXPECT_EQ(site.replication_requests(), 3u) << dom;

  EXPECT_NE(dom.find("<title>a b</title>"), std::string::npos) << "no injected script ran";
  EXPECT_NE(dom.find("<table id=\"replication-relays\"><caption>"), std::string::npos)
      << "the script shows the table: " << dom;
  EXPECT_NE(dom.find("<tr class=\"complete\"><td>wss://relay.one.example</td><td>announcement</td>"
                     "<td class=\"num\">0</td><td class=\"num\">0</td>"
                     "<td>2025-12-01 00:00:00 UTC</td><td class=\"reason\"></td></tr>"),
            std::string::npos)
      << dom;
  // The relay's figures of the last answer; its URL and reason as text.
  EXPECT_NE(
      dom.find("<tr class=\"incomplete\"><td>wss://evil.example/&lt;img src=x "
               "onerror=\"document.title='pwned'\"&gt;</td><td>Sync+ mailbox</td>"
               "<td class=\"num\">5</td><td class=\"num\">10</td>"
               "<td>2025-12-01 00:01:00 UTC</td>"
               "<td class=\"reason\">&lt;script&gt;document.title='pwned'&lt;/script&gt;</td>"),
      std::string::npos)
      << dom;
  EXPECT_EQ(dom.find("<img src=x"), std::string::npos);
  EXPECT_NE(dom.find("<td>http://127.0.0.1/npub/a%20b.git (this server)</td>"
                     "<td class=\"current\">yes</td>"),
            std::string::npos)
      << dom;
  EXPECT_NE(dom.find("<li class=\"current\">refs/heads/main current</li>"), std::string::npos);
  EXPECT_NE(dom.find("<td class=\"differs\">no</td>"), std::string::npos);
  EXPECT_NE(dom.find("<li class=\"differs\">refs/heads/main differs: has bbbbbbbbbbbb, state "
                     "aaaaaaaaaaaa</li>"),
            std::string::npos)
      << dom;
  EXPECT_NE(dom.find("<li class=\"missing\">refs/tags/v1 missing: state aaaaaaaaaaaa</li>"),
            std::string::npos);
  EXPECT_NE(dom.find("<p id=\"replication-summary\">1/2 relays complete, 1/2 servers current; "
                     "measured 2025-12-01 00:01:00 UTC; state event cccccccccccc of 2025-12-01 "
                     "00:00:00 UTC.</p>"),
            std::string::npos)
      << dom;

  auto screenshot = std::filesystem::current_path() / "repository_page.png";
  std::filesystem::remove(screenshot);
  run_chromium(chromium, profile,
               "--virtual-time-budget=30000 --window-size=1280,900 --hide-scrollbars "
               "--screenshot=" +
                   screenshot.string(),
               site.page_url());
  ASSERT_TRUE(std::filesystem::exists(screenshot));
  std::cout << "screenshot: " << screenshot.string() << "\n";
}

TEST(RepositoryPageBrowser, ARefetchWhilePendingIsBounded) {
  auto chromium = chromium_binary();
  if (chromium.empty()) GTEST_SKIP() << "chromium not installed (apt-get install chromium)";
  CannedReplicationSite site({{200, replication_json(true)}});
  TempDir profile("graspd-chromium");
  // Twice the time the script's bound takes (20 fetches, 3 s apart).
  auto dom =
      run_chromium(chromium, profile, "--virtual-time-budget=120000 --dump-dom", site.page_url());
  ASSERT_FALSE(dom.empty()) << "chromium printed no DOM";
  EXPECT_EQ(site.replication_requests(), 20u);
  EXPECT_NE(dom.find("<td class=\"pending\">measuring…</td>"), std::string::npos) << dom;
  EXPECT_NE(dom.find("; still measuring, reload later.</p>"), std::string::npos) << dom;
}

TEST(RepositoryPageBrowser, WithoutAReplicationViewThePageSaysSo) {
  auto chromium = chromium_binary();
  if (chromium.empty()) GTEST_SKIP() << "chromium not installed (apt-get install chromium)";
  CannedReplicationSite site({{404, "not found\n"}});
  TempDir profile("graspd-chromium");
  auto dom =
      run_chromium(chromium, profile, "--virtual-time-budget=10000 --dump-dom", site.page_url());
  ASSERT_FALSE(dom.empty()) << "chromium printed no DOM";
  EXPECT_EQ(site.replication_requests(), 1u);
  EXPECT_NE(dom.find("<p id=\"replication-summary\">No replication view: no announcement of this "
                     "repository is stored here.</p>"),
            std::string::npos)
      << dom;
  EXPECT_NE(dom.find("<table id=\"replication-relays\" hidden=\"\">"), std::string::npos) << dom;
}

/// Against the daemon's own replication view (GET /api/repositories/<npub>/<d>/replication): the
/// repository names a relay nobody answers on and the daemon's own clone URL.
TEST(RepositoryPageBrowser, ShowsTheDaemonsReplicationView) {
  auto chromium = chromium_binary();
  if (chromium.empty()) GTEST_SKIP() << "chromium not installed (apt-get install chromium)";
  GraspdProcess relay(GraspdOptions{{{"NGIT_SYNC_ENABLED", "false"},
                                     {"NGIT_SYNC_ALLOW_PRIVATE_ADDRESSES", "true"},
                                     {"NGIT_STATUS_PAGE_INTERVAL_SECS", "1"}},
                                    {}});
  ASSERT_TRUE(relay.start()) << relay.stderr_text();
  const auto silent_relay = "ws://127.0.0.1:" + std::to_string(free_port());
  auto origin = "http://127.0.0.1:" + std::to_string(relay.port());
  auto owner = make_event(1, "").pubkey;  // the key make_event signs with
  auto client = TestClient::connect(relay.port());
  ASSERT_TRUE(client);
  auto ok =
      client->publish(make_event(30617, "",
                                 {{"d", "replicated"},
                                  {"clone", origin + runtime::repository_path(owner, "replicated")},
                                  {"relays", relay.relay_url(), silent_relay}},
                                 1764547200));
  ASSERT_TRUE(ok && ok->accepted) << (ok ? ok->message : "no OK");
  auto json_path = runtime::replication_api_path(owner, "replicated");
  // Wait until the view holds a finished measurement of every relay.
  auto measured = [&] {
    auto reply = http_get(relay.port(), json_path);
    rapidjson::Document doc;
    if (reply.status != 200 || doc.Parse(reply.body.c_str()).HasParseError() || !doc.IsObject())
      return false;
    const rapidjson::Value& root = doc;  // const: clang finds mutable iterators ambiguous
    auto relays = root.FindMember("relays");
    if (relays == root.MemberEnd() || !relays->value.IsArray() || relays->value.Empty())
      return false;
    for (const auto& entry : relays->value.GetArray()) {
      if (!entry.IsObject()) return false;
      auto pending = entry.FindMember("pending");
      if (pending == entry.MemberEnd() || !pending->value.IsFalse()) return false;
    }
    return true;
  };
  ASSERT_TRUE(wait_until(measured, 30s)) << http_get(relay.port(), json_path).body;

  TempDir profile("graspd-chromium");
  auto dom = run_chromium(chromium, profile, "--virtual-time-budget=10000 --dump-dom",
                          origin + runtime::repository_path(owner, "replicated"));
  ASSERT_FALSE(dom.empty()) << "chromium printed no DOM";
  EXPECT_NE(dom.find("<td>" + silent_relay), std::string::npos) << dom;
  EXPECT_EQ(dom.find("<td>" + relay.relay_url()), std::string::npos) << "not compared with itself";
  EXPECT_NE(dom.find("<td>announcement</td>"), std::string::npos) << dom;
  EXPECT_NE(dom.find(" (this server)</td>"), std::string::npos) << dom;
  EXPECT_TRUE(std::regex_search(
      dom, std::regex("<p id=\"replication-summary\">[0-9]+/1 relays complete, [0-9]+/1 servers "
                      "current")))
      << dom;

  // The status page's list shows the same figures at a glance, linking to the detail.
  const std::string glance = "0/1 relays complete, 0/1 servers current";
  ASSERT_TRUE(wait_until(
      [&] { return http_get(relay.port(), "/").body.find(glance) != std::string::npos; }, 20s))
      << http_get(relay.port(), "/").body;
  TempDir status_profile("graspd-chromium");
  auto page =
      run_chromium(chromium, status_profile, "--virtual-time-budget=5000 --dump-dom", origin + "/");
  EXPECT_NE(page.find(glance), std::string::npos) << page;
  EXPECT_NE(page.find(json_path), std::string::npos) << page;
}

}  // namespace
}  // namespace graspd::test
