#include "runtime/ops/status_page.hpp"

#include <gtest/gtest.h>

#include "messages/nostr/nip19.hpp"

namespace graspd::runtime {
namespace {

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

class StatusPageTest : public ::testing::Test {
 protected:
  StatusPageTest() {
    info_.name = "<b>relay</b>";
    info_.description = "a & b";
    info_.software = "graspd";
    info_.version = "1.0";
    info_.repo_acceptance_criteria = "Stores repository announcements.";
    input_.info = &info_;
    input_.domain = "relay.example";
    HostedRepository repo;
    repo.author.fill(7);
    repo.identifier = "x y";
    repo.name = "<script>alert(1)</script>";
    repo.description = "\"quoted\" {{css}}";
    repo.created_at = 1764547200;
    input_.repositories = {3, {repo}};
  }

  std::string render() { return status_page_html(input_); }

  RelayInformation info_;
  StatusPageInput input_;
};

TEST_F(StatusPageTest, EscapesConfiguredAndEventText) {
  auto html = render();
  EXPECT_TRUE(contains(html, "<title>&lt;b&gt;relay&lt;/b&gt;</title>"));
  EXPECT_TRUE(contains(html, "a &amp; b"));
  EXPECT_TRUE(contains(html, "&lt;script&gt;alert(1)&lt;/script&gt;"));
  EXPECT_FALSE(contains(html, "<script>alert"));
  EXPECT_FALSE(contains(html, "<b>relay"));
  // A placeholder inside a value stays text (values are not filled again).
  EXPECT_TRUE(contains(html, "&quot;quoted&quot; {{css}}"));
  EXPECT_TRUE(contains(html, "<code>wss://relay.example</code>"));
  EXPECT_TRUE(
      contains(html, "<code>https://relay.example/&lt;npub&gt;/&lt;identifier&gt;.git</code>"));
}

TEST_F(StatusPageTest, RepositoryLinksToItsPageNaddrAndNpub) {
  auto html = render();
  nostr::Pubkey author;
  author.fill(7);
  auto npub = nostr::encode_npub(author);
  EXPECT_TRUE(contains(html, "href=\"/" + npub + "/x%20y.git\"")) << html;
  EXPECT_TRUE(contains(html, "href=\"nostr:" + nostr::encode_naddr(30617, author, "x y") + "\""));
  EXPECT_TRUE(contains(html, "href=\"nostr:" + npub + "\""));
  EXPECT_TRUE(contains(html, "The newest 1 of 3"));
  EXPECT_TRUE(contains(html, "announced 2025-12-01 00:00:00 UTC"));
}

TEST_F(StatusPageTest, SyncRowsFromTheSyncDocument) {
  input_.sync_json = std::make_shared<const std::string>(
      R"({"repositories":2,"relays":[{"url":"wss://peer.example","status":"connected",)"
      R"("health":"healthy","bootstrap":false,"role":"repository","last_connect":1764547200,)"
      R"("last_disconnect":null,"events_stored":42,"last_error":"<img src=x onerror=alert(1)>"}],)"
      R"("control_connections":[{"url":"wss://inbox.example","role":"discovery","open":true}]})");
  auto html = render();
  EXPECT_TRUE(contains(html,
                       "<td>wss://peer.example</td><td class=\"connected\">connected</td>"
                       "<td class=\"healthy\">healthy</td><td>repository</td>"
                       "<td>2025-12-01 00:00:00 UTC</td><td class=\"num\">42</td>"))
      << html;
  EXPECT_TRUE(contains(html, "&lt;img src=x onerror=alert(1)&gt;"));
  EXPECT_TRUE(contains(html, "<td>wss://inbox.example</td><td class=\"open\">open</td>"));
  EXPECT_TRUE(contains(html, "1 tracked relays, 2 repositories followed."));
}

TEST_F(StatusPageTest, SyncOffAndMalformedDocumentsAreNotFatal) {
  EXPECT_TRUE(contains(render(), "Sync (GRASP-02) is off on this relay."));
  input_.sync_json = std::make_shared<const std::string>("{not json");
  input_.history_json = std::make_shared<const std::string>(R"({"now":"x"})");
  auto html = render();
  EXPECT_TRUE(contains(html, "Sync (GRASP-02) is off"));
  EXPECT_TRUE(contains(html, "no data yet"));
}

TEST_F(StatusPageTest, PlotsOneBarPerHourOfTheLastDay) {
  // now = 10:30; buckets at 10:00 (current), 09:00 and one 30 hours ago (outside the window).
  std::int64_t hour = 3600, now = 1764547200 + 10 * hour + 1800;
  input_.history_json = std::make_shared<const std::string>(
      R"({"bucket_secs":3600,"now":)" + std::to_string(now) + R"(,"buckets":[)" + R"({"start":)" +
      std::to_string(now - 1800 - 30 * hour) + R"(,"stored":999,"synced":0},)" + R"({"start":)" +
      std::to_string(now - 1800 - hour) + R"(,"stored":5,"synced":1},)" + R"({"start":)" +
      std::to_string(now - 1800) + R"(,"stored":10,"synced":0}]})");
  auto html = render();
  auto stored = html.substr(html.find("<svg"), html.find("</svg>") - html.find("<svg"));
  std::size_t bars = 0;
  for (auto at = stored.find("<rect"); at != std::string::npos; at = stored.find("<rect", at + 1))
    ++bars;
  EXPECT_EQ(bars, 2u) << stored;
  EXPECT_TRUE(contains(stored, "max 10")) << "the bucket outside the window is not scaled in";
  EXPECT_TRUE(contains(stored, "2025-12-01 10:00:00 UTC: 10"));
}

struct TruncationCase {
  std::string text;
  std::size_t max;
  std::string expected;
};

TEST(StatusPageTruncation, CutsOnACharacterBoundaryWithAnEllipsis) {
  const std::string u = "\xc3\xbc";  // ü, two bytes
  for (const auto& c : std::vector<TruncationCase>{
           {"short", 10, "short"},
           {"exactly10!", 10, "exactly10!"},
           {"abcdefghijk", 10, "abcdefg…"},
           {"abcdef" + u + "xyz", 10, "abcdef…"},  // ü would be split at byte 7: left out
           {"abcde" + u + "xyzw", 10, "abcde" + u + "…"},
           {"abcdef", 2, ""},  // no room for the ellipsis
       }) {
    auto out = truncate_utf8(c.text, c.max);
    EXPECT_EQ(out, c.expected) << c.text << " / " << c.max;
    EXPECT_LE(out.size(), c.max);
  }
}

TEST_F(StatusPageTest, FieldsAreCutToTheFieldLimit) {
  input_.limits.max_field_bytes = 64;
  input_.repositories.newest[0].name = std::string(10000, 'n');
  input_.repositories.newest[0].description = std::string(10000, 'd');
  input_.sync_json = std::make_shared<const std::string>(
      R"({"relays":[{"url":"wss://peer.example","last_error":")" + std::string(10000, 'e') +
      R"("}]})");
  auto html = render();
  EXPECT_FALSE(contains(html, std::string(65, 'n')));
  EXPECT_FALSE(contains(html, std::string(65, 'd')));
  EXPECT_FALSE(contains(html, std::string(65, 'e')));
  EXPECT_TRUE(contains(html, std::string(61, 'n') + "…"));
  EXPECT_TRUE(contains(html, std::string(61, 'd') + "…"));
}

