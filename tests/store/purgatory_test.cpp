// Purgatory (docs/spec/git-hosting.md §6): the pure rules, their LMDB records across a reopen, and
// what the acceptance policy sees of held announcements (§1.3).
#include "store/git/purgatory.hpp"

#include <gtest/gtest.h>

#include <set>
#include <thread>

#include "store/lmdb/event_store.hpp"
#include "store/lmdb/store_view.hpp"
#include "tests/store/store_test_util.hpp"
#include "tests/store/vector_store.hpp"

namespace graspd::policy {
namespace {

using store::test::bytes_of;
using store::test::unsigned_event;

constexpr std::int64_t t0 = 1'700'000'000;
constexpr std::uint32_t announcement_kind = 30617;
constexpr std::uint32_t state_kind = 30618;

nostr::EventPtr announcement(std::uint64_t id, std::uint64_t owner, const std::string& d,
                             std::int64_t created_at = t0, nostr::Tags extra = {}) {
  nostr::Tags tags{{"d", d}};
  for (auto& tag : extra) tags.push_back(tag);
  return unsigned_event(id, owner, created_at, announcement_kind, std::move(tags));
}

nostr::EventPtr state(std::uint64_t id, std::uint64_t author, const std::string& d,
                      std::int64_t created_at = t0) {
  return unsigned_event(id, author, created_at, state_kind, {{"d", d}, {"refs/heads/main", "ab"}});
}

nostr::Pubkey owner_key(std::uint64_t owner) {
  return bytes_of(owner, 0xaa);
}

PurgatoryLimits limits() {
  PurgatoryLimits out;
  out.hold_seconds = 1800;
  out.remember_seconds = 3600;
  out.max_held = 100;
  return out;
}

TEST(PurgatoryTest, HoldsOnceAndAnswersAResubmissionAsDuplicate) {
  Purgatory purgatory(limits());
  auto ev = announcement(1, 1, "repo");
  EXPECT_EQ(purgatory.hold(ev, HeldKind::announcement, t0).outcome, Purgatory::Hold::held);
  EXPECT_TRUE(purgatory.contains(ev->id));
  EXPECT_EQ(purgatory.hold(ev, HeldKind::announcement, t0 + 5).outcome, Purgatory::Hold::duplicate);
  EXPECT_EQ(purgatory.counts()[0], 1u);
  EXPECT_EQ(purgatory.find(ev->id)->expires_at, t0 + 1800);  // a resubmission restarts nothing
}

TEST(PurgatoryTest, ANewerVersionOfAnAddressReplacesTheHeldOneAndAnOlderOneDoesNot) {
  Purgatory purgatory(limits());
  auto first = announcement(1, 1, "repo", t0);
  auto newer = announcement(2, 1, "repo", t0 + 10);
  auto older = announcement(3, 1, "repo", t0 - 10);
  purgatory.hold(first, HeldKind::announcement, t0);
  auto replaced = purgatory.hold(newer, HeldKind::announcement, t0 + 60);
  EXPECT_EQ(replaced.outcome, Purgatory::Hold::held);
  ASSERT_TRUE(replaced.replaced);
  EXPECT_EQ(replaced.replaced->event, first);
  EXPECT_FALSE(purgatory.contains(first->id));
  EXPECT_EQ(purgatory.find(newer->id)->expires_at, t0 + 60 + 1800);
  EXPECT_EQ(purgatory.hold(older, HeldKind::announcement, t0 + 61).outcome,
            Purgatory::Hold::duplicate);
  EXPECT_EQ(purgatory.size(), 1u);

  // Undone (its record could not be written): the version it replaced is held again, as it was.
  purgatory.undo_hold(newer->id, replaced.replaced);
  EXPECT_FALSE(purgatory.contains(newer->id));
  EXPECT_FALSE(purgatory.expired_recently(newer->id));
  ASSERT_TRUE(purgatory.contains(first->id));
  EXPECT_EQ(purgatory.find(first->id)->expires_at, t0 + 1800);
  EXPECT_EQ(purgatory.hold(older, HeldKind::announcement, t0 + 62).outcome,
            Purgatory::Hold::duplicate)
      << "the address points at the restored version";
}

TEST(PurgatoryTest, IsBoundedButAReplacementStillFits) {
  auto small = limits();
  small.max_held = 3;
  Purgatory purgatory(small);
  for (std::uint64_t i = 1; i <= 3; ++i)
    ASSERT_EQ(purgatory.hold(announcement(i, i, "r"), HeldKind::announcement, t0).outcome,
              Purgatory::Hold::held);
  EXPECT_EQ(purgatory.hold(announcement(9, 9, "r"), HeldKind::announcement, t0).outcome,
            Purgatory::Hold::full);
  EXPECT_EQ(purgatory.hold(announcement(10, 1, "r", t0 + 1), HeldKind::announcement, t0).outcome,
            Purgatory::Hold::held);
}

TEST(PurgatoryTest, GitDataReleasesTheStateAndTheOwnersAnnouncementAnnouncementFirst) {
  Purgatory purgatory(limits());
  auto own = announcement(1, 1, "repo");
  auto other_owner = announcement(2, 2, "repo");
  auto other_repo = announcement(3, 1, "other");
  auto st = state(4, 5, "repo");  // a maintainer's state authorises the owner's repository
  auto unrelated_state = state(6, 1, "other");
  for (auto& ev : {own, other_owner, other_repo}) purgatory.hold(ev, HeldKind::announcement, t0);
  purgatory.hold(st, HeldKind::state, t0);
  purgatory.hold(unrelated_state, HeldKind::state, t0);

  auto released = purgatory.release(owner_key(1), "repo", st->id);
  ASSERT_EQ(released.size(), 2u);
  EXPECT_EQ(released[0]->id, own->id);
  EXPECT_EQ(released[1]->id, st->id);
  EXPECT_TRUE(purgatory.contains(other_owner->id));
  EXPECT_TRUE(purgatory.contains(other_repo->id));
  // A state of another repository is not released by data arriving for this one.
  EXPECT_TRUE(purgatory.release(owner_key(1), "repo", unrelated_state->id).empty());
  EXPECT_EQ(purgatory.stats().released, 2u);
}

TEST(PurgatoryTest, HoldsExpireOnTheInjectedClockAndTheirIdsAreRememberedForAWhile) {
  Purgatory purgatory(limits());
  auto early = announcement(1, 1, "repo");
  auto late = state(2, 1, "other");
  purgatory.hold(early, HeldKind::announcement, t0);
  purgatory.hold(late, HeldKind::state, t0 + 600);

  EXPECT_TRUE(purgatory.expire(t0 + 1799).events.empty());
  auto expired = purgatory.expire(t0 + 1800);
  ASSERT_EQ(expired.events.size(), 1u);
  EXPECT_EQ(expired.events[0].event->id, early->id);
  EXPECT_FALSE(purgatory.contains(early->id));
  EXPECT_TRUE(purgatory.expired_recently(early->id));
  EXPECT_TRUE(purgatory.contains(late->id));

  auto later = purgatory.expire(t0 + 1800 + 3600);
  EXPECT_EQ(later.events.size(), 1u);  // the state's hold ended meanwhile
  ASSERT_EQ(later.forgotten.size(), 1u);
  EXPECT_EQ(later.forgotten[0], early->id);
  EXPECT_FALSE(purgatory.expired_recently(early->id));
  EXPECT_EQ(purgatory.stats().expired, 2u);
}

TEST(PurgatoryTest, AnExpiredEventTheCallerDoesNotRememberMayBeHeldAgainAtOnce) {
  Purgatory purgatory(limits());
  auto archive = announcement(1, 1, "mirror");
  auto hosted = announcement(2, 2, "repo");
  purgatory.hold(archive, HeldKind::announcement, t0);
  purgatory.hold(hosted, HeldKind::announcement, t0);
  auto expired = purgatory.expire(
      t0 + 1800, [](const HeldEvent& entry) { return entry.event->d_tag() != "mirror"; });
  EXPECT_EQ(expired.events.size(), 2u);
  EXPECT_FALSE(purgatory.expired_recently(archive->id));
  EXPECT_TRUE(purgatory.expired_recently(hosted->id));
  EXPECT_EQ(purgatory.hold(archive, HeldKind::announcement, t0 + 1900).outcome,
            Purgatory::Hold::held);
}

TEST(PurgatoryTest, GitDataForARepositoryRestartsItsHoldsOnly) {
  Purgatory purgatory(limits());
  auto held = announcement(1, 1, "repo");
  auto elsewhere = announcement(2, 1, "other");
  purgatory.hold(held, HeldKind::announcement, t0);
  purgatory.hold(elsewhere, HeldKind::announcement, t0);
  auto refreshed = purgatory.refresh("repo", t0 + 1000);
  ASSERT_EQ(refreshed.size(), 1u);
  EXPECT_EQ(refreshed[0].expires_at, t0 + 1000 + 1800);
  auto expired = purgatory.expire(t0 + 1800);
  ASSERT_EQ(expired.events.size(), 1u);
  EXPECT_EQ(expired.events[0].event->id, elsewhere->id);
  EXPECT_TRUE(purgatory.contains(held->id));
}

TEST(PurgatoryTest, HeldAnnouncementsCountForTheStateRuleAndMaintainersButNotForRelatedEvents) {
  graspd::test::VectorStore stored;
  PolicyConfig config;
  config.service = *parse_host_port("relay.example.com");
  AcceptancePolicy policy(config, stored);
  Purgatory purgatory(limits());
  auto maintainer = 7;
  purgatory.hold(
      announcement(1, 1, "repo", t0, {{"maintainers", nostr::to_hex(owner_key(maintainer))}}),
      HeldKind::announcement, t0);

  EXPECT_FALSE(policy.evaluate(*state(2, maintainer, "repo")).accepted());
  policy.set_held_announcements(&purgatory.announcements());
  EXPECT_TRUE(policy.evaluate(*state(2, maintainer, "repo")).accepted());
  EXPECT_FALSE(policy.evaluate(*state(3, 8, "repo")).accepted());  // not a maintainer
  auto maintainers_own = announcement(4, maintainer, "repo");      // lists no service
  EXPECT_EQ(policy.evaluate(*maintainers_own).rule, Rule::announcement_maintainer);
  // An issue tagging the held repository is an orphan: held events are not served.
  auto issue =
      unsigned_event(5, 9, t0, 1621, {{"a", "30617:" + nostr::to_hex(owner_key(1)) + ":repo"}});
  EXPECT_FALSE(policy.evaluate(*issue).accepted());
}

TEST(PurgatoryRecordsTest, HeldEventsAndExpiredIdsSurviveAReopenAndAreNeverServed) {
  store::test::TempDir dir;
  auto held_announcement = announcement(1, 1, "repo");
  auto held_state = state(2, 1, "repo");
  auto expired_id = bytes_of(3, 0xee);
  {
    store::EventStore events(store::test::options_for(dir));
    events.put_held(held_announcement->id,
                    store::encode_held({held_announcement, HeldKind::announcement, t0 + 1800, {}}));
    events.put_held(held_state->id,
                    store::encode_held({held_state, HeldKind::state, t0 + 900, {}}));
    events.put_held(expired_id, store::encode_expired(t0 + 3600));
    events.put_held(bytes_of(4, 0xee), "x");  // unreadable: skipped, not fatal
    auto gone = bytes_of(5, 0xee);
    events.put_held(gone, store::encode_expired(t0));
    events.erase_held(gone);
  }
  auto events = std::make_shared<store::EventStore>(store::test::options_for(dir));
  Purgatory purgatory(limits());
  EXPECT_EQ(store::load_purgatory(*events, purgatory), 1u);
  ASSERT_TRUE(purgatory.contains(held_announcement->id));
  EXPECT_EQ(purgatory.find(held_announcement->id)->kind, HeldKind::announcement);
  EXPECT_EQ(purgatory.find(held_state->id)->kind, HeldKind::state);
  EXPECT_EQ(purgatory.find(held_state->id)->expires_at, t0 + 900);
  EXPECT_EQ(*purgatory.find(held_state->id)->event, *held_state);
  EXPECT_TRUE(purgatory.expired_recently(expired_id));
  EXPECT_EQ(purgatory.remembered(), 1u);

  // Queries do not see held events; git hosting's view (store plus held) does.
  nostr::Filter by_d;
  by_d.tags['d'] = {"repo"};
  by_d.normalize();
  EXPECT_EQ(events->count({by_d}), 0u);
  EXPECT_FALSE(events->contains(held_announcement->id));
  store::StoreAndHeldView view(events);
  std::vector<nostr::EventId> seen;
  view.scan({by_d}, [&](const nostr::Event& ev) {
    seen.push_back(ev.id);
    return true;
  });
  EXPECT_EQ(seen.size(), 2u);
}

TEST(PurgatoryRecordsTest, AnEventMovingFromItsRecordToTheStoreMidScanIsStillSeen) {
  // The acceptance actor stores a released event, then erases its record, while git hosting scans
  // on another thread: whichever read comes second must find it.
  store::test::TempDir dir;
  auto events = std::make_shared<store::EventStore>(store::test::options_for(dir));
  auto stored_state = state(1, 1, "repo");
  auto released_state = state(2, 1, "repo");
  events->write_batch(std::vector<nostr::EventPtr>{stored_state});
  events->put_held(released_state->id,
                   store::encode_held({released_state, HeldKind::state, t0 + 900, {}}));
  nostr::Filter by_d;
  by_d.tags['d'] = {"repo"};
  by_d.normalize();
  std::set<nostr::EventId> seen;
  store::StoreAndHeldView(events).scan({by_d}, [&](const nostr::Event& ev) {
    if (seen.empty())  // the release, committed in full before the scan goes on
      std::thread([&] {
        events->write_batch(std::vector<nostr::EventPtr>{released_state});
        events->erase_held(released_state->id);
      }).join();
    seen.insert(ev.id);
    return true;
  });
  EXPECT_EQ(seen, (std::set<nostr::EventId>{stored_state->id, released_state->id}));
}

// ---------------------------------------------------------------- pull requests (§6.1, §7.3)

nostr::EventPtr pull_request(std::uint64_t id, std::uint64_t author, const std::string& commit,
                             std::vector<std::string> repositories = {"repo"}) {
  nostr::Tags tags{{"c", commit}};
  for (const auto& d : repositories)
    tags.push_back({"a", "30617:" + nostr::to_hex(owner_key(1)) + ":" + d});
  return unsigned_event(id, author, t0, 1618, std::move(tags));
}

const std::string commit_a(40, 'a');
const std::string commit_b(40, 'b');

TEST(PurgatoryTest, GitDataForARepositoryRestartsThePullRequestsThatTagIt) {
  Purgatory purgatory(limits());
  auto tagging = pull_request(1, 9, commit_a, {"other", "repo"});
  auto elsewhere = pull_request(2, 9, commit_b, {"other"});
  purgatory.hold(tagging, HeldKind::pull_request, t0);
  purgatory.hold(elsewhere, HeldKind::pull_request, t0);
  auto refreshed = purgatory.refresh("repo", t0 + 1000);
  ASSERT_EQ(refreshed.size(), 1u);
  EXPECT_EQ(refreshed[0].event, tagging);
  auto expired = purgatory.expire(t0 + 1800);
  ASSERT_EQ(expired.events.size(), 1u);
  EXPECT_EQ(expired.events[0].event, elsewhere);
  EXPECT_TRUE(purgatory.contains(tagging->id));
}

TEST(PullRequestTest, CommitAndRepositoriesAreReadFromTheTags) {
  auto pr = pull_request(1, 9, commit_a, {"repo", "other", "repo"});
  EXPECT_EQ(pr_commit(*pr), commit_a);
  auto repositories = pr_repositories(*pr);
  ASSERT_EQ(repositories.size(), 2u) << "repeats are dropped";
  EXPECT_EQ(repositories[0], (RepositoryRef{owner_key(1), "repo"}));
  EXPECT_FALSE(pr_commit(*pull_request(2, 9, "abc")));
  EXPECT_FALSE(pr_commit(*pull_request(3, 9, std::string(40, 'A')))) << "lowercase hex only";
  EXPECT_EQ(pr_held_message(commit_a),
            "purgatory: PR event stored, waiting for git push with commit " + commit_a);
}

TEST(PullRequestTest, HeldPullRequestsHaveNoAddressAndLeaveByIdOrRepository) {
  Purgatory purgatory(limits());
  // Same author, same (empty) d: both are held, neither replaces the other.
  auto first = pull_request(1, 9, commit_a);
  auto second = pull_request(2, 9, commit_b, {"other"});
  EXPECT_EQ(purgatory.hold(first, HeldKind::pull_request, t0).outcome, Purgatory::Hold::held);
  EXPECT_EQ(purgatory.hold(second, HeldKind::pull_request, t0).outcome, Purgatory::Hold::held);
  EXPECT_EQ(purgatory.counts()[static_cast<std::size_t>(HeldKind::pull_request)], 2u);
  EXPECT_EQ(purgatory.pull_requests_of({owner_key(1), "repo"}),
            std::vector<nostr::EventPtr>{first});
  EXPECT_TRUE(purgatory.pull_requests_of({owner_key(2), "repo"}).empty()) << "another owner";
  // A state's release never takes a pull request with it.
  EXPECT_TRUE(purgatory.release(owner_key(1), "repo", first->id).empty());
  EXPECT_EQ(purgatory.release_pull_request(first->id), first);
  EXPECT_FALSE(purgatory.release_pull_request(first->id));
  EXPECT_EQ(purgatory.stats().released, 1u);
  auto expired = purgatory.expire(t0 + 1800);
  ASSERT_EQ(expired.events.size(), 1u);
  EXPECT_EQ(expired.events[0].event, second);
  EXPECT_TRUE(purgatory.expired_recently(second->id));
}

TEST(PullRequestTest, PlaceholdersKeepTheirFirstExpiryAndEndOnTheInjectedClock) {
  PrPlaceholders placeholders(600, 3);
  auto id = bytes_of(7, 0xee);
  RepositoryRef repo{owner_key(1), "repo"};
  RepositoryRef sibling{owner_key(2), "repo"};
  EXPECT_EQ(placeholders.put(id, repo, commit_a, t0), PrPlaceholders::Put::added);
  EXPECT_EQ(placeholders.put(id, repo, commit_b, t0 + 500), PrPlaceholders::Put::moved);
  EXPECT_EQ(placeholders.put(id, sibling, commit_a, t0 + 100), PrPlaceholders::Put::added);
  ASSERT_EQ(placeholders.of(id).size(), 2u);
  EXPECT_EQ(placeholders.of(id)[0], (Placeholder{id, repo, commit_b, t0 + 600}));
  EXPECT_EQ(placeholders.put(bytes_of(8, 0xee), repo, commit_a, t0), PrPlaceholders::Put::added);
  EXPECT_EQ(placeholders.put(bytes_of(9, 0xee), repo, commit_a, t0), PrPlaceholders::Put::full);
  EXPECT_TRUE(placeholders.of(bytes_of(9, 0xee)).empty());

  EXPECT_TRUE(placeholders.due(t0 + 599, 10).empty());
  auto ended = placeholders.due(t0 + 600, 10);
  ASSERT_EQ(ended.size(), 2u);  // the first repository's and the other id's
  EXPECT_EQ(placeholders.in_flight(), 2u);
  EXPECT_TRUE(placeholders.due(t0 + 600, 10).empty()) << "under way: not handed out twice";
  for (const auto& p : ended) EXPECT_TRUE(placeholders.done(p, true));
  EXPECT_EQ(placeholders.size(), 1u);
  EXPECT_EQ(placeholders.in_flight(), 0u);
  EXPECT_EQ(placeholders.take(id), (std::vector<Placeholder>{{id, sibling, commit_a, t0 + 700}}));
  EXPECT_EQ(placeholders.size(), 0u);
  EXPECT_TRUE(placeholders.take(id).empty());
}

TEST(PullRequestTest, ExpiredPlaceholdersStayUntilGitSaysTheirRefIsGone) {
  PrPlaceholders placeholders(600, 5000);
  RepositoryRef repo{owner_key(1), "repo"};
  for (std::uint64_t i = 0; i < 3000; ++i)
    placeholders.put(bytes_of(i, 0xee), repo, commit_a, t0 + static_cast<std::int64_t>(i % 7));
  // Handed out in bounded batches, soonest first; the rest wait, none is lost.
  auto first = placeholders.due(t0 + 700, 1024);
  ASSERT_EQ(first.size(), 1024u);
  EXPECT_EQ(first.front().expires_at, t0 + 600);
  EXPECT_EQ(placeholders.due(t0 + 700, 4096).size(), 3000u - 1024u);
  EXPECT_EQ(placeholders.in_flight(), 3000u);
  EXPECT_EQ(placeholders.size(), 3000u) << "each stays (and its record) until done";

  // Git failed for one: due again. A ref git found at another commit: due again with it.
  EXPECT_FALSE(placeholders.done(first[0], false));
  EXPECT_FALSE(placeholders.done(first[1], false, commit_b));
  auto again = placeholders.due(t0 + 700, 10);
  ASSERT_EQ(again.size(), 2u);
  EXPECT_EQ(again[1].commit, commit_b);
  // A push moved the ref while its deletion ran: the deletion's "gone" does not end it.
  placeholders.put(again[0].id, repo, commit_b, t0 + 700);
  EXPECT_FALSE(placeholders.done(again[0], true));
  auto moved = placeholders.due(t0 + 700, 10);
  ASSERT_EQ(moved.size(), 1u);
  EXPECT_EQ(moved[0].commit, commit_b);
  EXPECT_TRUE(placeholders.done(moved[0], true));
  EXPECT_TRUE(placeholders.done(again[1], true));
  EXPECT_FALSE(placeholders.done(again[1], true)) << "ended once";
  EXPECT_EQ(placeholders.size(), 2998u);
}

TEST(PullRequestTest, DoomedRefsAreDueAtOnceEvenPastTheBound) {
  PrPlaceholders placeholders(600, 1);
  RepositoryRef repo{owner_key(1), "repo"};
  EXPECT_EQ(placeholders.put(bytes_of(1, 0xee), repo, commit_a, t0), PrPlaceholders::Put::added);
  EXPECT_EQ(placeholders.put(bytes_of(2, 0xee), repo, commit_a, t0), PrPlaceholders::Put::full);
  placeholders.doom(bytes_of(2, 0xee), repo, commit_a);
  placeholders.doom(bytes_of(1, 0xee), repo, commit_b);  // a kept one, doomed later
  EXPECT_EQ(placeholders.size(), 2u);
  auto due = placeholders.due(t0, 10);
  ASSERT_EQ(due.size(), 2u) << "both due now, not at the end of the hold";
  EXPECT_TRUE(placeholders.take(bytes_of(1, 0xee)).empty()) << "being deleted: not taken back";
}

TEST(PullRequestTest, RepositoriesPastTheCapAreNotConsidered) {
  std::vector<std::string> many;
  for (int i = 0; i < 40; ++i) many.push_back("repo" + std::to_string(i));
  auto pr = pull_request(1, 9, commit_a, many);
  EXPECT_EQ(pr_repositories(*pr).size(), default_max_pr_repositories);
  auto three = pr_repositories(*pr, 3);
  ASSERT_EQ(three.size(), 3u);
  EXPECT_EQ(three[2].identifier, "repo2") << "the first ones, in tag order";

  // Purgatory indexes a held one under those only.
  auto limits_with_cap = limits();
  limits_with_cap.max_pr_repositories = 3;
  Purgatory purgatory(limits_with_cap);
  EXPECT_EQ(purgatory.hold(pr, HeldKind::pull_request, t0).outcome, Purgatory::Hold::held);
  EXPECT_EQ(purgatory.pull_requests_of({owner_key(1), "repo2"}), std::vector<nostr::EventPtr>{pr});
  EXPECT_TRUE(purgatory.pull_requests_of({owner_key(1), "repo3"}).empty());
  EXPECT_EQ(purgatory.refresh("repo1", t0 + 10).size(), 1u);
  EXPECT_TRUE(purgatory.refresh("repo30", t0 + 10).empty());
  purgatory.release_pull_request(pr->id);
  EXPECT_TRUE(purgatory.pull_requests_of({owner_key(1), "repo2"}).empty()) << "unindexed";
}

TEST(PullRequestTest, AGitArrivalLooksOnlyAtItsRepositorysPullRequests) {
  Purgatory purgatory(limits());
  std::vector<nostr::EventPtr> on_repo;
  for (std::uint64_t i = 0; i < 80; ++i) {
    auto pr = pull_request(10 + i, 9, commit_a, {i % 2 ? "repo" : "other"});
    ASSERT_EQ(purgatory.hold(pr, HeldKind::pull_request, t0).outcome, Purgatory::Hold::held);
    if (i % 2) on_repo.push_back(pr);
  }
  auto found = purgatory.pull_requests_of({owner_key(1), "repo"});
  EXPECT_EQ(found.size(), 40u);
  for (const auto& pr : on_repo) EXPECT_NE(std::find(found.begin(), found.end(), pr), found.end());
  purgatory.expire(t0 + 1800);
  EXPECT_TRUE(purgatory.pull_requests_of({owner_key(1), "repo"}).empty()) << "unindexed at expiry";
}

TEST(PurgatoryRecordsTest, HeldPullRequestsAndPlaceholdersSurviveAReopen) {
  store::test::TempDir dir;
  auto pr = pull_request(1, 9, commit_a);
  auto placeholder_id = bytes_of(7, 0xee);
  std::vector<Placeholder> list{{placeholder_id, {owner_key(1), "repo"}, commit_b, t0 + 60},
                                {placeholder_id, {owner_key(2), "a repo"}, commit_a, t0 + 30}};
  {
    store::EventStore events(store::test::options_for(dir));
    events.put_held(pr->id, store::encode_held({pr, HeldKind::pull_request, t0 + 1800, {}}));
    events.put_held(placeholder_id, store::encode_placeholders(list));
  }
  auto events = std::make_shared<store::EventStore>(store::test::options_for(dir));
  Purgatory purgatory(limits());
  PrPlaceholders placeholders;
  EXPECT_EQ(store::load_purgatory(*events, purgatory, &placeholders), 0u);
  ASSERT_TRUE(purgatory.contains(pr->id));
  EXPECT_EQ(purgatory.find(pr->id)->kind, HeldKind::pull_request);
  EXPECT_EQ(*purgatory.find(pr->id)->event, *pr);
  EXPECT_EQ(placeholders.of(placeholder_id), list);

  // Git hosting's view sees the held PR event (push authorisation, §7.2), never a placeholder.
  std::vector<nostr::EventId> seen;
  store::StoreAndHeldView(events).scan({nostr::Filter{}}, [&](const nostr::Event& ev) {
    seen.push_back(ev.id);
    return true;
  });
  EXPECT_EQ(seen, std::vector<nostr::EventId>{pr->id});
}

namespace shares {

PurgatoryLimits shared_limits() {
  auto out = limits();
  out.max_held = 100;
  out.max_repositories = 20;
  out.author_share = 0.05;   // 5 events, 1 repository
  out.address_share = 0.25;  // 25 events, 5 repositories
  out.sync_share = 0.5;
  return out;
}

TEST(PurgatorySharesTest, OneAuthorHoldsOnlyItsShareWhileOthersAreStillHeld) {
  Purgatory purgatory(shared_limits());
  const std::string client = "ip:127.0.0.2";
  EXPECT_EQ(purgatory.hold(announcement(1, 1, "r1"), HeldKind::announcement, t0, client).outcome,
            Purgatory::Hold::held);
  // A second repository is past the author's share of repositories (5% of 20 = 1).
  EXPECT_EQ(purgatory.hold(announcement(2, 1, "r2"), HeldKind::announcement, t0, client).outcome,
            Purgatory::Hold::author_share);
  for (std::uint64_t i = 0; i < 4; ++i)
    EXPECT_EQ(purgatory.hold(state(10 + i, 1, "s" + std::to_string(i)), HeldKind::state, t0, client)
                  .outcome,
              Purgatory::Hold::held);
  EXPECT_EQ(purgatory.hold(state(20, 1, "s9"), HeldKind::state, t0, client).outcome,
            Purgatory::Hold::author_share);
  // A replacement of the author's own address is counted net: it still fits.
  EXPECT_EQ(
      purgatory.hold(announcement(3, 1, "r1", t0 + 5), HeldKind::announcement, t0, client).outcome,
      Purgatory::Hold::held);
  EXPECT_EQ(purgatory.usage_of(owner_key(1)).events, 5u);
  // Another author from another address is held.
  EXPECT_EQ(
      purgatory.hold(announcement(4, 2, "r1"), HeldKind::announcement, t0, "ip:127.0.0.1").outcome,
      Purgatory::Hold::held);
}

TEST(PurgatorySharesTest, OneAddressHoldsOnlyItsShareOverManyKeys) {
  Purgatory purgatory(shared_limits());
  for (std::uint64_t key = 1; key <= 5; ++key)
    ASSERT_EQ(purgatory.hold(announcement(key, key, "r"), HeldKind::announcement, t0, "ip:10.0.0.9")
                  .outcome,
              Purgatory::Hold::held);
  EXPECT_EQ(
      purgatory.hold(announcement(6, 6, "r"), HeldKind::announcement, t0, "ip:10.0.0.9").outcome,
      Purgatory::Hold::address_share);
  EXPECT_EQ(purgatory.usage_of_source("ip:10.0.0.9").repositories, 5u);
  EXPECT_EQ(
      purgatory.hold(announcement(7, 7, "r"), HeldKind::announcement, t0, "ip:10.0.0.1").outcome,
      Purgatory::Hold::held);
  // IPv6 counts by its /64: two addresses of one host share it.
  EXPECT_EQ(Purgatory::share_key("ip:2001:db8:0:1::5"),
            Purgatory::share_key("ip:2001:db8:0:1:aa::7"));
  EXPECT_EQ(Purgatory::share_key("ip:2001:db8:0:1::5"), "ip:2001:0db8:0000:0001::/64");
  EXPECT_NE(Purgatory::share_key("ip:2001:db8:0:1::5"), Purgatory::share_key("ip:2001:db8:0:2::5"));
  EXPECT_EQ(Purgatory::share_key("ip:10.0.0.9"), "ip:10.0.0.9");
  EXPECT_EQ(Purgatory::share_key(""), "");
}

TEST(PurgatorySharesTest, SyncPeersShareOnePartAndEachIsHeldToTheAddressShare) {
  auto l = shared_limits();
  l.address_share = 0.1;  // 2 repositories
  l.sync_share = 0.15;    // 3 repositories
  Purgatory purgatory(l);
  std::uint64_t next = 1;
  auto hold_from = [&](const std::string& source) {
    auto n = next++;
    return purgatory.hold(announcement(n, n, "r"), HeldKind::announcement, t0, source).outcome;
  };
  EXPECT_EQ(hold_from("relay:wss://a"), Purgatory::Hold::held);
  EXPECT_EQ(hold_from("relay:wss://a"), Purgatory::Hold::held);
  EXPECT_EQ(hold_from("relay:wss://a"), Purgatory::Hold::address_share);
  EXPECT_EQ(hold_from("relay:wss://b"), Purgatory::Hold::held);
  EXPECT_EQ(hold_from("relay:wss://b"), Purgatory::Hold::sync_share);
  EXPECT_EQ(hold_from("ip:10.0.0.1"), Purgatory::Hold::held) << "clients still find room";
}

TEST(PurgatorySharesTest, TheByteBudgetBoundsHeldEventsAndFreesOnRemoval) {
  auto l = limits();
  l.max_bytes = 4096;
  Purgatory purgatory(l);
  auto big = [](std::uint64_t id) {
    return announcement(id, id, "r", t0, {{"description", std::string(1500, 'x')}});
  };
  EXPECT_EQ(purgatory.hold(big(1), HeldKind::announcement, t0).outcome, Purgatory::Hold::held);
  EXPECT_EQ(purgatory.hold(big(2), HeldKind::announcement, t0).outcome, Purgatory::Hold::held);
  EXPECT_EQ(purgatory.hold(big(3), HeldKind::announcement, t0).outcome, Purgatory::Hold::full);
  EXPECT_LE(purgatory.usage().bytes, 4096u);
  purgatory.expire(t0 + 1800);
  EXPECT_EQ(purgatory.usage().bytes, 0u);
  EXPECT_EQ(purgatory.usage().repositories, 0u);
  EXPECT_EQ(purgatory.hold(big(3), HeldKind::announcement, t0 + 1800).outcome,
            Purgatory::Hold::held);
}

TEST(PurgatorySharesTest, RememberedIdsAreBoundedForgettingTheSoonestFirst) {
  auto l = limits();
  l.max_remembered = 1000;
  Purgatory purgatory(l);
  for (std::uint64_t i = 0; i < 5000; ++i)
    purgatory.restore_expired(bytes_of(i + 1, 0xee), t0 + static_cast<std::int64_t>(i));
  EXPECT_EQ(purgatory.remembered(), 1000u);
  EXPECT_FALSE(purgatory.expired_recently(bytes_of(1, 0xee)));
  EXPECT_TRUE(purgatory.expired_recently(bytes_of(5000, 0xee)));
  auto expired = purgatory.expire(t0 + 4499);
  EXPECT_EQ(expired.forgotten.size(), 500u);
  EXPECT_EQ(purgatory.remembered(), 500u);
  purgatory.forget_expired(bytes_of(5000, 0xee));
  EXPECT_FALSE(purgatory.expired_recently(bytes_of(5000, 0xee)));
}

TEST(PurgatorySharesTest, ASourceIsKeptInTheRecord) {
  auto ev = announcement(1, 1, "r");
  store::test::TempDir dir;
  {
    store::EventStore events(store::test::options_for(dir));
    events.put_held(ev->id,
                    store::encode_held({ev, HeldKind::announcement, t0 + 1800, "ip:10.0.0.9"}));
  }
  auto events = std::make_shared<store::EventStore>(store::test::options_for(dir));
  Purgatory purgatory(limits());
  EXPECT_EQ(store::load_purgatory(*events, purgatory), 0u);
  ASSERT_TRUE(purgatory.contains(ev->id));
  EXPECT_EQ(purgatory.find(ev->id)->source, "ip:10.0.0.9");
  EXPECT_EQ(*purgatory.find(ev->id)->event, *ev);
  EXPECT_EQ(purgatory.usage_of_source("ip:10.0.0.9").events, 1u);
}

TEST(PurgatorySharesTest, AStateOlderThanTheStoredVersionIsSuperseded) {
  graspd::test::VectorStore stored;
  stored.events.push_back(*state(1, 1, "repo", t0 + 100));
  EXPECT_TRUE(superseded_in(stored, *state(2, 1, "repo", t0)));
  EXPECT_TRUE(superseded_in(stored, *state(1, 1, "repo", t0 + 100)));
  EXPECT_FALSE(superseded_in(stored, *state(3, 1, "repo", t0 + 200)));
  EXPECT_FALSE(superseded_in(stored, *state(4, 1, "other", t0)));
  EXPECT_FALSE(superseded_in(stored, *state(5, 2, "repo", t0))) << "another author's address";
}

}  // namespace shares

TEST(PurgatoryTest, ARequestToVanishEndsEveryHoldOfItsAuthorUpToIt) {
  Purgatory purgatory(limits());
  auto old_repo = announcement(1, 1, "repo", t0);
  auto old_state = state(2, 1, "repo", t0 + 10);
  auto newer = announcement(3, 1, "other", t0 + 100);
  auto foreign = announcement(4, 2, "repo", t0);
  for (const auto& ev : {old_repo, newer, foreign})
    ASSERT_EQ(purgatory.hold(ev, HeldKind::announcement, t0).outcome, Purgatory::Hold::held);
  ASSERT_EQ(purgatory.hold(old_state, HeldKind::state, t0).outcome, Purgatory::Hold::held);
  auto request = unsigned_event(9, 1, t0 + 50, 62, {{"relay", "ALL_RELAYS"}});
  auto withdrawn = purgatory.withdraw(*request);
  std::set<nostr::EventId> ids;
  for (const auto& entry : withdrawn) ids.insert(entry.event->id);
  EXPECT_EQ(ids, (std::set<nostr::EventId>{old_repo->id, old_state->id}));
  EXPECT_FALSE(purgatory.contains(old_repo->id));
  EXPECT_TRUE(purgatory.contains(newer->id));
  EXPECT_TRUE(purgatory.contains(foreign->id));
}

}  // namespace
}  // namespace graspd::policy
