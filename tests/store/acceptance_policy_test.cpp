#include "store/policy/acceptance_policy.hpp"

#include <gtest/gtest.h>

#include <cstring>

#include "tests/store/vector_store.hpp"

namespace graspd::policy {
namespace {

using nostr::Event;
using nostr::Pubkey;

using test::key;
using test::VectorStore;

std::string hex(const Pubkey& p) {
  return nostr::to_hex(p);
}

class PolicyTest : public ::testing::Test {
 protected:
  PolicyTest() : policy_(make_config(), store_) {}

  static PolicyConfig make_config() {
    PolicyConfig config;
    config.service = *parse_host_port("relay.example.com");
    return config;
  }

  Event make(std::uint32_t kind, const Pubkey& author, nostr::Tags tags) {
    Event ev;
    ++counter_;
    std::memcpy(ev.id.data(), &counter_, sizeof counter_);
    ev.id[31] = 0xee;
    ev.pubkey = author;
    ev.kind = kind;
    ev.created_at = 1700000000 + counter_;
    ev.tags = std::move(tags);
    return ev;
  }

  Event announcement(const Pubkey& owner, const std::string& d, nostr::Tags extra = {},
                     bool listed = true) {
    nostr::Tags tags{{"d", d}};
    if (listed) {
      tags.push_back({"clone", "https://relay.example.com/" + hex(owner) + "/" + d + ".git"});
      tags.push_back({"relays", "wss://relay.example.com"});
    }
    for (auto& t : extra) tags.push_back(t);
    return make(30617, owner, std::move(tags));
  }

  /// Evaluates and, when accepted, commits like the ingest path does.
  Decision submit(const Event& ev) {
    auto decision = policy_.evaluate(ev);
    if (decision.accepted()) commit(ev);
    return decision;
  }
  std::vector<std::string> commit(const Event& ev) {
    store_.events.push_back(ev);
    return policy_.on_committed(ev);
  }

  static std::string address(const Event& ev) { return nostr::address_of(ev); }