TEST_F(StatusPageTest, ThePageStaysUnderItsCapAndSaysWhatItLeftOut) {
  input_.limits.max_bytes = 100 * 1024;
  input_.limits.max_field_bytes = 256;
  HostedRepository big;
  big.author.fill(9);
  big.identifier = "repo";
  big.name = std::string(256, '"');  // escaped to six bytes each
  big.description = std::string(256, '<');
  input_.repositories = {2000, std::vector<HostedRepository>(500, big)};
  std::string relays;
  for (int i = 0; i < 1000; ++i)
    relays += std::string(i ? "," : "") + R"({"url":"wss://r)" + std::to_string(i) +
              R"(.example/","last_error":")" + std::string(256, '&') + "\"}";
  input_.sync_json = std::make_shared<const std::string>(R"({"relays":[)" + relays + "]}");
  auto html = render();
  EXPECT_LE(html.size(), input_.limits.max_bytes);
  EXPECT_TRUE(contains(html, "rows not shown (page size limit)")) << html.substr(0, 2000);
  EXPECT_TRUE(contains(html, ", newest first (page size limit)."));
  EXPECT_TRUE(contains(html, "</html>")) << "the page is complete, not cut";
  // The lists got what was left of the cap: not a handful of bytes.
  EXPECT_GT(html.size(), input_.limits.max_bytes / 2);
}

}  // namespace
}  // namespace graspd::runtime
