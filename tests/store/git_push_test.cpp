#include "store/git/git_push.hpp"

#include <gtest/gtest.h>

#include <cstring>

#include "store/lmdb/store_view.hpp"
#include "tests/store/store_test_util.hpp"
#include "tests/store/vector_store.hpp"

#include "messages/nostr/nip34.hpp"

namespace graspd::git {
namespace {

using nostr::Event;
using nostr::Pubkey;

using test::key;
using test::VectorStore;

std::string oid(char c) {
  return std::string(object_id_length, c);
}

std::string pkt(std::string_view payload) {
  char length[5];
  std::snprintf(length, sizeof length, "%04zx", payload.size() + 4);
  return std::string(length) + std::string(payload);
}

// ---------------------------------------------------------------- command list

TEST(GitCommandList, ParsesCommandsCapabilitiesAndStopsAtTheFlush) {
  auto body = pkt(zero_id + " " + oid('a') + " refs/heads/main" + '\0' +
                  "report-status side-band-64k agent=git/2.39\n") +
              pkt(oid('b') + " " + zero_id + " refs/tags/v1\n") + "0000" + "PACK...";
  auto parsed = parse_command_list(body);
  ASSERT_EQ(parsed.status, ParseStatus::complete) << parsed.error;
  ASSERT_EQ(parsed.list.updates.size(), 2u);
  EXPECT_EQ(parsed.list.updates[0], (RefUpdate{zero_id, oid('a'), "refs/heads/main"}));
  EXPECT_TRUE(parsed.list.updates[1].deletes());
  EXPECT_TRUE(parsed.list.capabilities.count("side-band-64k"));
  EXPECT_TRUE(parsed.list.capabilities.count("report-status"));
  EXPECT_EQ(body.substr(parsed.list.consumed), "PACK...");
}

TEST(GitCommandList, EmptyListIsTheProbe) {
  auto parsed = parse_command_list("0000");
  ASSERT_EQ(parsed.status, ParseStatus::complete);
  EXPECT_TRUE(parsed.list.updates.empty());
  EXPECT_EQ(parsed.list.consumed, 4u);
}

TEST(GitCommandList, IncompleteInputAsksForMore) {
  auto full = pkt(zero_id + " " + oid('a') + " refs/heads/main\n") + "0000";
  for (std::size_t n = 0; n < full.size(); ++n)
    EXPECT_EQ(parse_command_list(full.substr(0, n)).status, ParseStatus::need_more) << n;
}

TEST(GitCommandList, FailsClosedOnAnythingUnparsable) {
  const std::vector<std::string> bad = {
      "zzzz",
      "0003",
      "0004",
      pkt("hello\n") + "0000",
      pkt(zero_id + " " + oid('A') + " refs/heads/main") + "0000",            // uppercase hex
      pkt(zero_id + " " + oid('a').substr(1) + " refs/heads/main") + "0000",  // short id
      pkt(zero_id + " " + oid('a') + " refs/heads/a..b") + "0000",
      pkt(zero_id + " " + oid('a') + " refs/heads/x.lock") + "0000",
      pkt(zero_id + " " + oid('a') + " refs/heads/ bad") + "0000",
      pkt(zero_id + " " + oid('a') + " HEAD") + "0000",
      pkt("shallow " + oid('a')) + "0000",
      pkt(std::string("push-cert") + '\0' + "report-status") + "0000",
      pkt(zero_id + " " + oid('a') + " refs/heads/a") +
          pkt(zero_id + " " + oid('a') + " refs/heads/b" + '\0' + "x") + "0000",
  };
  for (const auto& body : bad)
    EXPECT_EQ(parse_command_list(body).status, ParseStatus::invalid) << body;
}

TEST(GitCommandList, DeletingARefThatIsNotHereIsAValidCommand) {
  // git sends both ids zero for `git push --delete b` when its view of b is already gone here.
  auto parsed = parse_command_list(pkt(zero_id + " " + zero_id + " refs/heads/b\n") + "0000");
  ASSERT_EQ(parsed.status, ParseStatus::complete) << parsed.error;
  ASSERT_EQ(parsed.list.updates.size(), 1u);
  EXPECT_TRUE(parsed.list.updates[0].creates() && parsed.list.updates[0].deletes());
  // Authorised as the no-op it is, with or without a state.
  auto decision = authorise_push(parsed.list.updates, RefMap{{"refs/heads/main", oid('1')}}, {});
  EXPECT_TRUE(decision.accepted) << decision.reason;
}

TEST(GitCommandList, ARefusedListStillNamesItsRefsAndCapabilities) {
  auto body =
      pkt("shallow " + oid('c') + "\n") +
      pkt(oid('a') + " " + oid('b') + " refs/heads/main" + '\0' + "report-status side-band-64k\n") +
      pkt(zero_id + " " + oid('b') + " refs/heads/x..y\n") + "0000PACK";
  ASSERT_EQ(parse_command_list(body).status, ParseStatus::invalid);
  auto salvaged = salvage_command_list(body);
  ASSERT_EQ(salvaged.updates.size(), 2u);
  EXPECT_EQ(salvaged.updates[0].ref, "refs/heads/main");
  EXPECT_EQ(salvaged.updates[1].ref, "refs/heads/x..y");
  EXPECT_EQ(salvaged.capabilities.count("side-band-64k"), 1u);
  EXPECT_EQ(salvaged.consumed, body.size() - 4) << "up to and with the flush";
  EXPECT_EQ(salvage_command_list(body.substr(0, 60)).consumed, 0u) << "no flush yet";
  EXPECT_TRUE(salvage_command_list("zzzz").updates.empty());
  EXPECT_TRUE(salvage_command_list(pkt("hello\n") + "0000").updates.empty());
}

TEST(GitCommandList, EncodesBackToWhatParses) {
  auto body =
      pkt(zero_id + " " + oid('a') + " refs/heads/main" + '\0' + "report-status side-band-64k\n") +
      pkt(oid('b') + " " + zero_id + " refs/tags/v1\n") + "0000";
  auto parsed = parse_command_list(body);
  ASSERT_EQ(parsed.status, ParseStatus::complete);
  auto encoded = encode_command_list(parsed.list);
  auto again = parse_command_list(encoded + "PACK");
  ASSERT_EQ(again.status, ParseStatus::complete);
  EXPECT_EQ(again.list.updates, parsed.list.updates);
  EXPECT_EQ(again.list.capabilities, parsed.list.capabilities);
  EXPECT_EQ(again.list.consumed, encoded.size());
}

TEST(GitCommandList, SatisfiedUpdatesAreRebasedOnTheCurrentValue) {
  CommandList list;
  list.updates = {{zero_id, oid('1'), "refs/tags/v1"}, {oid('1'), oid('2'), "refs/heads/main"}};
  RefMap current{{"refs/tags/v1", oid('1')}, {"refs/heads/main", oid('1')}};
  EXPECT_TRUE(rebase_satisfied_updates(list, current));
  EXPECT_EQ(list.updates[0], (RefUpdate{oid('1'), oid('1'), "refs/tags/v1"}));
  EXPECT_EQ(list.updates[1], (RefUpdate{oid('1'), oid('2'), "refs/heads/main"})) << "untouched";
  EXPECT_FALSE(rebase_satisfied_updates(list, current));
}

TEST(GitRefNames, FollowCheckRefFormat) {
  for (auto ok : {"refs/heads/main", "refs/tags/v1.0", "refs/heads/feature/x", "refs/nostr/ab"})
    EXPECT_TRUE(is_valid_ref_name(ok)) << ok;
  for (auto bad : {"refs/heads/", "refs/heads/.x", "refs/heads/x.", "refs/heads//x", "heads/main",
                   "refs/heads/a@{b", "refs/heads/a~1", "refs/heads/a^", "refs/heads/a:b",
                   "refs/heads/a?", "refs/heads/a*", "refs/heads/a[", "refs/heads/a\\b",
                   "refs/heads/x.lock", "refs/heads/\x7f"})
    EXPECT_FALSE(is_valid_ref_name(bad)) << bad;
}

// ---------------------------------------------------------------- the rule

StateRefs state(RefMap refs) {
  return StateRefs{std::string(64, 'e'), std::move(refs), std::nullopt};
}

struct Case {
  const char* name;
  RefMap current;
  std::vector<RefUpdate> updates;
  std::optional<StateRefs> state;
  std::map<std::string, std::string> prs;
  bool accepted;
  const char* reason_contains = "";
};

const std::string pr_id(64, 'c');

TEST(GitPushRule, Table) {
  const std::vector<Case> cases = {
      {"new branch matching the state",
       {},
       {{zero_id, oid('1'), "refs/heads/main"}},
       state({{"refs/heads/main", oid('1')}}),
       {},
       true},
      {"new branch the state does not want",
       {},
       {{zero_id, oid('2'), "refs/heads/main"}},
       state({{"refs/heads/main", oid('1')}}),
       {},
       false,
       "refs/heads/main: pushed 222222222222, state eeeeeeeeeeee wants 111111111111"},
      {"fast-forward",
       {{"refs/heads/main", oid('1')}},
       {{oid('1'), oid('2'), "refs/heads/main"}},
       state({{"refs/heads/main", oid('2')}}),
       {},
       true},
      {"rewind the state asks for",
       {{"refs/heads/main", oid('2')}},
       {{oid('2'), oid('1'), "refs/heads/main"}},
       state({{"refs/heads/main", oid('1')}}),
       {},
       true},
      {"stale old id",
       {{"refs/heads/main", oid('3')}},
       {{oid('1'), oid('2'), "refs/heads/main"}},
       state({{"refs/heads/main", oid('2')}}),
       {},
       false,
       "is at 333333333333 here"},
      {"a ref already where the push wants it (a state applied first)",
       {{"refs/heads/main", oid('1')}, {"refs/tags/v1", oid('1')}},
       {{zero_id, oid('1'), "refs/tags/v1"}},
       state({{"refs/heads/main", oid('1')}, {"refs/tags/v1", oid('1')}}),
       {},
       true},
      {"deletion the state asks for",
       {{"refs/heads/main", oid('1')}, {"refs/heads/old", oid('2')}},
       {{oid('2'), zero_id, "refs/heads/old"}},
       state({{"refs/heads/main", oid('1')}}),
       {},
       true},
      {"deletion of a ref the state keeps",
       {{"refs/heads/main", oid('1')}},
       {{oid('1'), zero_id, "refs/heads/main"}},
       state({{"refs/heads/main", oid('1')}}),
       {},
       false,
       "ref is missing"},
      {"tag",
       {{"refs/heads/main", oid('1')}},
       {{zero_id, oid('1'), "refs/tags/v1"}},
       state({{"refs/heads/main", oid('1')}, {"refs/tags/v1", oid('1')}}),
       {},
       true},
      {"annotated tag (tag object id), peeled entry ignored",
       {{"refs/heads/main", oid('1')}},
       {{zero_id, oid('7'), "refs/tags/v2"}},
       state({{"refs/heads/main", oid('1')}, {"refs/tags/v2", oid('7')}}),
       {},
       true},
      {"a tag the state omits",
       {{"refs/heads/main", oid('1')}},
       {{zero_id, oid('1'), "refs/tags/v9"}},
       state({{"refs/heads/main", oid('1')}}),
       {},
       false,
       "refs/tags/v9: state eeeeeeeeeeee does not name this ref"},
      {"a branch the state names is left out of the push",
       {},
       {{zero_id, oid('1'), "refs/heads/main"}},
       state({{"refs/heads/main", oid('1')}, {"refs/heads/dev", oid('2')}}),
       {},
       false,
       "refs/heads/dev: state eeeeeeeeeeee wants 222222222222, ref is missing"},
      {"no state at all",
       {},
       {{zero_id, oid('1'), "refs/heads/main"}},
       std::nullopt,
       {},
       false,
       "no state event"},
      {"one bad ref refuses the whole push",
       {},
       {{zero_id, oid('1'), "refs/heads/main"}, {zero_id, oid('9'), "refs/heads/dev"}},
       state({{"refs/heads/main", oid('1')}}),
       {},
       false,
       "refs/heads/dev"},
      {"other namespaces are refused",
       {},
       {{zero_id, oid('1'), "refs/notes/commits"}},
       state({}),
       {},
       false,
       "only branches, tags and refs/nostr"},
      {"refs/nostr with an unknown PR event",
       {},
       {{zero_id, oid('5'), "refs/nostr/" + pr_id}},
       std::nullopt,
       {},
       true},
      {"refs/nostr matching its PR event",
       {},
       {{zero_id, oid('5'), "refs/nostr/" + pr_id}},
       std::nullopt,
       {{pr_id, oid('5')}},
       true},
      {"refs/nostr against its PR event",
       {},
       {{zero_id, oid('6'), "refs/nostr/" + pr_id}},
       std::nullopt,
       {{pr_id, oid('5')}},
       false,
       "names commit 555555555555"},
      {"refs/nostr with a short id",
       {},
       {{zero_id, oid('6'), "refs/nostr/abc"}},
       std::nullopt,
       {},
       false,
       "64 lowercase hex"},
      {"no change needs no state",
       {{"refs/heads/main", oid('1')}},
       {{oid('1'), oid('1'), "refs/heads/main"}},
       std::nullopt,
       {},
       true},
      {"empty push", {}, {}, std::nullopt, {}, true},
  };
  for (const auto& c : cases) {
    PushAuthority authority{c.state, c.prs};
    auto decision = authorise_push(c.updates, c.current, authority);
    EXPECT_EQ(decision.accepted, c.accepted) << c.name << ": " << decision.reason;
    ASSERT_EQ(decision.refs.size(), c.updates.size()) << c.name;
    for (const auto& verdict : decision.refs) EXPECT_EQ(verdict.ok, c.accepted) << c.name;
    if (!c.accepted) {
      EXPECT_NE(decision.reason.find(c.reason_contains), std::string::npos)
          << c.name << ": " << decision.reason;
    }
  }
}

// ---------------------------------------------------------------- store lookups

class AuthorityTest : public ::testing::Test {
 protected:
  Event make(std::uint32_t kind, const Pubkey& author, nostr::Tags tags, std::int64_t at = 0) {
    Event ev;
    ++counter_;
    std::memcpy(ev.id.data(), &counter_, sizeof counter_);
    ev.pubkey = author;
    ev.kind = kind;
    ev.created_at = at ? at : 1700000000 + counter_;
    ev.tags = std::move(tags);
    store_.events.push_back(ev);
    return ev;
  }
  Event announce(const Pubkey& author, std::vector<Pubkey> maintainers = {}) {
    nostr::Tags tags{{"d", "repo"}};
    nostr::Tag m{"maintainers"};
    for (const auto& k : maintainers) m.push_back(nostr::to_hex(k));
    if (maintainers.size()) tags.push_back(m);
    return make(nostr::nip34::kind::repo_announcement, author, tags);
  }
  Event publish_state(const Pubkey& author, const std::string& main, std::int64_t at = 0) {
    return make(nostr::nip34::kind::repo_state, author,
                {{"d", "repo"}, {"refs/heads/main", main}, {"HEAD", "ref: refs/heads/main"}}, at);
  }
  PushAuthority authority(const Pubkey& owner, std::vector<std::string> prs = {}) {
    return push_authority(store_, owner, "repo", prs);
  }