  VectorStore store_;
  AcceptancePolicy policy_;
  std::uint64_t counter_ = 0;
};

// -- announcements ----------------------------------------------------------

TEST_F(PolicyTest, AnnouncementListingServiceIsAccepted) {
  auto d = submit(announcement(key(1), "repo"));
  EXPECT_TRUE(d.accepted());
  EXPECT_EQ(d.rule, Rule::announcement_lists_service);
}

TEST_F(PolicyTest, ListingComparesParsedHostsNotSubstrings) {
  struct Case {
    const char* clone;
    const char* relay;
    bool accepted;
  };
  const Case cases[] = {
      {"https://relay.example.com.evil.net/r.git", "wss://relay.example.com", false},
      {"https://evil.net/relay.example.com/r.git", "wss://relay.example.com", false},
      {"https://relay.example.com/r.git", "wss://relay.example.com.evil.net", false},
      {"https://RELAY.example.com:443/r.git", "wss://relay.example.com:443/", true},
      {"https://relay.example.com:8443/r.git", "wss://relay.example.com", false},
      {"ftp://relay.example.com/r.git", "wss://relay.example.com", false},
      {"https://relay.example.com/r.git", "https://relay.example.com", false},
      {"https://user@relay.example.com/r.git", "wss://relay.example.com", true},
      {"https://relay.example.com/r.git", "ws://relay.example.com:443", false},
  };
  std::uint8_t n = 10;
  for (const auto& c : cases) {
    auto ev = announcement(key(n++), "repo", {{"clone", c.clone}, {"relays", c.relay}}, false);
    EXPECT_EQ(policy_.evaluate(ev).accepted(), c.accepted) << c.clone << " " << c.relay;
  }
}

TEST_F(PolicyTest, ListedOnlyInCloneOrOnlyInRelaysIsRefused) {
  auto only_clone = announcement(
      key(1), "a", {{"clone", "https://relay.example.com/a.git"}, {"relays", "wss://other.net"}},
      false);
  auto only_relays = announcement(
      key(2), "b", {{"clone", "https://other.net/b.git"}, {"relays", "wss://relay.example.com"}},
      false);
  for (const auto& ev : {only_clone, only_relays}) {
    auto d = policy_.evaluate(ev);
    EXPECT_FALSE(d.accepted());
    EXPECT_EQ(d.rule, Rule::announcement_not_listed);
    EXPECT_EQ(d.message.rfind("blocked: ", 0), 0u) << d.message;
  }
}

TEST_F(PolicyTest, ValuesOfSeveralCloneAndRelaysTagsAreFlattened) {
  auto ev = announcement(key(1), "multi",
                         {{"clone", "https://github.com/x/multi.git"},
                          {"clone", "https://a.net/m.git", "https://relay.example.com/m.git"},
                          {"relays", "wss://nos.lol"},
                          {"relays", "wss://x.net", "wss://relay.example.com/"}},
                         false);
  EXPECT_TRUE(policy_.evaluate(ev).accepted());
}

TEST_F(PolicyTest, ServiceWithPortMatchesOnlyThatPort) {
  PolicyConfig config;
  config.service = *parse_host_port("127.0.0.1:7334");
  AcceptancePolicy policy(config, store_);
  auto listed = announcement(
      key(1), "r", {{"clone", "http://127.0.0.1:7334/r.git"}, {"relays", "ws://127.0.0.1:7334"}},
      false);
  auto default_port = announcement(
      key(2), "r", {{"clone", "http://127.0.0.1/r.git"}, {"relays", "ws://127.0.0.1"}}, false);
  EXPECT_TRUE(policy.evaluate(listed).accepted());
  EXPECT_FALSE(policy.evaluate(default_port).accepted());
}

TEST_F(PolicyTest, BadIdentifiersAreInvalid) {
  for (std::string d : {std::string(""), std::string("."), std::string(".."), std::string("a/b"),
                        std::string("a\\b"), std::string("a\0b", 3)}) {
    auto decision = policy_.evaluate(announcement(key(1), d));
    EXPECT_EQ(decision.rule, Rule::announcement_bad_identifier) << d;
    EXPECT_EQ(decision.verdict, Verdict::refuse);
    EXPECT_EQ(decision.message.rfind("invalid: ", 0), 0u);
  }
}

TEST_F(PolicyTest, MaintainerChainOfThreeAndCycle) {
  auto owner = key(1), m1 = key(2), m2 = key(3), stranger = key(4);
  ASSERT_TRUE(submit(announcement(owner, "r", {{"maintainers", hex(m1)}})).accepted());
  auto m1_ann = announcement(m1, "r", {{"maintainers", hex(m2), hex(owner)}}, false);
  auto d1 = submit(m1_ann);
  EXPECT_TRUE(d1.accepted());
  EXPECT_EQ(d1.rule, Rule::announcement_maintainer);
  // m2 is listed only by m1's (unlisted) announcement: transitive closure.
  auto d2 = submit(announcement(m2, "r", {{"maintainers", hex(owner)}}, false));
  EXPECT_TRUE(d2.accepted());
  // The cycle owner -> m1 -> m2 -> owner terminates and admits nobody else.
  auto d3 = policy_.evaluate(announcement(stranger, "r", {}, false));
  EXPECT_FALSE(d3.accepted());
  // Same identifier is what matters: m1 maintains nothing named "other".
  EXPECT_FALSE(policy_.evaluate(announcement(m1, "other", {}, false)).accepted());
}

TEST_F(PolicyTest, RepositoryBlacklistWinsOverWhitelist) {
  PolicyConfig config = make_config();
  config.repository_whitelist = {RepositoryRule{std::nullopt, "repo"},
                                 RepositoryRule{std::nullopt, "other"}};
  RepositoryRule black;
  black.owner = key(1);
  black.identifier = "repo";
  config.repository_blacklist = {black};
  AcceptancePolicy policy(config, store_);
  EXPECT_EQ(policy.evaluate(announcement(key(1), "repo")).rule, Rule::repository_blacklisted);
  EXPECT_TRUE(policy.evaluate(announcement(key(2), "repo")).accepted());
  EXPECT_EQ(policy.evaluate(announcement(key(2), "nope")).rule, Rule::repository_not_whitelisted);
}

TEST_F(PolicyTest, EventBlacklistBlocksEverything) {
  PolicyConfig config = make_config();
  config.event_blacklist = {key(9)};
  AcceptancePolicy policy(config, store_);
  auto d = policy.evaluate(announcement(key(9), "r"));
  EXPECT_EQ(d.rule, Rule::event_blacklisted);
  EXPECT_EQ(d.message.rfind("blocked: ", 0), 0u);
}

TEST_F(PolicyTest, RuntimeBansJoinTheBlacklistAndBannedIdsAreRefused) {
  auto banned_author = announcement(key(8), "r");
  auto other = announcement(key(7), "s");
  EXPECT_TRUE(policy_.evaluate(banned_author).accepted());
  apply_entry(policy_.runtime_lists(), {ModerationList::banned_pubkeys, key(8), "spam"}, true);
  apply_entry(policy_.runtime_lists(), {ModerationList::banned_events, other.id, ""}, true);
  auto refused = policy_.evaluate(banned_author);
  EXPECT_EQ(refused.rule, Rule::event_blacklisted);
  EXPECT_EQ(refused.message, "blocked: events of this author are not accepted here");
  EXPECT_TRUE(policy_.is_banned_author(key(8)));
  auto refused_id = policy_.evaluate(other);
  EXPECT_EQ(refused_id.rule, Rule::event_blacklisted);
  EXPECT_EQ(refused_id.message.rfind("blocked: ", 0), 0u);
  // Another event of the same author passes: only the id is banned.
  EXPECT_TRUE(policy_.evaluate(announcement(key(7), "t")).accepted());
  apply_entry(policy_.runtime_lists(), {ModerationList::banned_pubkeys, key(8), ""}, false);
  EXPECT_TRUE(policy_.evaluate(banned_author).accepted());
}

TEST_F(PolicyTest, RuntimeAllowedOwnersJoinTheWhitelist) {
  PolicyConfig config = make_config();
  config.repository_whitelist = {RepositoryRule{key(1), std::nullopt}};
  AcceptancePolicy policy(config, store_);
  EXPECT_EQ(policy.evaluate(announcement(key(2), "repo")).rule, Rule::repository_not_whitelisted);
  apply_entry(policy.runtime_lists(), {ModerationList::allowed_pubkeys, key(2), ""}, true);
  EXPECT_TRUE(policy.evaluate(announcement(key(2), "repo")).accepted());
}

// -- state ------------------------------------------------------------------

TEST_F(PolicyTest, StateOnlyFromMaintainers) {
  auto owner = key(1), m1 = key(2), stranger = key(3);
  auto state_of = [&](const Pubkey& who) { return make(30618, who, {{"d", "r"}}); };
  auto early = policy_.evaluate(state_of(owner));
  EXPECT_EQ(early.rule, Rule::state_unknown_repository);
  EXPECT_EQ(early.verdict, Verdict::refuse_missing_dependency);
  ASSERT_TRUE(submit(announcement(owner, "r", {{"maintainers", hex(m1)}})).accepted());
  EXPECT_EQ(policy_.evaluate(state_of(owner)).rule, Rule::state_maintainer);
  EXPECT_TRUE(policy_.evaluate(state_of(m1)).accepted());
  auto refused = policy_.evaluate(state_of(stranger));
  EXPECT_EQ(refused.rule, Rule::state_not_maintainer);
  EXPECT_EQ(refused.message.rfind("restricted: ", 0), 0u);
}

// -- related events -----------------------------------------------------------

TEST_F(PolicyTest, IssueReplyAndReplyToReply) {
  auto repo = announcement(key(1), "r");
  ASSERT_TRUE(submit(repo).accepted());
  auto issue = make(1621, key(2), {{"a", address(repo)}});
  auto d_issue = submit(issue);
  EXPECT_EQ(d_issue.rule, Rule::related_backward_address);
  auto reply = make(1111, key(3), {{"E", nostr::to_hex(issue.id)}, {"e", nostr::to_hex(issue.id)}});
  EXPECT_EQ(submit(reply).rule, Rule::related_backward_id);
  auto reply2 = make(1, key(4), {{"e", nostr::to_hex(reply.id)}});
  EXPECT_EQ(submit(reply2).rule, Rule::related_backward_id);
  auto orphan = make(1, key(5), {{"e", std::string(64, 'a')}});
  auto d = policy_.evaluate(orphan);
  EXPECT_EQ(d.rule, Rule::related_orphan);
  EXPECT_EQ(d.verdict, Verdict::refuse_missing_dependency);
}

TEST_F(PolicyTest, QuoteTagsCountAsIdOrAddress) {
  auto repo = announcement(key(1), "r");
  ASSERT_TRUE(submit(repo).accepted());
  EXPECT_EQ(policy_.evaluate(make(1, key(2), {{"q", address(repo)}})).rule,
            Rule::related_backward_address);
  EXPECT_EQ(policy_.evaluate(make(1, key(2), {{"q", nostr::to_hex(repo.id)}})).rule,
            Rule::related_backward_id);
}

TEST_F(PolicyTest, ForwardReferencesForRegularReplaceableAndAddressable) {
  auto repo = announcement(key(1), "r");
  ASSERT_TRUE(submit(repo).accepted());
  auto regular = make(1, key(5), {});
  auto replaceable = make(10002, key(6), {});  // identity kinds have their own rule; use 3
  replaceable.kind = 3;
  auto addressable = make(30023, key(7), {{"d", "post"}});
  // A stored comment referencing all three (it is anchored by the repo).
  auto comment = make(1111, key(8),
                      {{"A", address(repo)},
                       {"q", nostr::to_hex(regular.id)},
                       {"a", address(replaceable)},
                       {"q", address(addressable)}});
  ASSERT_TRUE(submit(comment).accepted());
  EXPECT_EQ(policy_.evaluate(regular).rule, Rule::related_forward);
  EXPECT_EQ(policy_.evaluate(replaceable).rule, Rule::related_forward);
  EXPECT_EQ(policy_.evaluate(addressable).rule, Rule::related_forward);
  auto unrelated = make(30023, key(7), {{"d", "other"}});
  EXPECT_EQ(policy_.evaluate(unrelated).rule, Rule::related_orphan);
}

// -- deletion and identity ------------------------------------------------------

TEST_F(PolicyTest, DeletionOnlyOfOwnStoredEvents) {
  auto repo = announcement(key(1), "r");
  ASSERT_TRUE(submit(repo).accepted());
  auto by_owner = make(5, key(1), {{"e", nostr::to_hex(repo.id)}});
  auto by_stranger = make(5, key(2), {{"e", nostr::to_hex(repo.id)}, {"a", address(repo)}});
  auto by_address = make(5, key(1), {{"a", address(repo)}});
  EXPECT_EQ(policy_.evaluate(by_owner).rule, Rule::deletion_own_target);
  EXPECT_EQ(policy_.evaluate(by_address).rule, Rule::deletion_own_target);
  auto refused = policy_.evaluate(by_stranger);
  EXPECT_EQ(refused.rule, Rule::deletion_no_own_target);
  EXPECT_FALSE(refused.accepted());
}

TEST_F(PolicyTest, IdentityKindsOnlyFromEligibleAuthors) {
  auto owner = key(1), maintainer = key(2), participant = key(3), commenter = key(4),
       stranger = key(5);
  auto repo = announcement(owner, "r", {{"maintainers", hex(maintainer)}});
  ASSERT_TRUE(submit(repo).accepted());
  auto issue = submit(make(1621, participant, {{"a", address(repo)}}));
  ASSERT_TRUE(issue.accepted());
  auto issue_event = store_.events.back();
  ASSERT_TRUE(submit(make(1111, commenter, {{"E", nostr::to_hex(issue_event.id)}})).accepted());
  for (const auto& who : {owner, maintainer, participant, commenter})
    for (std::uint32_t kind : {0u, 10002u, 10317u})
      EXPECT_EQ(policy_.evaluate(make(kind, who, {})).rule, Rule::identity_eligible);
  auto refused = policy_.evaluate(make(0, stranger, {}));
  EXPECT_EQ(refused.rule, Rule::identity_not_eligible);
  EXPECT_EQ(refused.verdict, Verdict::refuse_missing_dependency);
  // A reaction to the announcement itself is not thread participation.
  ASSERT_TRUE(submit(make(7, stranger, {{"e", nostr::to_hex(repo.id)}})).accepted());
  EXPECT_FALSE(policy_.evaluate(make(0, stranger, {})).accepted());
}

TEST_F(PolicyTest, EligibilityIsRebuiltFromTheStore) {
  auto repo = announcement(key(1), "r", {{"maintainers", hex(key(2))}});
  ASSERT_TRUE(submit(repo).accepted());
  auto issue = make(1621, key(3), {{"a", address(repo)}});
  ASSERT_TRUE(submit(issue).accepted());
  auto reply = make(1111, key(4), {{"E", nostr::to_hex(issue.id)}});
  ASSERT_TRUE(submit(reply).accepted());
  ASSERT_TRUE(submit(make(7, key(5), {{"e", nostr::to_hex(reply.id)}})).accepted());
  AcceptancePolicy fresh(make_config(), store_);
  fresh.load_from_store();
  for (std::uint8_t n : {1, 2, 3, 4, 5}) EXPECT_TRUE(fresh.is_eligible_identity_author(key(n)));
  EXPECT_FALSE(fresh.is_eligible_identity_author(key(6)));
}

TEST_F(PolicyTest, TheStartupLoadReportsItsProgress) {
  auto repo = announcement(key(1), "r", {});
  ASSERT_TRUE(submit(repo).accepted());
  const std::uint64_t issues = AcceptancePolicy::progress_every + 10;
  // Stored directly: what is measured is the load, and judging 4,000 issues against the vector
  // store (a scan per lookup) took most of this test's time.
  for (std::uint64_t i = 0; i < issues; ++i)
    store_.events.push_back(make(1621, key(3), {{"a", address(repo)}}));
  AcceptancePolicy fresh(make_config(), store_);
  std::vector<std::uint64_t> reports;
  fresh.load_from_store([&](std::uint64_t read) { reports.push_back(read); });
  ASSERT_EQ(reports.size(), 2u) << "one every progress_every events, one at the end";
  EXPECT_EQ(reports[0], AcceptancePolicy::progress_every);
  EXPECT_EQ(reports[1], 1 + issues) << "the announcement and every root";
}

TEST_F(PolicyTest, EphemeralKindsPass) {
  EXPECT_EQ(policy_.evaluate(make(20001, key(1), {})).rule, Rule::ephemeral);
}

TEST_F(PolicyTest, CredentialKindsAreRefusedAlthoughEphemeral) {
  for (std::uint32_t kind : {22242u, 27235u}) {
    auto decision = policy_.evaluate(make(kind, key(1), {}));
    EXPECT_FALSE(decision.accepted()) << kind;
    EXPECT_EQ(decision.rule, Rule::credential_kind);
    EXPECT_EQ(decision.message,
              "invalid: " + std::to_string(kind) + " is a credential, not an event");
  }
}

// -- retry cache ----------------------------------------------------------------

TEST_F(PolicyTest, RetryCacheReleasesMaintainerAnnouncementWhenOwnersArrives) {
  RetryCache cache({});
  auto owner = key(1), maintainer = key(2);
  auto early = announcement(maintainer, "r", {}, false);
  auto decision = policy_.evaluate(early);
  ASSERT_EQ(decision.verdict, Verdict::refuse_missing_dependency);
  cache.park(std::make_shared<const Event>(early), 500, decision.wait_keys, 1000);
  EXPECT_EQ(cache.size(), 1u);
  auto released =
      cache.release(commit(announcement(owner, "r", {{"maintainers", hex(maintainer)}})));
  ASSERT_EQ(released.size(), 1u);
  EXPECT_EQ(released[0]->id, early.id);
  EXPECT_TRUE(policy_.evaluate(*released[0]).accepted());
  EXPECT_EQ(cache.size(), 0u);
  EXPECT_EQ(cache.bytes(), 0u);
}

TEST_F(PolicyTest, RetryCacheReleasesReplyWhenRootArrivesAndIdentityWhenEligible) {
  RetryCache cache({});
  auto repo = announcement(key(1), "r");
  ASSERT_TRUE(submit(repo).accepted());
  auto issue = make(1621, key(3), {{"a", address(repo)}});
  auto reply = make(1111, key(4), {{"E", nostr::to_hex(issue.id)}});
  auto profile = make(0, key(4), {});
  for (const auto& ev : {reply, profile}) {
    auto d = policy_.evaluate(ev);
    ASSERT_EQ(d.verdict, Verdict::refuse_missing_dependency);
    cache.park(std::make_shared<const Event>(ev), 100, d.wait_keys, 1000);
  }
  auto released = cache.release(commit(issue));
  ASSERT_EQ(released.size(), 1u);
  EXPECT_EQ(released[0]->id, reply.id);
  ASSERT_TRUE(policy_.evaluate(reply).accepted());
  auto second = cache.release(commit(reply));
  ASSERT_EQ(second.size(), 1u);
  EXPECT_EQ(second[0]->id, profile.id);
  EXPECT_TRUE(policy_.evaluate(profile).accepted());
}

// With nothing parked the feed asks for no wait keys; eligibility is updated all the same.
TEST_F(PolicyTest, ACommitWithoutWaitKeysStillMakesItsAuthorEligible) {
  auto repo = announcement(key(1), "r");
  ASSERT_TRUE(submit(repo).accepted());
  auto issue = make(1621, key(3), {{"a", address(repo)}});
  ASSERT_TRUE(policy_.evaluate(issue).accepted());
  store_.events.push_back(issue);
  EXPECT_TRUE(policy_.on_committed(issue, /*keys_wanted=*/false).empty());
  EXPECT_FALSE(commit(make(1111, key(4), {{"E", nostr::to_hex(issue.id)}})).empty());
  EXPECT_TRUE(policy_.evaluate(make(0, key(3), {})).accepted());  // kind 0: its author is eligible
  EXPECT_FALSE(policy_.evaluate(make(0, key(5), {})).accepted());
}

TEST(RetryCache, ExpiresAndStaysBounded) {
  // Each entry costs its 100-byte estimate plus about 500 bytes of keys and index nodes.
  RetryCache cache({.max_events = 3, .max_bytes = 1300, .ttl_seconds = 60});
  auto ev = [](std::uint8_t n) {
    Event e;
    e.id.fill(n);
    return std::make_shared<const Event>(e);
  };
  cache.park(ev(1), 100, {"k1"}, 0);
  cache.park(ev(2), 100, {"k2"}, 10);
  cache.park(ev(3), 100, {"k3"}, 20);  // bytes bound evicts the oldest
  EXPECT_EQ(cache.size(), 2u);
  EXPECT_LE(cache.bytes(), 1300u);
  EXPECT_EQ(cache.stats().evicted, 1u);
  EXPECT_TRUE(cache.release({"k1"}).empty());
  cache.expire(70);
  EXPECT_EQ(cache.size(), 1u);
  EXPECT_EQ(cache.stats().expired, 1u);
  cache.expire(80);
  EXPECT_EQ(cache.size(), 0u);
  EXPECT_EQ(cache.bytes(), 0u);
}

TEST(RetryCache, RepeatedKeysCountOnceAndAnEntryIsErasedByItsOwnKeys) {
  RetryCache cache({.max_events = 100000, .max_bytes = 1u << 30, .ttl_seconds = 600});
  auto ev = [](std::uint32_t n) {
    Event e;
    std::memcpy(e.id.data(), &n, sizeof n);
    return std::make_shared<const Event>(e);
  };
  // An orphan naming one missing event 7,000 times is one key, not 7,000.
  cache.park(ev(0), 100, std::vector<std::string>(7000, "e:shared"), 0);
  EXPECT_LT(cache.bytes(), 1000u);
  // Many orphans waiting on one key: each erase touches its own nodes only.
  for (std::uint32_t i = 1; i <= 20000; ++i) cache.park(ev(i), 100, {"e:shared"}, 0);
  const auto bytes_before = cache.bytes();
  for (std::uint32_t i = 1; i <= 20000; ++i) cache.park(ev(i), 100, {"e:shared"}, 1);  // re-park
  EXPECT_EQ(cache.size(), 20001u);
  EXPECT_EQ(cache.bytes(), bytes_before);
  EXPECT_EQ(cache.release({"e:shared"}).size(), 20001u);
  EXPECT_EQ(cache.size(), 0u);
  EXPECT_EQ(cache.bytes(), 0u);
}

TEST(RetryCache, OneFloodingSourceEvictsOnlyItsOwnEntries) {
  RetryCache cache(
      {.max_events = 1000, .max_bytes = 1u << 30, .ttl_seconds = 600, .source_share = 0.25});
  auto ev = [](std::uint32_t n) {
    Event e;
    std::memcpy(e.id.data(), &n, sizeof n);
    return std::make_shared<const Event>(e);
  };
  cache.park(ev(1), 100, {"a:legit"}, 0, "ip:10.0.0.1");
  for (std::uint32_t i = 100; i < 10100; ++i) cache.park(ev(i), 100, {"e:orphan"}, 1, "ip:6.6.6.6");
  EXPECT_EQ(cache.size(), 251u) << "the flood keeps a quarter, the legitimate entry stays";
  auto released = cache.release({"a:legit"});
  ASSERT_EQ(released.size(), 1u);
  EXPECT_EQ(released[0]->id, ev(1)->id);
  EXPECT_EQ(cache.release({"e:orphan"}).size(), 250u);
  EXPECT_EQ(cache.bytes(), 0u);
}

// -- pending events (accepted, not yet committed) ----------------------------

/// Counts the lookups that reach the store, to bound the policy's work per event.
class CountingStore : public StoreView {
 public:
  explicit CountingStore(const StoreView& inner) : inner_(inner) {}
  void scan(const nostr::Filters& filters,
            const std::function<bool(const Event&)>& visit) const override {
    ++scans;
    inner_.scan(filters, [&](const Event& ev) {
      ++visits;
      return visit(ev);
    });
  }
  mutable std::size_t scans = 0;
  /// Events decoded and handed to the policy.
  mutable std::size_t visits = 0;

