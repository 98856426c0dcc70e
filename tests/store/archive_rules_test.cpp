// GRASP-05 archive rules: exact host and path matching of clone URLs against the GRASP services,
// the policy's order (blacklist, hosting with the whitelist, archive rules, maintainer exception,
// read-only refusal), archives' states past a repository whitelist, and push refusal.
#include "store/policy/archive_rules.hpp"

#include <gtest/gtest.h>

#include <cstring>

#include "messages/nostr/nip19.hpp"
#include "store/git/git_push.hpp"
#include "store/policy/acceptance_policy.hpp"
#include "tests/store/vector_store.hpp"

namespace graspd::policy {
namespace {

using nostr::Event;
using nostr::Pubkey;
using test::key;

Event event_of(std::uint32_t kind, const Pubkey& author, nostr::Tags tags, std::uint64_t n) {
  Event ev;
  std::memcpy(ev.id.data(), &n, sizeof n);
  ev.id[31] = 0xa5;
  ev.pubkey = author;
  ev.kind = kind;
  ev.created_at = 1700000000 + static_cast<std::int64_t>(n);
  ev.tags = std::move(tags);
  return ev;
}

/// An announcement of `d` by `owner` with these clone URLs and relays.
Event announcement(const Pubkey& owner, const std::string& d, std::vector<std::string> clone,
                   std::vector<std::string> relays, std::uint64_t n) {
  nostr::Tag clone_tag{"clone"};
  for (auto& url : clone) clone_tag.push_back(url);
  nostr::Tag relays_tag{"relays"};
  for (auto& url : relays) relays_tag.push_back(url);
  return event_of(30617, owner, {{"d", d}, clone_tag, relays_tag}, n);
}

std::string on(const std::string& host, const Pubkey& owner, const std::string& d) {
  return "https://" + host + "/" + nostr::encode_npub(owner) + "/" + d + ".git";
}

TEST(ArchiveRules, AServiceMatchesOnlyItsOwnHostAndTheRepositorysOwnPath) {
  auto service = *parse_host_port("git.example.com");
  auto owner = key(1);
  auto npub = nostr::encode_npub(owner);
  EXPECT_TRUE(grasp_clone_url_on(on("git.example.com", owner, "r"), service, owner, "r"));
  EXPECT_TRUE(
      grasp_clone_url_on("http://GIT.example.com:80/" + npub + "/r.git", service, owner, "r"));
  EXPECT_TRUE(grasp_clone_url_on("https://git.example.com/" + npub + "/my%20repo.git", service,
                                 owner, "my repo"));
  // Look-alike hosts and paths, another owner's npub, another identifier, other schemes.
  for (const std::string& url :
       {on("git.example.com.evil.net", owner, "r"), on("notgit.example.com", owner, "r"),
        std::string("https://evil.net/git.example.com/x.git"),
        "https://evil.net/git.example.com/" + npub + "/r.git", on("git.example.com", key(2), "r"),
        on("git.example.com", owner, "other"), "https://git.example.com:8443/" + npub + "/r.git",
        "ssh://git.example.com/" + npub + "/r.git",
        "https://user@git.example.com/" + npub + "/r.git",
        "https://git.example.com/" + npub + "/r.git?x=1", "https://git.example.com/" + npub + "/r",
        "https://git.example.com/a/" + npub + "/r.git"})
    EXPECT_FALSE(grasp_clone_url_on(url, service, owner, "r")) << url;
}

class ArchivePolicyTest : public ::testing::Test {
 protected:
  PolicyConfig config() const {
    PolicyConfig out;
    out.service = *parse_host_port("relay.example.com");
    return out;
  }
  Event listed(const Pubkey& owner, const std::string& d) {
    return announcement(owner, d, {on("relay.example.com", owner, d)}, {"wss://relay.example.com"},
                        ++n_);
  }
  Event elsewhere(const Pubkey& owner, const std::string& d, const std::string& host) {
    return announcement(owner, d, {on(host, owner, d)}, {"wss://" + host}, ++n_);
  }
  test::VectorStore store_;
  std::uint64_t n_ = 0;
};

TEST_F(ArchivePolicyTest, GraspServicesArchiveWhatTheyHostAndNothingElse) {
  auto c = config();
  c.archive.grasp_services = {*parse_host_port("git.example.com"),
                              *parse_host_port("other.example:8443")};
  AcceptancePolicy policy(c, store_);
  EXPECT_EQ(policy.evaluate(elsewhere(key(1), "a", "git.example.com")).rule,
            Rule::announcement_archived);
  EXPECT_EQ(policy.evaluate(elsewhere(key(1), "b", "other.example:8443")).rule,
            Rule::announcement_archived);
  EXPECT_EQ(policy.evaluate(elsewhere(key(1), "c", "github.com")).rule,
            Rule::announcement_not_listed);
  EXPECT_EQ(policy.evaluate(elsewhere(key(1), "d", "git.example.com.evil.net")).rule,
            Rule::announcement_not_listed);
  // Not read-only: announcements listing this service are still hosted.
  EXPECT_EQ(policy.evaluate(listed(key(2), "e")).rule, Rule::announcement_lists_service);
  EXPECT_TRUE(creates_repository(Rule::announcement_archived));
}

TEST_F(ArchivePolicyTest, ReadOnlyRefusesWhatItWouldOtherwiseHostWithABlockedPrefix) {
  auto c = config();
  c.archive.whitelist = {RepositoryRule{key(1), std::nullopt}};
  c.archive.read_only = true;
  AcceptancePolicy policy(c, store_);
  // Listing this service, archived by the whitelist: an archive, not hosted.
  auto mine = listed(key(1), "mine");
  EXPECT_EQ(policy.evaluate(mine).rule, Rule::announcement_archived);
  EXPECT_TRUE(is_archive(c, mine));
  auto theirs = policy.evaluate(listed(key(2), "theirs"));
  EXPECT_EQ(theirs.rule, Rule::announcement_read_only);
  EXPECT_EQ(theirs.verdict, Verdict::refuse);
  EXPECT_EQ(theirs.message, "blocked: read-only archive: " + nostr::encode_npub(key(2)) +
                                "/theirs is not "
                                "archived here");
}

TEST_F(ArchivePolicyTest, TheBlacklistWinsAndTheWhitelistGatesOnlyHosting) {
  auto c = config();
  c.archive.all = true;
  c.repository_whitelist = {RepositoryRule{std::nullopt, "curated"}};
  c.repository_blacklist = {RepositoryRule{key(3), std::nullopt}};
  AcceptancePolicy policy(c, store_);
  EXPECT_EQ(policy.evaluate(elsewhere(key(3), "x", "github.com")).rule,
            Rule::repository_blacklisted);
  // Listing this service: hosted if whitelisted, else refused (never archived instead).
  EXPECT_EQ(policy.evaluate(listed(key(1), "curated")).rule, Rule::announcement_lists_service);
  EXPECT_EQ(policy.evaluate(listed(key(1), "stray")).rule, Rule::repository_not_whitelisted);
  // Elsewhere: archived whatever the whitelist says, and so are its owner's states.
  auto archived = elsewhere(key(1), "stray", "github.com");
  EXPECT_EQ(policy.evaluate(archived).rule, Rule::announcement_archived);
  store_.events.push_back(archived);
  policy.on_committed(archived);
  auto state = event_of(30618, key(1), {{"d", "stray"}}, ++n_);
  EXPECT_TRUE(policy.evaluate(state).accepted()) << policy.evaluate(state).message;
}

TEST_F(ArchivePolicyTest, AServiceArchivesStatesPastTheWhitelistThroughItsAnnouncement) {
  auto c = config();
  c.archive.grasp_services = {*parse_host_port("git.example.com")};
  c.repository_whitelist = {RepositoryRule{std::nullopt, "curated"}};
  AcceptancePolicy policy(c, store_);
  auto archived = elsewhere(key(1), "mirror", "git.example.com");
  ASSERT_EQ(policy.evaluate(archived).rule, Rule::announcement_archived);
  auto state = event_of(30618, key(1), {{"d", "mirror"}}, ++n_);
  EXPECT_EQ(policy.evaluate(state).rule, Rule::repository_not_whitelisted)
      << "no announcement yet: nothing says it is an archive";
  store_.events.push_back(archived);
  policy.on_committed(archived);
  EXPECT_TRUE(policy.evaluate(state).accepted());
}

TEST_F(ArchivePolicyTest, WithoutArchiveRulesNothingChanges) {
  AcceptancePolicy policy(config(), store_);
  EXPECT_EQ(policy.evaluate(listed(key(1), "a")).rule, Rule::announcement_lists_service);
  EXPECT_EQ(policy.evaluate(elsewhere(key(1), "b", "git.example.com")).rule,
            Rule::announcement_not_listed);
  EXPECT_FALSE(is_archive(config(), listed(key(1), "a")));
}

TEST_F(ArchivePolicyTest, AnArchiveTakesNoPushEvenOneItsStateNames) {
  auto c = config();
  c.archive.all = true;
  auto archived = elsewhere(key(1), "m", "github.com");
  store_.events.push_back(archived);
  const std::string commit(40, 'a');
  store_.events.push_back(event_of(30618, key(1), {{"d", "m"}, {"refs/heads/main", commit}}, ++n_));
  EXPECT_TRUE(git::archived_repository(store_, c, key(1), "m"));
  auto authority = git::push_authority(store_, key(1), "m", {});
  ASSERT_TRUE(authority.state);
  authority.archive = true;
  git::RefUpdate update{std::string(40, '0'), commit, "refs/heads/main"};
  auto decision = git::authorise_push({update}, {}, authority);
  EXPECT_FALSE(decision.accepted);
  ASSERT_EQ(decision.refs.size(), 1u);
  EXPECT_EQ(decision.refs[0].reason, "read-only archive");
  // A newer announcement that lists this service (not read-only) makes it hosted again.
  auto hosted = announcement(key(1), "m", {on("relay.example.com", key(1), "m")},
                             {"wss://relay.example.com"}, ++n_);
  store_.events.push_back(hosted);
  EXPECT_FALSE(git::archived_repository(store_, c, key(1), "m"));
}

}  // namespace
}  // namespace graspd::policy