  VectorStore store_;
  std::uint64_t counter_ = 0;
};

TEST_F(AuthorityTest, OwnersStateAuthorises) {
  announce(key(1));
  auto s = publish_state(key(1), oid('1'));
  auto a = authority(key(1));
  ASSERT_TRUE(a.state);
  EXPECT_EQ(a.state->event_id, nostr::to_hex(s.id));
  EXPECT_EQ(a.state->refs.at("refs/heads/main"), oid('1'));
  EXPECT_EQ(a.state->head, "main");
}

TEST_F(AuthorityTest, StrangersStateAuthorisesNothing) {
  announce(key(1));
  announce(key(9));  // another owner of the same d
  publish_state(key(9), oid('9'));
  EXPECT_FALSE(authority(key(1)).state);
}

TEST_F(AuthorityTest, MaintainerTwoHopsAwayCountsAndCyclesEnd) {
  announce(key(1), {key(2)});
  announce(key(2), {key(3), key(1)});
  announce(key(3), {key(2)});
  publish_state(key(3), oid('3'));
  auto a = authority(key(1));
  ASSERT_TRUE(a.state);
  EXPECT_EQ(a.state->refs.at("refs/heads/main"), oid('3'));
  EXPECT_EQ(maintainer_closure(store_, key(1), "repo").size(), 3u);
}

TEST_F(AuthorityTest, NotSymmetric) {
  announce(key(1), {key(2)});
  announce(key(2));  // does not list key(1)
  publish_state(key(1), oid('1'));
  EXPECT_FALSE(authority(key(2)).state) << "key(1) does not maintain key(2)'s repository";
}

TEST_F(AuthorityTest, TheNewestStateWinsAndAnOlderOneDoesNot) {
  announce(key(1), {key(2)});
  publish_state(key(1), oid('1'), 1700000100);
  publish_state(key(2), oid('2'), 1700000200);
  auto a = authority(key(1));
  ASSERT_TRUE(a.state);
  EXPECT_EQ(a.state->refs.at("refs/heads/main"), oid('2'));
  auto decision = authorise_push({{zero_id, oid('1'), "refs/heads/main"}}, {}, a);
  EXPECT_FALSE(decision.accepted) << "the older state's commit";
}

TEST_F(AuthorityTest, PrCommitsAreLookedUpById) {
  announce(key(1));
  auto pr = make(nostr::nip34::kind::pull_request, key(5), {{"c", oid('5')}});
  auto a = authority(key(1), {nostr::to_hex(pr.id), std::string(64, 'f')});
  ASSERT_EQ(a.pr_commits.size(), 1u);
  EXPECT_EQ(a.pr_commits.at(nostr::to_hex(pr.id)), oid('5'));
}

/// §7.2 with purgatory: a PR event held (not stored) still decides its refs/nostr ref; an id with
/// no PR event stored or held leaves the ref free (a placeholder, §7.3).
TEST(GitPushPurgatory, HeldPrEventsDecideTheirRefsNostrRefs) {
  store::test::TempDir dir;
  auto events = std::make_shared<store::EventStore>(store::test::options_for(dir));
  auto pr = store::test::unsigned_event(1, 5, 1700000000, nostr::nip34::kind::pull_request,
                                        {{"c", oid('5')}});
  events->put_held(pr->id,
                   store::encode_held({pr, policy::HeldKind::pull_request, 1700001800, {}}));
  const auto pr_ref = "refs/nostr/" + nostr::to_hex(pr->id);
  const auto unknown_ref = "refs/nostr/" + std::string(64, 'f');
  store::StoreAndHeldView view(events);
  auto authority =
      push_authority(view, key(1), "repo", {pr_ref.substr(11), unknown_ref.substr(11)});
  ASSERT_EQ(authority.pr_commits.size(), 1u);

  auto matching = authorise_push({{zero_id, oid('5'), pr_ref}}, {}, authority);
  EXPECT_TRUE(matching.accepted) << matching.reason;
  auto other = authorise_push({{zero_id, oid('6'), pr_ref}}, {}, authority);
  EXPECT_FALSE(other.accepted);
  EXPECT_NE(other.reason.find("names commit " + oid('5').substr(0, 12)), std::string::npos)
      << other.reason;
  auto unknown = authorise_push({{zero_id, oid('6'), unknown_ref}}, {}, authority);
  EXPECT_TRUE(unknown.accepted) << unknown.reason;
  // The same rows through the store alone: the held event is invisible there.
  store::EventStoreView stored(events);
  auto without = push_authority(stored, key(1), "repo", {pr_ref.substr(11)});
  EXPECT_TRUE(authorise_push({{zero_id, oid('6'), pr_ref}}, {}, without).accepted);
}

TEST(GitHeadBranch, FollowsTheStateThenTheFallbacks) {
  auto s = state({{"refs/heads/dev", oid('1')}, {"refs/heads/main", oid('2')}});
  EXPECT_EQ(head_branch(s), "main");
  s.head = "dev";
  EXPECT_EQ(head_branch(s), "dev");
  s.head = "gone";
  EXPECT_EQ(head_branch(s), "main");
  EXPECT_EQ(head_branch(state({{"refs/heads/only", oid('1')}})), "only");
  EXPECT_EQ(head_branch(state({{"refs/heads/b", oid('1')}, {"refs/heads/a", oid('1')}})), "a");
  EXPECT_EQ(head_branch(state({{"refs/tags/v1", oid('1')}})), std::nullopt);
}

TEST(GitStateRefs, IgnoresPeeledEntriesSymbolicValuesAndOtherTags) {
  Event ev;
  ev.tags = {{"d", "repo"},
             {"refs/heads/main", oid('1')},
             {"refs/tags/v1", oid('2')},
             {"refs/tags/v1^{}", oid('1')},
             {"refs/heads/alias", "ref: refs/heads/main"},
             {"refs/notes/x", oid('3')},
             {"HEAD", "ref: refs/heads/main"}};
  auto s = state_refs(ev);
  EXPECT_EQ(s.refs, (RefMap{{"refs/heads/main", oid('1')}, {"refs/tags/v1", oid('2')}}));
  EXPECT_EQ(s.head, "main");
}

}  // namespace
}  // namespace graspd::git
