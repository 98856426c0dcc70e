// GRASP-06 submission areas: which clone URLs name an area, the PR-event relaxation of the
// acceptance policy, and the rule for a push to an area (refs/nostr/<id> only, created once, at
// the commit of a PR event for that area).
#include "store/git/pr_submissions.hpp"

#include <gtest/gtest.h>

#include <cstring>

#include "messages/nostr/nip19.hpp"
#include "store/policy/acceptance_policy.hpp"
#include "tests/store/vector_store.hpp"

namespace graspd::git {
namespace {

using nostr::Event;
using nostr::Pubkey;
using test::key;

const std::string commit_a(40, 'a');
const std::string commit_b(40, 'b');

std::string area_url(const std::string& host, const Pubkey& submitter, const std::string& d) {
  return "https://" + host + "/prs/" + nostr::encode_npub(submitter) + "/" + d + ".git";
}

std::string address(const Pubkey& owner, const std::string& d) {
  return "30617:" + nostr::to_hex(owner) + ":" + d;
}

Event pull_request(const Pubkey& signer, nostr::Tags tags, std::uint8_t n) {
  Event ev;
  ev.id[0] = n;
  ev.id[31] = 0x5e;
  ev.pubkey = signer;
  ev.kind = 1618;
  ev.created_at = 1700000000 + n;
  ev.tags = std::move(tags);
  return ev;
}

TEST(PrSubmissionUrl, NamesOnlyTheSignersAreaOnThisHostForATaggedIdentifier) {
  auto service = *parse_host_port("relay.example.com");
  auto signer = key(1);
  auto npub = nostr::encode_npub(signer);
  EXPECT_TRUE(policy::pr_submission_url_on(area_url("relay.example.com", signer, "r"), service,
                                           signer, "r"));
  EXPECT_TRUE(policy::pr_submission_url_on("http://RELAY.example.com:80/prs/" + npub + "/r.git/",
                                           service, signer, "r"));
  for (const std::string& url :
       {area_url("relay.example.com.evil.net", signer, "r"),
        area_url("relay.example.com", key(2), "r"), area_url("relay.example.com", signer, "other"),
        "https://relay.example.com/" + npub + "/r.git",
        "https://relay.example.com/prs/" + npub + "/r.git?x",
        "https://relay.example.com/prs/" + npub + "/r.git//",
        "https://relay.example.com/prs/x/" + npub + "/r.git",
        "https://relay.example.com/prs/" + nostr::to_hex(signer) + "/r.git",
        "ssh://relay.example.com/prs/" + npub + "/r.git"})
    EXPECT_FALSE(policy::pr_submission_url_on(url, service, signer, "r")) << url;

  auto pr = pull_request(
      signer,
      {{"a", address(key(3), "other")},
       {"a", address(key(4), "r")},
       {"clone", "https://elsewhere.example/x.git", area_url("relay.example.com", signer, "r")}},
      1);
  EXPECT_EQ(policy::pr_submission_identifier(pr, service), "r");
  auto untagged = pull_request(
      signer, {{"a", address(key(4), "q")}, {"clone", area_url("relay.example.com", signer, "r")}},
      2);
  EXPECT_EQ(policy::pr_submission_identifier(untagged, service), std::nullopt);
}

TEST(PrSubmissionPolicy, APullRequestForNoRepositoryHereIsTakenOnlyForItsAreaHere) {
  test::VectorStore store;
  policy::PolicyConfig config;
  config.service = *parse_host_port("relay.example.com");
  auto signer = key(1);
  auto for_area = pull_request(signer,
                               {{"a", address(key(4), "r")},
                                {"c", commit_a},
                                {"clone", area_url("relay.example.com", signer, "r")}},
                               1);
  auto elsewhere = pull_request(signer,
                                {{"a", address(key(4), "r")},
                                 {"c", commit_a},
                                 {"clone", area_url("other.example", signer, "r")}},
                                2);
  {
    policy::AcceptancePolicy off(config, store);
    EXPECT_EQ(off.evaluate(for_area).rule, policy::Rule::related_orphan);
  }
  config.pr_submissions = true;
  policy::AcceptancePolicy on(config, store);
  auto taken = on.evaluate(for_area);
  EXPECT_TRUE(taken.accepted());
  EXPECT_EQ(taken.rule, policy::Rule::related_pr_submission);
  auto refused = on.evaluate(elsewhere);
  EXPECT_FALSE(refused.accepted());
  EXPECT_EQ(refused.rule, policy::Rule::related_orphan);
  EXPECT_EQ(refused.message.rfind("blocked:", 0), 0u);
}

class SubmissionPushTest : public ::testing::Test {
 protected:
  RepositoryRef area() const {
    return {key(1), "r", nostr::nip34::RepositorySpace::pr_submissions};
  }
  static RefUpdate create(const Event& pr, const std::string& commit) {
    return {zero_id, commit, "refs/nostr/" + nostr::to_hex(pr.id)};
  }
  PushDecision decide(const std::vector<RefUpdate>& updates, const RefMap& current = {}) {
    std::vector<std::string> ids;
    for (const auto& u : updates)
      if (auto id = nostr::nip34::refs_nostr_id(u.ref)) ids.push_back(nostr::to_hex(*id));
    auto authority =
        submission_authority(store_, *parse_host_port("relay.example.com"), area(), ids);
    return authorise_submission_push(updates, current, authority);
  }
  Event stored(const Pubkey& signer, const std::string& d, const std::string& clone_host,
               const std::string& commit, std::uint8_t n) {
    auto ev = pull_request(
        signer,
        {{"a", address(key(4), d)}, {"c", commit}, {"clone", area_url(clone_host, signer, d)}}, n);
    store_.events.push_back(ev);
    return ev;
  }
  test::VectorStore store_;
};

TEST_F(SubmissionPushTest, AnUnknownIdOrItsOwnPrsCommitIsTakenOnce) {
  auto unknown = pull_request(key(1), {}, 9);  // never stored
  auto decision = decide({create(unknown, commit_a)});
  EXPECT_TRUE(decision.accepted) << decision.reason;
  auto known = stored(key(1), "r", "relay.example.com", commit_a, 1);
  EXPECT_TRUE(decide({create(known, commit_a)}).accepted);
  auto wrong = decide({create(known, commit_b)});
  EXPECT_FALSE(wrong.accepted);
  EXPECT_NE(wrong.reason.find("names commit aaaaaaaaaaaa"), std::string::npos) << wrong.reason;
  // Already there: neither moved nor deleted, even to the same commit by another old id.
  RefMap here{{"refs/nostr/" + nostr::to_hex(unknown.id), commit_a}};
  EXPECT_FALSE(
      decide({{commit_a, commit_b, "refs/nostr/" + nostr::to_hex(unknown.id)}}, here).accepted);
  EXPECT_FALSE(
      decide({{commit_a, zero_id, "refs/nostr/" + nostr::to_hex(unknown.id)}}, here).accepted);
}

TEST_F(SubmissionPushTest, OtherRefsAndOtherAreasPrsAreRefusedWithTheWholePush) {
  auto unknown = pull_request(key(1), {}, 9);
  auto decision = decide({create(unknown, commit_a), {zero_id, commit_a, "refs/heads/main"}});
  EXPECT_FALSE(decision.accepted);
  ASSERT_EQ(decision.refs.size(), 2u);
  EXPECT_FALSE(decision.refs[0].ok);
  EXPECT_NE(decision.refs[1].reason.find("only refs/nostr/<event-id>"), std::string::npos);
  EXPECT_FALSE(decide({{zero_id, commit_a, "refs/nostr/abc"}}).accepted);
  // PR events whose area is not this one: another signer, identifier or host.
  for (const auto& pr : {stored(key(2), "r", "relay.example.com", commit_a, 2),
                         stored(key(1), "q", "relay.example.com", commit_a, 3),
                         stored(key(1), "r", "other.example", commit_a, 4)}) {
    auto refused = decide({create(pr, commit_a)});
    EXPECT_FALSE(refused.accepted) << nostr::to_hex(pr.id);
  }
}

}  // namespace
}  // namespace graspd::git
