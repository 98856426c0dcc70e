#include "runtime/git/git_repository.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "messages/nostr/nip19.hpp"
#include "runtime/git/git_http.hpp"
#include "runtime/git/git_state_sync.hpp"
#include "tests/support/git_test_repos.hpp"
#include "tests/support/temp_dir.hpp"

namespace graspd::runtime::git {
namespace {

namespace fs = std::filesystem;

using test::owner;

std::string npub() {
  return nostr::encode_npub(owner());
}

TEST(GitTarget, ParsesTheFourEndpoints) {
  auto base = "/" + npub() + "/my-repo.git";
  auto page = parse_git_target(base);
  ASSERT_TRUE(page.target);
  EXPECT_EQ(page.target->endpoint, GitEndpoint::page);
  EXPECT_EQ(page.target->repository.owner, owner());
  EXPECT_EQ(page.target->repository.identifier, "my-repo");

  auto refs = parse_git_target(base + "/info/refs?service=git-receive-pack");
  ASSERT_TRUE(refs.target);
  EXPECT_EQ(refs.target->endpoint, GitEndpoint::info_refs);
  EXPECT_EQ(refs.target->service, "git-receive-pack");
  EXPECT_EQ(parse_git_target(base + "/git-upload-pack").target->endpoint, GitEndpoint::upload_pack);
  EXPECT_EQ(parse_git_target(base + "/git-receive-pack").target->endpoint,
            GitEndpoint::receive_pack);
}

TEST(GitTarget, GitSuffixIsStrippedExactlyOnce) {
  auto twice = parse_git_target("/" + npub() + "/name.git.git/info/refs?service=git-upload-pack");
  ASSERT_TRUE(twice.target);
  EXPECT_EQ(twice.target->repository.identifier, "name.git");
  EXPECT_FALSE(parse_git_target("/" + npub() + "/name").target);
  EXPECT_FALSE(parse_git_target("/" + npub() + "/.git").target) << "empty identifier";
  auto encoded = parse_git_target("/" + npub() + "/a%20b%2Egit");
  ASSERT_TRUE(encoded.target) << "percent-encoded suffix counts after decoding";
  EXPECT_EQ(encoded.target->repository.identifier, "a b");
}

TEST(GitTarget, TraversalInEveryEncodingIsNotFound) {
  const std::vector<std::string> hostile = {
      "/" + npub() + "/..%2F..%2Fetc.git",
      "/" + npub() + "/..%2f..%2fetc.git",
      "/" + npub() + "/%2E%2E.git",
      "/" + npub() + "/%2e.git",
      "/" + npub() + "/..%5C..%5Cetc.git",
      "/" + npub() + "/a%00b.git",
      "/" + npub() + "/a%0Ab.git",
      "/" + npub() + "/../x.git",
      "/" + npub() + "/x.git/../../y.git",
      "/" + npub() + "/x.git/objects/info/packs",
      "/" + npub() + "/x.git/HEAD",
      "/" + npub() + "/x.git/info/refs",
      "/" + npub() + "/x.git/info/refs?service=git-upload-archive",
      "/" + npub() + "/x.git/info/refs?service=git-upload-pack&service=git-receive-pack",
      "/" + npub() + "/x.git/git-upload-pack?x=1",
      "/npub1invalid/x.git",
      "/" + npub().substr(0, npub().size() - 1) + "q/x.git",  // bad checksum
      "/" + std::string(64, 'a') + "/x.git",                  // hex is not an npub
      "/" + npub(),
      "/" + npub() + "/" + std::string(251, 'a') + ".git",
  };
  for (const auto& target : hostile) {
    auto parsed = parse_git_target(target);
    EXPECT_FALSE(parsed.target) << target;
    EXPECT_EQ(parsed.status, 404u) << target;
  }
  // Double encoding is decoded once: "%252F" names the identifier "%2F", which holds no slash.
  auto once = parse_git_target("/" + npub() + "/%252F.git");
  ASSERT_TRUE(once.target);
  EXPECT_EQ(once.target->repository.identifier, "%2F");
  // Malformed escapes are a bad request.
  for (auto bad : {"/%zz.git", "/%4.git", "/abc%.git"}) {
    auto parsed = parse_git_target("/" + npub() + bad);
    EXPECT_FALSE(parsed.target) << bad;
    EXPECT_EQ(parsed.status, 400u) << bad;
  }
}

TEST(GitTarget, IdentifierRules) {
  EXPECT_TRUE(is_valid_identifier("ngit"));
  EXPECT_TRUE(is_valid_identifier(".hidden"));
  EXPECT_TRUE(is_valid_identifier(std::string(max_identifier_bytes, 'x')));
  for (std::string bad : {std::string(), std::string("."), std::string(".."), std::string("a/b"),
                          std::string("a\\b"), std::string("a\0b", 3), std::string("a\nb"),
                          std::string("a\x7f"), std::string(max_identifier_bytes + 1, 'x')})
    EXPECT_FALSE(is_valid_identifier(bad)) << bad;
  EXPECT_TRUE(is_git_path("/npub1abc/x.git"));
  EXPECT_FALSE(is_git_path("/"));
  EXPECT_FALSE(is_git_path("/metrics"));
}

TEST(GitRepositories, CreateLaysOutABareRepositoryAndIsIdempotent) {
  test::TempDir dir{"graspd-git-repos"};
  Repositories repositories{dir.path() / "git"};
  repositories.prepare();
  RepositoryRef name{owner(), "repo"};
  EXPECT_FALSE(repositories.exists(name));
  auto created = repositories.create(name);
  ASSERT_TRUE(created) << created.error().message;
  EXPECT_TRUE(repositories.exists(name));
  EXPECT_TRUE(repositories.create(name)) << "already there counts";
  auto refused = repositories.create(RepositoryRef{owner(), ".."});
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, git_errc::invalid_identifier);
  auto path = repositories.path_of(name);
  EXPECT_EQ(path, dir.path() / "git" / npub() / "repo.git");
  EXPECT_TRUE(fs::is_directory(path / "objects" / "pack"));
  EXPECT_TRUE(fs::is_directory(path / "refs" / "heads"));
  std::ifstream config(path / "config");
  std::string text((std::istreambuf_iterator<char>(config)), {});
  EXPECT_NE(text.find("bare = true"), std::string::npos);
  EXPECT_NE(text.find("fsckObjects = true"), std::string::npos);
  EXPECT_NE(text.find("allowTipSHA1InWant = true"), std::string::npos);
  // Nothing temporary is left behind, and the repository is counted.
  std::size_t entries = 0;
  for ([[maybe_unused]] const auto& entry : fs::directory_iterator(path.parent_path())) ++entries;
  EXPECT_EQ(entries, 1u);
  EXPECT_EQ(repositories.count(), 1u);
  EXPECT_TRUE(repositories.set_head(name, "trunk"));
  std::ifstream head(path / "HEAD");
  std::string head_text((std::istreambuf_iterator<char>(head)), {});
  EXPECT_EQ(head_text, "ref: refs/heads/trunk\n");
  EXPECT_FALSE(repositories.create(RepositoryRef{owner(), "../escape"}));
}

TEST(GitRepositories, SymlinksAreNotFollowedOutOfTheDataDirectory) {
  test::TempDir dir{"graspd-git-repos"};
  Repositories repositories{dir.path() / "git"};
  repositories.prepare();
  fs::create_directories(dir.path() / "outside" / "x.git");
  // A planted symlink for the repository, and one for the owner's directory.
  fs::create_directories(dir.path() / "git" / npub());
  fs::create_directory_symlink(dir.path() / "outside" / "x.git",
                               dir.path() / "git" / npub() / "x.git");
  EXPECT_FALSE(repositories.exists(RepositoryRef{owner(), "x"}));
  nostr::Pubkey other{};
  other.fill(0x43);
  fs::create_directory_symlink(dir.path() / "outside",
                               dir.path() / "git" / nostr::encode_npub(other));
  EXPECT_FALSE(repositories.exists(RepositoryRef{other, "x"}));
  EXPECT_FALSE(repositories.create(RepositoryRef{other, "y"}));
  EXPECT_FALSE(fs::exists(dir.path() / "outside" / "y.git"));
}

TEST(GitHttpPieces, RefusalReportIsReportStatusWithOptionalSideBand) {
  ::graspd::git::PushDecision decision;
  decision.reason = "refs/heads/main: pushed aaa, state eee wants bbb";
  decision.refs = {{"refs/heads/main", false, decision.reason}, {"refs/tags/v1", false, "other"}};
  auto plain = refusal_report(decision, false);
  EXPECT_EQ(plain, pkt_line("unpack ok\n") +
                       pkt_line("ng refs/heads/main " + decision.reason + "\n") +
                       pkt_line("ng refs/tags/v1 other\n") + "0000");
  auto banded = refusal_report(decision, true);
  EXPECT_EQ(banded.substr(4, 1), "\2") << "the reason first on band 2";
  auto band1 = banded.find(pkt_line("\1" + plain));
  EXPECT_NE(band1, std::string::npos) << "the report inside band 1";
  EXPECT_EQ(banded.substr(banded.size() - 4), "0000");
}

TEST(GitHttpPieces, GitProtocolHeaderIsForwardedOnlyWhenClean) {
  EXPECT_TRUE(is_valid_git_protocol("version=2"));
  EXPECT_TRUE(is_valid_git_protocol("version=2:object-format=sha1"));
  for (auto bad : {"", "version=2;rm -rf", "version=2\nX: y", "a=b=c", "version=2:", "ä=1"})
    EXPECT_FALSE(is_valid_git_protocol(bad)) << bad;
  EXPECT_FALSE(is_valid_git_protocol(std::string(257, 'a')));
}

TEST(GitHttpPieces, RepositoryPageEscapesTheIdentifier) {
  auto html = repository_page_html(RepositoryRef{owner(), "<b>x"}, "example.com");
  EXPECT_EQ(html.find("<b>x"), std::string::npos);
  EXPECT_NE(html.find("&lt;b&gt;x"), std::string::npos);
  EXPECT_NE(html.find("https://example.com/" + npub() + "/%3Cb%3Ex.git"), std::string::npos);
  EXPECT_NE(html.find("nostr://" + npub()), std::string::npos);
}

TEST(GitHttpPieces, RepositoryPageOfALoopbackDomainClonesOverPlainHttp) {
  auto html = repository_page_html(RepositoryRef{owner(), "r"}, "127.0.0.1:7334");
  EXPECT_NE(html.find("<code>git clone http://127.0.0.1:7334/" + npub() + "/r.git</code>"),
            std::string::npos)
      << html;
}

TEST(GitHttpPieces, RepositoryPageHasAReplicationSectionFedByItsJson) {
  auto html = repository_page_html(RepositoryRef{owner(), "<b>\"x"}, "example.com");
  auto json = "/api/repositories/" + npub() + "/%3Cb%3E%22x/replication";
  EXPECT_NE(html.find("<section id=\"replication\" data-src=\"" + json + "\">"), std::string::npos)
      << html;
  EXPECT_NE(html.find("<noscript><p>The replication view as <a href=\"" + json + "\">JSON</a>"),
            std::string::npos);
  EXPECT_NE(html.find("<table id=\"replication-relays\" hidden>"), std::string::npos);
  EXPECT_NE(html.find("<table id=\"replication-servers\" hidden>"), std::string::npos);
  // The script is compiled in (no external asset), and it writes text only.
  EXPECT_NE(html.find("getElementById(\"replication\")"), std::string::npos);
  EXPECT_EQ(html.find("innerHTML"), std::string::npos);
  EXPECT_EQ(html.find(" src="), std::string::npos) << "nothing is loaded from elsewhere";
  EXPECT_EQ(html.find("<b>\"x"), std::string::npos);
  // Small: the page and its script, for any identifier.
  EXPECT_LT(html.size(), 12u * 1024);
}

TEST(GitStateSync, OnlyHttpCloneUrlsOfOtherServicesAreFetched) {
  HostPort self{"relay.example.com", std::nullopt};
  EXPECT_TRUE(is_fetchable_clone_url("https://other.example/npub1x/r.git", self));
  EXPECT_TRUE(is_fetchable_clone_url("http://other.example:8080/r.git", self));
  for (auto bad : {"https://relay.example.com/npub1x/r.git", "https://RELAY.example.com:443/r.git",
                   "file:///etc/passwd", "/srv/git/r.git", "ssh://other.example/r.git",
                   "git@other.example:r.git", "ext::sh -c touch% /tmp/x",
                   "https://user:pw@other.example/r.git", "https://other.example/a b",
                   "-uhttps://x", "https://other.example/\n", ""})
    EXPECT_FALSE(is_fetchable_clone_url(bad, self)) << bad;
  EXPECT_TRUE(is_fetchable_clone_url("https://relay.example.com:8443/r.git", self))
      << "another port is another service";
}

}  // namespace
}  // namespace graspd::runtime::git
