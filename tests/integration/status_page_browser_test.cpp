// The status page in a real browser: headless Chromium (Debian's `chromium`) loads GET / from a
// graspd holding a few repositories (one named with a <script>) and syncing from a peer, lets the
// page's script refresh the sync rows from /api/sync, and dumps the DOM; a screenshot is kept as
// status_page.png in the test's working directory (the build tree). Skipped when chromium is
// not installed.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <regex>

#include "tests/integration/relay_test_helpers.hpp"
#include "tests/support/http_client.hpp"
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

}  // namespace
}  // namespace graspd::test
