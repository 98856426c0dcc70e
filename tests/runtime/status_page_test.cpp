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

TEST_F(StatusPageTest, CloneUrlsOfALoopbackDomainArePlainHttp) {
  input_.domain = "127.0.0.1:7334";
  auto html = render();
  nostr::Pubkey author;
  author.fill(7);
  auto npub = nostr::encode_npub(author);
  EXPECT_TRUE(contains(html, "<code>ws://127.0.0.1:7334</code>")) << html;
  EXPECT_TRUE(
      contains(html, "<code class=\"clone\">http://127.0.0.1:7334/" + npub + "/x%20y.git</code>"))
      << html;
}

/// The "replication" board document with one entry, for the repository of `author` and `d`.
std::shared_ptr<const std::string> replication_document(const nostr::Pubkey& author,
                                                        const std::string& d,
                                                        const std::string& figures) {
  return std::make_shared<const std::string>(R"({"repositories":{"30617:)" + nostr::to_hex(author) +
                                             ":" + d + R"(":)" + figures + "}}");
}

TEST_F(StatusPageTest, EachRepositoryShowsItsReplicationOrThatItWasNotCheckedYet) {
  HostedRepository other = input_.repositories.newest[0];
  other.identifier = "other";
  input_.repositories.newest.push_back(other);
  input_.replication_json = replication_document(
      other.author, "other",
      R"({"relays":4,"relays_complete":3,"servers":3,"servers_current":2,"measured_at":1764547200})");
  auto html = render();
  auto measured = html.substr(html.find("/other.git\""));
  auto unmeasured = html.substr(html.find("/x%20y.git\""));
  unmeasured = unmeasured.substr(0, unmeasured.find("</li>"));
  EXPECT_TRUE(contains(measured,
                       "<span class=\"replication\">3/4 relays complete, 2/3 servers "
                       "current, measured 2025-12-01 00:00:00 UTC · "))
      << measured;
  auto npub = nostr::encode_npub(other.author);
  EXPECT_TRUE(contains(measured, "href=\"/" + npub + "/other.git#replication\""));
  EXPECT_TRUE(contains(measured, "href=\"/api/repositories/" + npub + "/other/replication\""));
  EXPECT_TRUE(contains(unmeasured,
                       "<span class=\"replication unchecked\">replication not "
                       "checked yet · "))
      << unmeasured;
  EXPECT_TRUE(contains(unmeasured, "href=\"/api/repositories/" + npub + "/x%20y/replication\""));
}

TEST_F(StatusPageTest, MalformedReplicationFiguresReadAsNotCheckedYet) {
  auto& repo = input_.repositories.newest[0];
  for (auto figures : {R"("4/4")",
                       R"({"relays":"<b>4</b>","relays_complete":4,"servers":1,)"
                       R"("servers_current":1})",
                       R"({"relays":-1,"relays_complete":0,"servers":0,"servers_current":0})",
                       R"({"relays_complete":1})"}) {
    input_.replication_json = replication_document(repo.author, repo.identifier, figures);
    auto html = render();
    EXPECT_TRUE(contains(html, "replication not checked yet")) << figures;
    EXPECT_FALSE(contains(html, "relays complete")) << figures;
    EXPECT_FALSE(contains(html, "<b>4")) << figures;
  }
  for (auto document : {"{not json", "[]", R"({"repositories":[]})", ""}) {
    input_.replication_json = std::make_shared<const std::string>(document);
    EXPECT_TRUE(contains(render(), "replication not checked yet")) << document;
  }
  // A measured_at that is no number is left out, the figures stay.
  input_.replication_json = replication_document(
      repo.author, repo.identifier,
      R"({"relays":1,"relays_complete":1,"servers":0,"servers_current":0,"measured_at":"<i>"})");
  auto html = render();
  EXPECT_TRUE(contains(html, "1/1 relays complete, 0/0 servers current · ")) << html;
  EXPECT_FALSE(contains(html, "<i>"));
}

TEST_F(StatusPageTest, HostileIdentifiersAndDomainsStayTextInTheRepositoryLinks) {
  auto& repo = input_.repositories.newest[0];
  repo.identifier = "\"><script>x</script>";
  input_.domain = "relay.example/<img>";  // a domain is checked at load; the page escapes anyway
  input_.replication_json =
      replication_document(repo.author, "\\\"><script>x</script>",
                           R"({"relays":2,"relays_complete":1,"servers":1,"servers_current":1})");
  auto html = render();
  EXPECT_FALSE(contains(html, "<script>x"));
  EXPECT_FALSE(contains(html, "<img>"));
  EXPECT_TRUE(contains(html, "/%22%3E%3Cscript%3Ex%3C%2Fscript%3E.git</code>")) << html;
  EXPECT_TRUE(contains(html, "https://relay.example/&lt;img&gt;/"));
  EXPECT_TRUE(contains(html, "1/2 relays complete, 1/1 servers current")) << html;
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