 private:
  const StoreView& inner_;
};

TEST_F(PolicyTest, ADependantOfAPendingEventIsAcceptedAndNamesIt) {
  auto repo = announcement(key(1), "pipe");
  auto repo_decision = policy_.evaluate(repo);
  ASSERT_TRUE(repo_decision.accepted());
  EXPECT_TRUE(repo_decision.depends_on.empty()) << "judged on the store alone";
  policy_.on_accepted(std::make_shared<Event>(repo), repo_decision.depends_on);

  auto issue = make(1621, key(2), {{"a", address(repo)}});
  auto issue_decision = policy_.evaluate(issue);
  ASSERT_TRUE(issue_decision.accepted());
  EXPECT_EQ(issue_decision.rule, Rule::related_backward_address);
  EXPECT_EQ(issue_decision.depends_on, std::vector<nostr::EventId>{repo.id});
  policy_.on_accepted(std::make_shared<Event>(issue), issue_decision.depends_on);

  auto state = make(30618, key(1), {{"d", "pipe"}});
  EXPECT_EQ(policy_.evaluate(state).depends_on, std::vector<nostr::EventId>{repo.id});
  auto comment = make(1111, key(3), {{"e", nostr::to_hex(issue.id)}});
  EXPECT_EQ(policy_.evaluate(comment).depends_on, std::vector<nostr::EventId>{issue.id});
  auto profile = make(0, key(2), {});
  auto profile_decision = policy_.evaluate(profile);
  EXPECT_TRUE(profile_decision.accepted()) << "the issue's author takes part in a thread";
  EXPECT_EQ(profile_decision.depends_on, std::vector<nostr::EventId>{issue.id})
      << "the issue stands on the announcement itself";

  commit(repo);  // the change feed: the announcement is no longer pending
  EXPECT_EQ(policy_.pending_count(), 1u);
  EXPECT_TRUE(policy_.evaluate(state).depends_on.empty());
}

TEST_F(PolicyTest, WhatDependsOnAnEventNotStoredIsNoLongerSeen) {
  auto repo = announcement(key(1), "lost");
  policy_.on_accepted(std::make_shared<Event>(repo), {});
  auto issue = make(1621, key(2), {{"a", address(repo)}});
  policy_.on_accepted(std::make_shared<Event>(issue), policy_.evaluate(issue).depends_on);
  auto comment = make(1111, key(3), {{"e", nostr::to_hex(issue.id)}});
  ASSERT_TRUE(policy_.evaluate(comment).accepted());

  policy_.on_not_stored(repo.id, /*in_store=*/false);
  EXPECT_EQ(policy_.pending_count(), 0u) << "the issue's write will be refused too";
  EXPECT_EQ(policy_.evaluate(comment).verdict, Verdict::refuse_missing_dependency);
  EXPECT_EQ(policy_.evaluate(issue).verdict, Verdict::refuse_missing_dependency)
      << "the comment, itself doomed, does not hold the issue up (forward rule)";
  EXPECT_FALSE(policy_.evaluate(make(0, key(2), {})).accepted());
}

TEST_F(PolicyTest, ADuplicateDependencyKeepsItsDependants) {
  auto repo = announcement(key(1), "dup");
  policy_.on_accepted(std::make_shared<Event>(repo), {});
  auto issue = make(1621, key(2), {{"a", address(repo)}});
  policy_.on_accepted(std::make_shared<Event>(issue), policy_.evaluate(issue).depends_on);
  store_.events.push_back(repo);
  policy_.on_not_stored(repo.id, /*in_store=*/true);
  EXPECT_TRUE(policy_.is_pending(issue.id));
  EXPECT_FALSE(policy_.is_pending(repo.id));
}

// -- the acceptance steps the actor and `graspd sync` share ------------------

TEST_F(PolicyTest, ASubmissionAlreadyHereIsAcceptedForTheStoreToAnswerDuplicate) {
  auto nowhere = [](const nostr::EventId&) { return false; };
  auto orphan = make(1, key(5), {{"e", std::string(64, 'a')}});
  auto refused = policy_.evaluate_submission(orphan, nowhere);
  EXPECT_EQ(refused.verdict, Verdict::refuse_missing_dependency);
  EXPECT_FALSE(refused.already_here);

  // Stored already (its thread since deleted, say): accepted with no dependency, by no rule.
  auto stored = policy_.evaluate_submission(
      orphan, [&](const nostr::EventId& id) { return id == orphan.id; });
  EXPECT_TRUE(stored.accepted());
  EXPECT_TRUE(stored.already_here);
  EXPECT_TRUE(stored.depends_on.empty());

  // Pending: accepted, and it stores only if the pending copy does.
  policy_.on_accepted(std::make_shared<Event>(orphan), {});
  auto pending = policy_.evaluate_submission(orphan, nowhere);
  EXPECT_TRUE(pending.accepted());
  EXPECT_TRUE(pending.already_here);
  EXPECT_EQ(pending.depends_on, std::vector<nostr::EventId>{orphan.id});

  // An event the rules accept is decided by them, whatever the store holds.
  auto repo = announcement(key(1), "steps");
  auto ruled = policy_.evaluate_submission(repo, [](const nostr::EventId&) { return true; });
  EXPECT_TRUE(ruled.accepted());
  EXPECT_FALSE(ruled.already_here);
  EXPECT_EQ(ruled.rule, Rule::announcement_lists_service);
}

TEST_F(PolicyTest, AWriteOutcomeSaysWhatFollowsAndUpdatesThePendingEvents) {
  auto repo = announcement(key(1), "outcome");
  policy_.on_accepted(std::make_shared<Event>(repo), {});
  EXPECT_EQ(policy_.on_write_outcome(repo.id, WriteOutcome::stored, 1), AfterWrite::done);
  EXPECT_TRUE(policy_.is_pending(repo.id)) << "visible until the change feed reports the commit";

  auto issue = make(1621, key(2), {{"a", address(repo)}});
  policy_.on_accepted(std::make_shared<Event>(issue), {});
  EXPECT_EQ(policy_.on_write_outcome(issue.id, WriteOutcome::deleted, 1), AfterWrite::done);
  EXPECT_FALSE(policy_.is_pending(issue.id)) << "not stored: no longer pending";

  auto comment = make(1111, key(3), {{"e", nostr::to_hex(issue.id)}});
  for (int attempt = 1; attempt < max_write_attempts; ++attempt) {
    policy_.on_accepted(std::make_shared<Event>(comment), {});
    EXPECT_EQ(policy_.on_write_outcome(comment.id, WriteOutcome::dependency_missing, attempt),
              AfterWrite::judge_again)
        << "attempt " << attempt;
  }
  policy_.on_accepted(std::make_shared<Event>(comment), {});
  EXPECT_EQ(
      policy_.on_write_outcome(comment.id, WriteOutcome::dependency_missing, max_write_attempts),
      AfterWrite::refuse);
  EXPECT_FALSE(policy_.is_pending(comment.id));
}

TEST_F(PolicyTest, ThreadSearchLooksAtEachEventOnceWhateverTheGraphWidth) {
  // Ten layers of ten events, each referencing every event of the layer above: a search that
  // walks paths instead of events makes 10^8 lookups.
  auto repo = announcement(key(1), "wide");
  commit(repo);
  std::vector<Event> layer{make(1621, key(2), {{"a", address(repo)}})};
  commit(layer[0]);
  for (int depth = 0; depth < 6; ++depth) {
    std::vector<Event> next;
    for (int i = 0; i < 10; ++i) {
      nostr::Tags tags;
      for (const auto& parent : layer) tags.push_back({"e", nostr::to_hex(parent.id)});
      next.push_back(make(1, key(static_cast<std::uint8_t>(50 + depth)), std::move(tags)));
    }
    for (const auto& ev : next) store_.events.push_back(ev);
    layer = std::move(next);
  }
  CountingStore counting(store_);
  auto path = thread_path(layer.front(), counting);
  ASSERT_TRUE(path.has_value());
  EXPECT_EQ(path->size(), 6u) << "nearest parent first, the root last";
  EXPECT_LE(counting.scans, 6u) << "one lookup per level";
}

TEST_F(PolicyTest, MaintainerChecksOfAPopularIdentifierDoNotRereadItsAnnouncements) {
  // 20 announcements of one identifier listing 2,000 maintainers each: a state event must not
  // decode all of them.
  CountingStore counting(store_);
  AcceptancePolicy policy(make_config(), counting);
  std::vector<Pubkey> maintainers;
  for (int i = 0; i < 20; ++i) {
    nostr::Tags tags{{"maintainers"}};
    for (int m = 0; m < 2000; ++m) {
      Pubkey p{};
      p[0] = static_cast<std::uint8_t>(i);
      p[1] = static_cast<std::uint8_t>(m >> 8);
      p[2] = static_cast<std::uint8_t>(m);
      p[3] = 0x77;
      tags[0].push_back(hex(p));
      if (m == 1999) maintainers.push_back(p);
    }
    auto ev = announcement(key(static_cast<std::uint8_t>(100 + i)), "popular", std::move(tags));
    store_.events.push_back(ev);
    policy.on_committed(ev);
  }
  counting.visits = 0;
  for (const auto& maintainer : maintainers) {
    auto state = make(30618, maintainer, {{"d", "popular"}});
    EXPECT_TRUE(policy.evaluate(state).accepted());
  }
  // One existence check per event plus one build of the set; re-reading the announcements per
  // check visits 230 here, and 40,000 maintainer values.
  EXPECT_LE(counting.visits, maintainers.size() + 20) << "announcements decoded again per check";

  // A new announcement of that identifier is seen at once.
  auto newcomer = key(200);
  auto state = make(30618, newcomer, {{"d", "popular"}});
  EXPECT_FALSE(policy.evaluate(state).accepted());
  auto listing = announcement(key(100), "popular", {{"maintainers", hex(newcomer)}});
  store_.events.push_back(listing);
  policy.on_committed(listing);
  EXPECT_TRUE(policy.evaluate(state).accepted());
}

// -- NIP-62 requests to vanish --------------------------------------------------

TEST_F(PolicyTest, ARequestToVanishNamingThisRelayIsAcceptedFromAnyone) {
  for (auto relay : {"wss://relay.example.com", "ALL_RELAYS", "wss://RELAY.example.com:443/"}) {
    auto d = policy_.evaluate(make(62, key(1), {{"relay", relay}}));
    EXPECT_TRUE(d.accepted()) << relay;
    EXPECT_EQ(d.rule, Rule::vanish_request);
  }
}

TEST_F(PolicyTest, ARequestToVanishNamingAnotherRelayOnlyIsBlocked) {
  for (auto relay : {"wss://other.example.com", "wss://relay.example.com.evil.net", "all_relays"}) {
    auto d = policy_.evaluate(make(62, key(1), {{"relay", relay}}));
    EXPECT_FALSE(d.accepted()) << relay;
    EXPECT_EQ(d.message.rfind("blocked: ", 0), 0u) << d.message;
  }
}

TEST_F(PolicyTest, RequestsToVanishAreHonouredWhetherLoadedAtStartupOrCommittedLater) {
  auto repo = announcement(key(1), "r");
  auto request = make(62, key(1), {{"relay", "ALL_RELAYS"}});
  // Loaded with none stored: the policy skips the lookup until one is committed.
  AcceptancePolicy later(make_config(), store_);
  later.load_from_store();
  EXPECT_TRUE(later.evaluate(repo).accepted());
  store_.events.push_back(request);
  later.on_committed(request);
  EXPECT_EQ(later.evaluate(repo).rule, Rule::author_vanished);
  // Accepted, not yet committed: pending counts too.
  store_.events.clear();
  AcceptancePolicy pending(make_config(), store_);
  pending.load_from_store();
  pending.on_accepted(std::make_shared<const Event>(request), {});
  EXPECT_EQ(pending.evaluate(repo).rule, Rule::author_vanished);
  // Loaded with one stored.
  store_.events.push_back(request);
  AcceptancePolicy at_startup(make_config(), store_);
  at_startup.load_from_store();
  EXPECT_EQ(at_startup.evaluate(repo).rule, Rule::author_vanished);
}

TEST_F(PolicyTest, ABlacklistedAuthorMayStillVanish) {
  auto config = make_config();
  config.event_blacklist.insert(key(1));
  AcceptancePolicy policy(config, store_);
  EXPECT_EQ(policy.evaluate(make(62, key(1), {{"relay", "ALL_RELAYS"}})).rule,
            Rule::vanish_request);
  EXPECT_EQ(policy.evaluate(make(1, key(1), {})).rule, Rule::event_blacklisted);
}

TEST_F(PolicyTest, AVanishedAuthorsOlderEventsAreRefused) {
  auto repo = announcement(key(1), "r");
  auto request = make(62, key(1), {{"relay", "ALL_RELAYS"}});
  ASSERT_TRUE(submit(request).accepted());
  // `repo` was made before the request: refused; a later announcement is judged as usual.
  auto refused = policy_.evaluate(repo);
  EXPECT_FALSE(refused.accepted());
  EXPECT_EQ(refused.rule, Rule::author_vanished);
  EXPECT_EQ(refused.message.rfind("blocked: ", 0), 0u) << refused.message;
  EXPECT_EQ(policy_.evaluate(announcement(key(1), "r")).rule, Rule::announcement_lists_service);
  // Another author is not concerned.
  auto other = announcement(key(2), "r");
  other.created_at = request.created_at - 10;
  EXPECT_TRUE(policy_.evaluate(other).accepted());
}

}  // namespace
}  // namespace graspd::policy
