// Deterministic tests of the acceptance actor under CAF's test_coordinator, with a store writer
// that holds its commits until the test releases them: pipelined dependants are judged on events
// accepted but not yet committed, writes leave in decision order, a dependency that is not stored
// after all sends its dependants back to the policy, and the retry cache parks, releases and
// expires on the test's clock.
#include "actors/policy/acceptance.hpp"

#include <gtest/gtest.h>

#include <deque>

#include <caf/all.hpp>
#include <map>
#include <set>

#include "messages/nostr/json.hpp"
#include "runtime/ops/log.hpp"
#include "store/lmdb/store_view.hpp"
#include "tests/store/store_test_util.hpp"
#include "tests/support/actor_fixture.hpp"
#include "tests/support/recording_git_host.hpp"

namespace graspd {
namespace {

using store::test::bytes_of;
using store::test::unsigned_event;

/// What the test tells the gated writer.
struct WriterGate {
  /// Writes received and not yet committed, in arrival order.
  std::vector<StoreWrite> held;
  /// Ids the writer does not store, answered with the given outcome instead.
  std::map<nostr::EventId, WriteOutcome> refuse;
  /// Ids the writer does not store and answers with an error (a failed request).
  std::set<nostr::EventId> fail;
};

struct GatedWriterState {
  std::vector<caf::typed_response_promise<WriteOutcome>> promises;
  std::vector<store_feed_actor> subscribers;
};

/// A store_writer_actor that commits only on atom::store_flush, through the real store (so
/// StoreWrite::depends_on is checked by the real write path), then answers and publishes like
/// the real writer.
store_writer_actor::behavior_type gated_writer(
    store_writer_actor::stateful_pointer<GatedWriterState> self,
    std::shared_ptr<store::EventStore> store, std::shared_ptr<WriterGate> gate) {
  return {
      [=](StoreWrite& write) -> caf::result<WriteOutcome> {
        gate->held.push_back(std::move(write));
        self->state.promises.push_back(self->make_response_promise<WriteOutcome>());
        return self->state.promises.back();
      },
      [=](StoreHeld& held) {
        // Held records are not gated: they commit at once (the tests gate event writes only).
        auto batch =
            store->commit_batch({}, {}, std::span<const HeldRecordChanges>(&held.changes, 1));
        return static_cast<bool>(batch.held[0]);
      },
      [=](const StoreModeration& changes) {
        store->apply_moderation(changes);
        return true;
      },
      [=](atom::feed_subscribe, const store_feed_actor& subscriber) {
        self->state.subscribers.push_back(subscriber);
      },
      [=](atom::store_flush) {
        std::vector<nostr::EventPtr> events;
        std::vector<std::vector<nostr::EventId>> depends_on;
        for (const auto& write : gate->held)
          if (!gate->refuse.count(write.event->id) && !gate->fail.count(write.event->id)) {
            events.push_back(write.event);
            depends_on.push_back(write.depends_on);
          }
        auto reports = store->write_batch_with_json(events, depends_on);
        std::size_t next = 0;
        std::vector<StoreCommitted> committed;
        for (std::size_t i = 0; i < gate->held.size(); ++i) {
          const auto& ev = gate->held[i].event;
          if (gate->fail.count(ev->id)) {
            self->state.promises[i].deliver(caf::make_error(caf::sec::runtime_error));
            continue;
          }
          auto refused = gate->refuse.find(ev->id);
          if (refused != gate->refuse.end()) {
            self->state.promises[i].deliver(refused->second);
            continue;
          }
          const auto& report = reports[next++];
          self->state.promises[i].deliver(report.outcome);
          if (report.json) committed.push_back({ev, report.json, report.outcome, report.seq});
        }
        if (!committed.empty()) {
          const auto msg = StoreCommits::of(std::move(committed));
          for (const auto& sub : self->state.subscribers) self->send(sub, msg);
        }
        gate->held.clear();
        self->state.promises.clear();
      },
      [](atom::store_sweep) {},
      [](atom::store_tail) {},
  };
}

/// Captures graspd's log lines while it lives.
struct CapturedLog {
  CapturedLog() {
    log::set_sink([this](std::string_view line) { lines.emplace_back(line); });
  }
  ~CapturedLog() { log::reset_sink(); }
  std::vector<std::string> lines;
};

constexpr std::int64_t t0 = 1'700'000'000;
const char* const service = "relay.example.com";

class AcceptanceTest : public test::ActorTest {
 protected:
  AcceptanceTest()
      : store_(std::make_shared<store::EventStore>(store::test::options_for(dir_))),
        gate_(std::make_shared<WriterGate>()),
        client_(system()) {
    writer_ = spawn(gated_writer, store_, gate_);
    AcceptanceConfig config;
    config.policy.service = *parse_host_port(service);
    config.retry.ttl_seconds = 600;
    config.retry.max_events = 2000;
    config.expiry_interval = std::chrono::seconds(30);
    config.unix_now = [this] { return unix_now_; };
    acceptance_ = spawn(acceptance, config, std::shared_ptr<const store::EventStore>(store_),
                        writer_, nullptr);
    run();
    caf::anon_send(writer_, atom::feed_subscribe::value,
                   caf::actor_cast<store_feed_actor>(acceptance_));
    run();
  }

  AcceptanceState& acceptance_state() {
    return state<AcceptanceState, acceptance_actor::base>(acceptance_);
  }

  nostr::EventPtr event(std::uint64_t author, std::uint32_t kind, nostr::Tags tags) {
    ++next_id_;
    return unsigned_event(next_id_, author, t0 + static_cast<std::int64_t>(next_id_), kind,
                          std::move(tags));
  }
  static std::string hex_key(std::uint64_t author) { return nostr::to_hex(bytes_of(author, 0xaa)); }
  static std::string hex(const nostr::EventPtr& ev) { return nostr::to_hex(ev->id); }
  static std::string repo_address(std::uint64_t owner, const std::string& d) {
    return "30617:" + hex_key(owner) + ":" + d;
  }
  nostr::EventPtr announcement(std::uint64_t owner, const std::string& d, nostr::Tags extra = {}) {
    nostr::Tags tags{{"d", d},
                     {"clone", std::string("https://") + service + "/" + d + ".git"},
                     {"relays", std::string("wss://") + service}};
    for (auto& tag : extra) tags.push_back(std::move(tag));
    return event(owner, 30617, std::move(tags));
  }

  /// An announcement of `d` by key 1, an issue on it and a comment on the issue.
  struct Thread {
    nostr::EventPtr repo, issue, comment;
  };
  Thread thread(const std::string& d) {
    auto repo = announcement(1, d);
    auto issue = event(3, 1621, {{"a", repo_address(1, d)}});
    auto comment = event(4, 1111, {{"e", hex(issue)}});
    return {repo, issue, comment};
  }

  /// Sends every event to the acceptance actor, one query each, in order, and runs to idle.
  void submit(const std::vector<nostr::EventPtr>& events, const std::string& source = "ip:a") {
    for (const auto& ev : events) client_->send(acceptance_, AcceptanceQuery{ev, source});
    run();
  }
  /// The gated writer commits what it holds; the replies and the change feed run.
  void commit() {
    caf::anon_send(writer_, atom::store_flush::value);
    run();
  }
  /// The verdicts that reached the client so far, in arrival order.
  std::vector<AcceptanceVerdict> verdicts() {
    std::vector<AcceptanceVerdict> out;
    bool more = true;
    while (more)
      client_->receive([&](AcceptanceVerdict& v) { out.push_back(std::move(v)); },
                       caf::after(std::chrono::seconds(0)) >> [&] { more = false; });
    return out;
  }

  store::test::TempDir dir_;
  std::shared_ptr<store::EventStore> store_;
  std::shared_ptr<WriterGate> gate_;
  caf::scoped_actor client_;
  store_writer_actor writer_;
  acceptance_actor acceptance_;
  std::uint64_t next_id_ = 0;
  std::int64_t unix_now_ = t0;
};

TEST_F(AcceptanceTest, APipelinedChainIsAcceptedInOrderBeforeAnyCommit) {
  const std::uint64_t owner = 1, maintainer = 2, author = 3, commenter = 4, replier = 5;
  auto repo = announcement(owner, "demo", {{"maintainers", hex_key(maintainer)}});
  auto maintainers_repo = event(maintainer, 30617, {{"d", "demo"}});
  auto state = event(maintainer, 30618, {{"d", "demo"}, {"refs/heads/main", std::string(40, 'a')}});
  auto issue = event(author, 1621, {{"a", repo_address(owner, "demo")}});
  auto comment = event(commenter, 1111, {{"E", hex(issue)}, {"e", hex(issue)}});
  auto reply = event(replier, 1111, {{"e", hex(comment)}});
  auto status = event(owner, 1632, {{"e", hex(issue)}});
  auto reaction = event(6, 7, {{"e", hex(comment)}});
  auto profile = event(commenter, 0, {});
  auto deletion = event(replier, 5, {{"e", hex(reply)}});
  std::vector<nostr::EventPtr> chain{repo,  maintainers_repo, state,    issue,   comment,
                                     reply, status,           reaction, profile, deletion};
  submit(chain);

  EXPECT_TRUE(verdicts().empty()) << "an accepted event is answered only after its commit";
  ASSERT_EQ(gate_->held.size(), chain.size()) << "every event accepted, none parked";
  for (std::size_t i = 0; i < chain.size(); ++i) {
    EXPECT_EQ(gate_->held[i].event, chain[i]) << "writes leave in decision order, at " << i;
    EXPECT_EQ(gate_->held[i].depends_on.empty(), i == 0) << "only the first stands on the store";
  }
  EXPECT_EQ(acceptance_state().counts.accepted_on_pending, chain.size() - 1);
  EXPECT_EQ(acceptance_state().retry->stats().parked, 0u);

  commit();
  auto answers = verdicts();
  ASSERT_EQ(answers.size(), chain.size());
  for (const auto& verdict : answers) {
    EXPECT_TRUE(verdict.accepted) << verdict.message;
    EXPECT_EQ(verdict.outcome, WriteOutcome::stored);
  }
  for (const auto& ev : chain)
    EXPECT_EQ(store_->contains(ev->id), ev != reply) << "the deletion removed only the reply";
  EXPECT_EQ(acceptance_state().policy->pending_count(), 0u) << "the change feed settled them";
}

TEST_F(AcceptanceTest, ADependencyReportedDuplicateLeavesItsDependantsStored) {
  auto [repo, issue, comment] = thread("dup");
  submit({repo, issue, comment});
  // The announcement reaches the store by another path first (an import, another relay's copy).
  ASSERT_EQ(store_->write_batch(std::vector<nostr::EventPtr>{repo}).front(), WriteOutcome::stored);
  commit();

  auto answers = verdicts();
  ASSERT_EQ(answers.size(), 3u);
  EXPECT_EQ(answers[0].outcome, WriteOutcome::duplicate);
  EXPECT_EQ(answers[1].outcome, WriteOutcome::stored);
  EXPECT_EQ(answers[2].outcome, WriteOutcome::stored);
  EXPECT_TRUE(store_->contains(issue->id));
  EXPECT_TRUE(store_->contains(comment->id));
  EXPECT_EQ(acceptance_state().counts.rejudged, 0u);
}

TEST_F(AcceptanceTest, DependantsOfAnEventNotStoredAreJudgedAgainAndHeld) {
  auto [repo, issue, comment] = thread("gone");
  submit({repo, issue, comment});
  gate_->refuse[repo->id] = WriteOutcome::deleted;
  commit();

  auto answers = verdicts();
  ASSERT_EQ(answers.size(), 3u);
  EXPECT_TRUE(answers[0].accepted);
  EXPECT_EQ(answers[0].outcome, WriteOutcome::deleted) << "the store's own answer";
  for (const auto& dependant : {answers[1], answers[2]}) {
    EXPECT_FALSE(dependant.accepted);
    EXPECT_EQ(dependant.message.rfind("blocked:", 0), 0u) << dependant.message;
    EXPECT_NE(dependant.message.find("held for"), std::string::npos) << dependant.message;
  }
  EXPECT_FALSE(store_->contains(issue->id)) << "never stored on a dependency that is not";
  EXPECT_FALSE(store_->contains(comment->id));
  EXPECT_EQ(acceptance_state().counts.rejudged, 2u);
  EXPECT_EQ(acceptance_state().policy->pending_count(), 0u);

  // The owner publishes the repository again: the held issue, then its comment, follow.
  submit({announcement(1, "gone")});
  commit();
  commit();
  commit();
  EXPECT_TRUE(store_->contains(issue->id));
  EXPECT_TRUE(store_->contains(comment->id));
  EXPECT_EQ(acceptance_state().counts.accepted_after_retry, 2u);
}

TEST_F(AcceptanceTest, ParkedEventsAreReleasedByACommitOrExpireOnTheClock) {
  auto repo = announcement(1, "late");
  auto issue = event(3, 1621, {{"a", repo_address(1, "late")}});
  auto orphan = event(9, 1111, {{"e", std::string(64, 'f')}});
  submit({issue, orphan});
  auto answers = verdicts();
  ASSERT_EQ(answers.size(), 2u);
  EXPECT_FALSE(answers[0].accepted);
  EXPECT_EQ(acceptance_state().retry->size(), 2u);

  submit({repo});
  commit();  // the announcement: releases the issue, which is written next
  commit();  // the issue
  EXPECT_TRUE(store_->contains(issue->id));
  EXPECT_EQ(acceptance_state().retry->size(), 1u);

  unix_now_ += 599;
  advance_time(std::chrono::seconds(30));
  EXPECT_EQ(acceptance_state().retry->size(), 1u) << "kept until its time-to-live";
  unix_now_ += 2;
  advance_time(std::chrono::seconds(30));
  EXPECT_EQ(acceptance_state().retry->size(), 0u);
  EXPECT_EQ(acceptance_state().retry->stats().expired, 1u);
  EXPECT_FALSE(store_->contains(orphan->id));
}

TEST_F(AcceptanceTest, AFloodOfOrphansFromOneSourceLeavesAnotherSourcesParkedEventsAlone) {
  auto repo = announcement(1, "kept");
  auto issue = event(3, 1621, {{"a", repo_address(1, "kept")}});
  submit({issue}, "ip:legit");
  std::vector<nostr::EventPtr> flood;
  for (int i = 0; i < 3000; ++i) flood.push_back(event(9, 1111, {{"e", std::string(64, 'f')}}));
  submit(flood, "ip:attacker");
  verdicts();
  EXPECT_EQ(acceptance_state().retry->size(), 2000u / 4 + 1) << "a quarter for the flood";
  submit({repo}, "ip:legit");
  commit();
  commit();
  EXPECT_TRUE(store_->contains(issue->id)) << "the legitimate parked issue was not evicted";
}

TEST_F(AcceptanceTest, AFailedStoreWriteIsAnsweredErrorAndLoggedAtMostOnceAMinute) {
  CapturedLog captured;
  const auto& lines = captured.lines;
  auto [repo, issue, comment] = thread("failing");
  gate_->fail = {repo->id, issue->id, comment->id};
  submit({repo});
  commit();
  auto answers = verdicts();
  ASSERT_EQ(answers.size(), 1u);
  EXPECT_TRUE(answers[0].accepted);
  EXPECT_EQ(answers[0].outcome, WriteOutcome::error) << "the client is told \"error:\"";
  EXPECT_FALSE(store_->contains(repo->id));
  EXPECT_EQ(acceptance_state().policy->pending_count(), 0u) << "the failed write is not pending";
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("WARN"), std::string::npos) << lines[0];
  EXPECT_NE(lines[0].find("[acceptance] store write failed: "), std::string::npos) << lines[0];

  // Within the minute the failure is counted, not logged; the next line tells how many there were.
  submit({announcement(1, "again")});
  ASSERT_EQ(gate_->held.size(), 1u);
  gate_->fail.insert(gate_->held.back().event->id);
  commit();
  EXPECT_EQ(lines.size(), 1u);
  advance_time(std::chrono::minutes(1));
  submit({announcement(1, "third")});
  ASSERT_EQ(gate_->held.size(), 1u);
  gate_->fail.insert(gate_->held.back().event->id);
  commit();
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_NE(lines[1].find("(and 1 more since the last report)"), std::string::npos) << lines[1];
  EXPECT_EQ(acceptance_state().write_failures.total(), 3u);
  EXPECT_EQ(verdicts().size(), 2u);
}

// ---------------------------------------------------------------- purgatory
// (docs/spec/git-hosting.md §6)

/// The acceptance actor with purgatory on, git hosting a recording stand-in whose repositories are
/// a set of identifiers.
class PurgatoryAcceptanceTest : public AcceptanceTest {
 protected:
  PurgatoryAcceptanceTest() { acceptance_ = start_purgatory(); }

  /// A second actor on the same store and writer, as after a restart.
  acceptance_actor start_purgatory() {
    AcceptanceConfig config;
    config.policy.service = *parse_host_port(service);
    config.expiry_interval = std::chrono::seconds(30);
    config.unix_now = [this] { return unix_now_; };
    config.purgatory_enabled = true;
    config.purgatory.hold_seconds = 1800;
    config.git = git_host_;
    config.state_answer_wait = state_answer_wait_;
    // A store of its own (a small one, to fill up) gets a writer of its own.
    auto store = purgatory_store_ ? purgatory_store_ : store_;
    if (purgatory_store_ && !purgatory_writer_)
      purgatory_writer_ = spawn(gated_writer, purgatory_store_, gate_);
    auto writer = purgatory_store_ ? purgatory_writer_ : writer_;
    auto handle =
        spawn(acceptance, config, std::shared_ptr<const store::EventStore>(store), writer, nullptr);
    run();
    caf::anon_send(writer, atom::feed_subscribe::value, caf::actor_cast<store_feed_actor>(handle));
    run();
    return handle;
  }

  nostr::EventPtr state(std::uint64_t author, const std::string& d) {
    return event(author, 30618, {{"d", d}, {"refs/heads/main", std::string(40, 'a')}});
  }
  void git_data(std::uint64_t owner, const std::string& d, std::vector<nostr::EventId> states) {
    caf::anon_send(acceptance_,
                   GitDataArrived{{bytes_of(owner, 0xaa), d}, std::move(states), {}, {}, {}});
    run();
  }
  std::size_t held_records() {
    std::size_t n = 0;
    store_->for_each_held([&](const nostr::EventId&, std::string_view) { return ++n, true; });
    return n;
  }
  policy::Purgatory& purgatory() { return *acceptance_state().purgatory; }

  /// The store (and its writer) of the acceptance actor when not the fixture's (set before
  /// start_purgatory).
  std::shared_ptr<store::EventStore> purgatory_store_;
  store_writer_actor purgatory_writer_;
  /// AcceptanceConfig::state_answer_wait of start_purgatory (0: held states answered at once).
  std::chrono::milliseconds state_answer_wait_{0};
  /// What git hosting was told and what exists there.
  test::GitHostRecord git_;
  git_host_actor git_host_ = spawn(test::recording_git_host, &git_);
  std::set<std::string>& repositories_ = git_.repositories;
  std::vector<nostr::EventId>& removed_ = git_.withdrawn;
  std::vector<nostr::EventId>& handed_ = git_.states;
  // What git hosting was asked about held pull requests.
  std::vector<std::pair<nostr::EventId, std::size_t>>& looked_for_ = git_.held_pull_requests;
  std::vector<std::vector<std::string>>& checked_ = git_.checks;
  /// The refs/nostr refs git hosting was told to create, or to delete (id, commit).
  std::vector<std::pair<nostr::EventId, std::string>> refs_set() {
    std::vector<std::pair<nostr::EventId, std::string>> out;
    for (const auto& change : git_.ref_changes) out.emplace_back(change.id, change.commit);
    return out;
  }
  std::vector<std::pair<nostr::EventId, std::string>> refs_deleted() {
    std::vector<std::pair<nostr::EventId, std::string>> out;
    for (const auto& ref : git_.ref_deletions) out.emplace_back(ref.id, ref.commit);
    return out;
  }
};

TEST_F(PurgatoryAcceptanceTest, HoldsANewAnnouncementAndItsStateUntilGitDataReleasesThem) {
  auto repo = announcement(1, "demo");
  submit({repo});
  auto answers = verdicts();
  ASSERT_EQ(answers.size(), 1u);
  EXPECT_TRUE(answers[0].accepted);
  EXPECT_EQ(answers[0].outcome, WriteOutcome::held);
  EXPECT_EQ(answers[0].message, "purgatory: won't be served until git data arrives");
  EXPECT_TRUE(gate_->held.empty()) << "a held event is not written";
  EXPECT_EQ(repositories_.count("demo"), 1u) << "its repository exists before the answer";
  submit({repo});
  EXPECT_EQ(verdicts().at(0).message, "duplicate: in purgatory");

  auto st = state(1, "demo");
  submit({st});
  EXPECT_EQ(verdicts().at(0).outcome, WriteOutcome::held);
  EXPECT_EQ(handed_, std::vector<nostr::EventId>{st->id}) << "git hosting checks its objects";
  EXPECT_EQ(held_records(), 2u);

  git_data(1, "demo", {});  // a push alone releases nothing
  EXPECT_TRUE(gate_->held.empty());
  git_data(1, "demo", {st->id});
  ASSERT_EQ(gate_->held.size(), 2u);
  EXPECT_EQ(gate_->held[0].event, repo) << "the announcement is stored first";
  EXPECT_EQ(gate_->held[1].event, st);
  commit();
  EXPECT_TRUE(store_->contains(repo->id));
  EXPECT_TRUE(store_->contains(st->id));
  EXPECT_EQ(purgatory().size(), 0u);
  EXPECT_EQ(held_records(), 0u);
  EXPECT_EQ(purgatory().stats().released, 2u);
}

/// A stand-in for the SyncManager's peer feed: keeps the promise of each held event it is sent,
/// and answers the oldest when told to (`tick` with the answer), from inside the actor.
using TestPeerFeed = peer_feed_actor::extend<caf::reacts_to<atom::tick, bool>>;
struct PeerFeedLog {
  std::vector<nostr::EventId> sent;
  std::deque<caf::typed_response_promise<bool>> replies;
};
TestPeerFeed::behavior_type waiting_peer_feed(TestPeerFeed::pointer self, PeerFeedLog* log) {
  return {[=](HeldForPeers& held) -> caf::result<bool> {
            for (const auto& ev : held.events) log->sent.push_back(ev->id);
            log->replies.push_back(self->make_response_promise<bool>());
            return log->replies.back();
          },
          [=](atom::tick, bool all_held) {
            if (log->replies.empty()) return;
            log->replies.front().deliver(all_held);
            log->replies.pop_front();
          }};
}

// Cluster peers: a held announcement or state is sent to them once recorded, and its client's
// OK waits until they hold it too (the peer feed's reply); the actor judges other events meanwhile.
TEST_F(PurgatoryAcceptanceTest, AHeldEventsOkWaitsForTheClusterPeersToHoldIt) {
  PeerFeedLog peers;
  auto feed = spawn(waiting_peer_feed, &peers);
  anon_send(acceptance_, atom::feed_subscribe::value, caf::actor_cast<peer_feed_actor>(feed));
  run();
  auto repo = announcement(1, "demo");
  submit({repo});
  ASSERT_EQ(peers.sent, std::vector<nostr::EventId>{repo->id});
  EXPECT_TRUE(verdicts().empty()) << "no OK before the peers hold it";
  EXPECT_EQ(repositories_.count("demo"), 1u) << "its repository is made meanwhile";
  // A refusal is not held up, nor is an event that is stored rather than held.
  auto stranger_state = state(2, "other");
  submit({stranger_state});
  auto refused = verdicts();
  ASSERT_EQ(refused.size(), 1u);
  EXPECT_FALSE(refused[0].accepted);
  anon_send(feed, atom::tick::value, true);
  run();
  auto answers = verdicts();
  ASSERT_EQ(answers.size(), 1u);
  EXPECT_EQ(answers[0].outcome, WriteOutcome::held);
  // The peers' answer only opens the gate: a failed or late one (false) does too.
  auto st = state(1, "demo");
  submit({st});
  ASSERT_EQ(peers.sent.size(), 2u);
  EXPECT_TRUE(verdicts().empty());
  anon_send(feed, atom::tick::value, false);
  run();
  EXPECT_EQ(verdicts().size(), 1u);
}

/// Records the held feed's changes: (identifier, change), in order.
using FeedLog = std::vector<std::pair<std::string, HeldRepositories::Change>>;
held_feed_actor::behavior_type recording_held_feed(held_feed_actor::pointer, FeedLog* log) {
  return {[=](HeldRepositories& message) {
    for (const auto& entry : message.entries)
      log->push_back({std::string(entry.announcement->d_tag()), entry.change});
  }};
}

// Sync must follow what is stored: a released announcement promotes its repository only once its
// write committed, and one whose write failed is forgotten, not synced in full while not stored.
TEST_F(PurgatoryAcceptanceTest, AHeldStatesAnswerSaysWhatItBecame) {
  state_answer_wait_ = std::chrono::seconds(2);
  acceptance_ = start_purgatory();
  submit({announcement(1, "demo")});
  ASSERT_EQ(verdicts().size(), 1u);

  // Its objects are here: released and answered as stored, once committed.
  auto present = state(1, "demo");
  submit({present});
  EXPECT_TRUE(verdicts().empty()) << "git hosting has not said yet";
  git_data(1, "demo", {present->id});
  commit();
  auto answered = verdicts();
  ASSERT_EQ(answered.size(), 1u);
  EXPECT_TRUE(answered[0].accepted);
  EXPECT_EQ(answered[0].message, "");
  EXPECT_EQ(answered[0].outcome, WriteOutcome::stored);
  EXPECT_TRUE(store_->contains(present->id));

  // Missing: git hosting says so before it fetches, and the submitter hears it is held.
  auto missing = state(1, "demo");
  submit({missing});
  EXPECT_TRUE(verdicts().empty());
  caf::anon_send(acceptance_,
                 GitDataArrived{{bytes_of(1, 0xaa), "demo"}, {}, {}, {}, {missing->id}});
  run();
  answered = verdicts();
  ASSERT_EQ(answered.size(), 1u);
  EXPECT_EQ(answered[0].outcome, WriteOutcome::held);
  EXPECT_EQ(answered[0].message, "purgatory: won't be served until git data arrives");
  EXPECT_TRUE(purgatory().contains(missing->id));

  // No word from git hosting: answered as held when the wait ends.
  auto silent = state(1, "demo");
  submit({silent});
  EXPECT_TRUE(verdicts().empty());
  advance_time(std::chrono::seconds(2));
  answered = verdicts();
  ASSERT_EQ(answered.size(), 1u);
  EXPECT_EQ(answered[0].outcome, WriteOutcome::held);
  EXPECT_TRUE(acceptance_state().state_answers.empty());
}

TEST_F(PurgatoryAcceptanceTest, AStateOlderThanTheStoredOneIsAnsweredByTheStore) {
  submit({announcement(1, "demo")});
  auto older = state(1, "demo");
  auto newer = state(1, "demo");
  submit({newer});
  git_data(1, "demo", {newer->id});
  commit();
  ASSERT_TRUE(store_->contains(newer->id));
  verdicts();
  submit({older});
  commit();
  auto answered = verdicts();
  ASSERT_EQ(answered.size(), 1u);
  // What the session tells the client: OK false "duplicate: an older version (…)".
  EXPECT_EQ(answered[0].outcome, WriteOutcome::rejected_older_version);
  EXPECT_FALSE(store::is_accepted(answered[0].outcome));
  EXPECT_FALSE(purgatory().contains(older->id)) << "never held";
}

TEST_F(PurgatoryAcceptanceTest, TheHeldFeedReportsAReleaseOnlyOnceTheAnnouncementIsStored) {
  FeedLog feed;
  caf::anon_send(acceptance_, atom::feed_subscribe::value,
                 caf::actor_cast<held_feed_actor>(spawn(recording_held_feed, &feed)));
  run();
  auto stored = announcement(1, "kept");
  auto failing = announcement(1, "lost");
  submit({stored});
  submit({failing});
  ASSERT_EQ(feed.size(), 2u);
  EXPECT_EQ(feed[0], (FeedLog::value_type{"kept", HeldRepositories::Change::held}));
  EXPECT_EQ(feed[1], (FeedLog::value_type{"lost", HeldRepositories::Change::held}));

  auto kept_state = state(1, "kept");
  auto lost_state = state(1, "lost");
  submit({kept_state});
  submit({lost_state});
  gate_->fail = {failing->id};
  git_data(1, "kept", {kept_state->id});
  git_data(1, "lost", {lost_state->id});
  ASSERT_EQ(gate_->held.size(), 4u) << "both announcements and states released to the writer";
  EXPECT_EQ(feed.size(), 2u) << "nothing promoted before the store answered";
  commit();
  EXPECT_TRUE(store_->contains(stored->id));
  EXPECT_FALSE(store_->contains(failing->id));
  ASSERT_EQ(feed.size(), 4u);
  EXPECT_EQ(feed[2], (FeedLog::value_type{"kept", HeldRepositories::Change::released}));
  EXPECT_EQ(feed[3], (FeedLog::value_type{"lost", HeldRepositories::Change::dropped}));
}

TEST_F(PurgatoryAcceptanceTest, AReleasedEventKeepsItsRecordUntilTheStoreAnswersAndAfterAFailure) {
  // Push authorisation reads the store and the held records together: a released state must be in
  // one of them at every moment, or a push in between is judged against an older state.
  store::StoreAndHeldView view{std::shared_ptr<const store::EventStore>(store_)};
  auto visible = [&](const nostr::EventPtr& ev) {
    nostr::Filter f;
    f.ids = std::vector<nostr::EventId>{ev->id};
    f.normalize();
    return view.exists({f});
  };
  auto kept = announcement(1, "kept");
  auto lost = announcement(1, "lost");
  auto kept_state = state(1, "kept");
  auto lost_state = state(1, "lost");
  submit({kept, lost, kept_state, lost_state});
  ASSERT_EQ(held_records(), 4u);
  gate_->fail = {lost->id};
  git_data(1, "kept", {kept_state->id});
  git_data(1, "lost", {lost_state->id});
  ASSERT_EQ(gate_->held.size(), 4u) << "all four released to the writer";
  for (const auto& ev : {kept, lost, kept_state, lost_state})
    EXPECT_TRUE(visible(ev)) << "still held while its write waits";
  commit();
  EXPECT_TRUE(visible(kept_state));
  EXPECT_TRUE(store_->contains(kept_state->id));
  EXPECT_FALSE(store_->contains(lost->id));
  EXPECT_EQ(held_records(), 1u) << "only the failed write keeps its record";
  acceptance_ = start_purgatory();
  ASSERT_NE(purgatory().find(lost->id), nullptr) << "a restart holds it again";
}

TEST_F(PurgatoryAcceptanceTest, AHoldWhoseRecordCannotBeWrittenIsRefusedAndUndone) {
  // OK true for a held event promises it survives a restart; a full disk must not break that.
  store::test::TempDir small_dir;
  auto options = store::test::options_for(small_dir);
  options.initial_map_size = 128 * 1024;
  options.max_map_size = 256 * 1024;
  purgatory_store_ = std::make_shared<store::EventStore>(options);
  acceptance_ = start_purgatory();
  auto recorded = announcement(1, "demo");
  auto too_big = announcement(1, "demo", {{"description", std::string(300'000, 'x')}});
  submit({recorded, too_big});
  auto answers = verdicts();
  ASSERT_EQ(answers.size(), 2u);
  EXPECT_TRUE(answers[0].accepted);
  EXPECT_EQ(answers[0].outcome, WriteOutcome::held);
  EXPECT_FALSE(answers[1].accepted);
  EXPECT_EQ(answers[1].message.rfind("error: could not record", 0), 0u) << answers[1].message;
  EXPECT_FALSE(purgatory().contains(too_big->id));
  EXPECT_TRUE(purgatory().contains(recorded->id)) << "the version it replaced is held again";
  EXPECT_EQ(acceptance_state().persist_failures.total(), 1u);

  acceptance_ = start_purgatory();  // as after a restart: the held version is still there
  EXPECT_TRUE(purgatory().contains(recorded->id));
  EXPECT_EQ(purgatory().size(), 1u);
}

TEST_F(PurgatoryAcceptanceTest,
       ReplacementsOfServedAnnouncementsAndStatesWithoutARepositoryAreStored) {
  auto served = announcement(1, "demo");
  // Accepted as a maintainer's once, listing no service: no repository here for "other".
  auto unhosted = event(1, 30617, {{"d", "other"}});
  store_->write_batch(std::vector<nostr::EventPtr>{served, unhosted});
  auto replacement = announcement(1, "demo");
  auto unhosted_state = state(1, "other");  // nothing here could release it: stored at once
  submit({replacement, unhosted_state});
  ASSERT_EQ(gate_->held.size(), 2u);
  commit();
  auto answers = verdicts();
  ASSERT_EQ(answers.size(), 2u);
  EXPECT_EQ(answers[0].outcome, WriteOutcome::replaced_older);
  EXPECT_EQ(answers[1].outcome, WriteOutcome::stored);
  EXPECT_EQ(purgatory().size(), 0u);
}

TEST_F(PurgatoryAcceptanceTest, AHeldAnnouncementLetsItsMaintainersParkedAnnouncementIn) {
  const std::uint64_t owner = 1, maintainer = 2;
  auto maintainers_own = event(maintainer, 30617, {{"d", "demo"}});  // lists no service
  submit({maintainers_own});
  EXPECT_FALSE(verdicts().at(0).accepted) << "parked: no announcement of demo yet";
  submit({announcement(owner, "demo", {{"maintainers", hex_key(maintainer)}})});
  ASSERT_EQ(gate_->held.size(), 1u) << "the maintainer's announcement is judged again and stored";
  EXPECT_EQ(gate_->held[0].event, maintainers_own);
}

TEST_F(PurgatoryAcceptanceTest, HoldsExpireOnTheInjectedClockAndSyncCannotBringThemBack) {
  auto repo = announcement(1, "demo");
  submit({repo});
  verdicts();
  unix_now_ += 1799;
  advance_time(std::chrono::seconds(30));
  EXPECT_TRUE(purgatory().contains(repo->id));
  unix_now_ += 1;
  advance_time(std::chrono::seconds(30));
  EXPECT_FALSE(purgatory().contains(repo->id));
  EXPECT_EQ(removed_, std::vector<nostr::EventId>{repo->id}) << "its repository goes";
  EXPECT_EQ(held_records(), 1u) << "the expired id is remembered";

  submit({repo}, "relay:wss://peer.example.com");
  auto refused = verdicts().at(0);
  EXPECT_FALSE(refused.accepted);
  EXPECT_EQ(refused.message.rfind("blocked:", 0), 0u) << refused.message;
  submit({repo}, "ip:a");
  EXPECT_EQ(verdicts().at(0).outcome, WriteOutcome::held) << "a client may resubmit it";
}

TEST_F(PurgatoryAcceptanceTest, TheOwnersDeletionEndsAHoldAndRemovesTheRepository) {
  auto repo = announcement(1, "demo");
  auto held_state = state(1, "demo");
  submit({repo, held_state});
  verdicts();
  ASSERT_TRUE(purgatory().contains(repo->id));
  ASSERT_TRUE(purgatory().contains(held_state->id));
  const auto address = "30617:" + nostr::to_hex(repo->pubkey) + ":demo";
  // A stranger's deletion naming them changes nothing.
  submit({event(2, 5, {{"a", address}, {"e", nostr::to_hex(held_state->id)}})});
  verdicts();
  EXPECT_TRUE(purgatory().contains(repo->id));
  EXPECT_TRUE(removed_.empty());

  submit({event(1, 5, {{"a", address}, {"e", nostr::to_hex(held_state->id)}})});
  commit();
  auto verdict = verdicts().at(0);
  EXPECT_TRUE(verdict.accepted) << verdict.message;
  EXPECT_FALSE(purgatory().contains(repo->id));
  EXPECT_FALSE(purgatory().contains(held_state->id));
  EXPECT_EQ(removed_, std::vector<nostr::EventId>{repo->id}) << "its repository goes";
  EXPECT_EQ(held_records(), 0u) << "nothing held, nothing remembered";
}

TEST_F(PurgatoryAcceptanceTest, ABannedHeldEventLeavesPurgatoryAndIsRefusedAfterwards) {
  auto repo = announcement(1, "demo");
  submit({repo});
  verdicts();
  ASSERT_TRUE(purgatory().contains(repo->id));
  // NIP-86 banevent: the management actor tells the acceptance actor first.
  StoreModeration ban;
  ban.puts = {{ModerationList::banned_events, repo->id, "spam"}};
  ban.delete_events = {repo->id};
  auto applied = request<bool>(acceptance_, ban);
  ASSERT_TRUE(applied && *applied);
  EXPECT_FALSE(purgatory().contains(repo->id));
  EXPECT_EQ(removed_, std::vector<nostr::EventId>{repo->id}) << "its repository goes";
  submit({repo});
  auto verdict = verdicts().at(0);
  EXPECT_FALSE(verdict.accepted);
  EXPECT_EQ(verdict.message, "blocked: this event is banned here");
}

TEST_F(PurgatoryAcceptanceTest, HeldEventsAreReadBackAfterARestartAndStatesHandedToGitAgain) {
  auto repo = announcement(1, "demo");
  auto st = state(1, "demo");
  submit({repo, st});
  verdicts();
  handed_.clear();
  acceptance_ = start_purgatory();
  EXPECT_EQ(purgatory().size(), 2u);
  EXPECT_EQ(purgatory().find(repo->id)->expires_at, t0 + 1800);
  EXPECT_EQ(handed_, std::vector<nostr::EventId>{st->id});
  submit({repo});
  EXPECT_EQ(verdicts().at(0).message, "duplicate: in purgatory");
}

// ---------------------------------------------------------------- pull requests (§6.1–6.2, §7)

/// Purgatory with a served repository "demo" of key 1, and PR events on it.
class PullRequestAcceptanceTest : public PurgatoryAcceptanceTest {
 protected:
  PullRequestAcceptanceTest() {
    store_->write_batch(std::vector<nostr::EventPtr>{announcement(1, "demo")});
    repositories_.insert("demo");
  }
  nostr::EventPtr pr(const std::string& commit, const std::string& d = "demo") {
    return event(9, 1618, {{"a", repo_address(1, d)}, {"c", commit}});
  }
  void pushed_refs(std::vector<PrRefPushed> refs) {
    caf::anon_send(acceptance_,
                   GitDataArrived{{bytes_of(1, 0xaa), "demo"}, {}, std::move(refs), {}, {}});
    run();
  }
  void commits_found(std::vector<std::string> commits) {
    caf::anon_send(acceptance_,
                   GitDataArrived{{bytes_of(1, 0xaa), "demo"}, {}, {}, std::move(commits), {}});
    run();
  }
  const std::string c1 = std::string(40, '1');
  const std::string c2 = std::string(40, '2');
};

TEST_F(PullRequestAcceptanceTest, APrEventWaitsForItsCommitAndLeavesWhenGitFindsIt) {
  auto ev = pr(c1);
  submit({ev});
  auto answer = verdicts().at(0);
  EXPECT_TRUE(answer.accepted);
  EXPECT_EQ(answer.outcome, WriteOutcome::held);
  EXPECT_EQ(answer.message, "purgatory: PR event stored, waiting for git push with commit " + c1);
  EXPECT_TRUE(gate_->held.empty()) << "a held event is not written";
  EXPECT_EQ(held_records(), 1u);
  ASSERT_EQ(looked_for_.size(), 1u) << "git hosting looks for the commit and fetches it";
  EXPECT_EQ(looked_for_[0], std::make_pair(ev->id, std::size_t{1}));
  submit({ev});
  EXPECT_EQ(verdicts().at(0).message, "duplicate: in purgatory");

  git_data(1, "demo", {});  // a push of something else: look again, release nothing
  EXPECT_EQ(checked_, std::vector<std::vector<std::string>>{{c1}});
  EXPECT_TRUE(gate_->held.empty());
  commits_found({c2});
  EXPECT_TRUE(gate_->held.empty()) << "another commit releases nothing";
  EXPECT_EQ(checked_.size(), 1u) << "a report of found commits is not looked at again";
  commits_found({c1});
  ASSERT_EQ(gate_->held.size(), 1u);
  EXPECT_EQ(gate_->held[0].event, ev);
  EXPECT_EQ(refs_set(), (std::vector<std::pair<nostr::EventId, std::string>>{{ev->id, c1}}))
      << "refs/nostr/<id> keeps the commit fetchable";
  commit();
  EXPECT_TRUE(store_->contains(ev->id));
  EXPECT_EQ(held_records(), 0u);
}

TEST_F(PullRequestAcceptanceTest, WithoutACTagItIsRefusedAndForNoRepositoryHereItIsStored) {
  auto no_commit = event(9, 1618, {{"a", repo_address(1, "demo")}});
  store_->write_batch(std::vector<nostr::EventPtr>{announcement(1, "elsewhere")});
  auto unhosted = pr(c1, "elsewhere");  // announced, but no repository here
  submit({no_commit, unhosted});
  auto answers = verdicts();
  ASSERT_EQ(answers.size(), 1u) << "the stored one answers after the commit";
  EXPECT_FALSE(answers[0].accepted);
  EXPECT_EQ(answers[0].message.rfind("invalid: a pull request", 0), 0u) << answers[0].message;
  ASSERT_EQ(gate_->held.size(), 1u);
  EXPECT_EQ(gate_->held[0].event, unhosted);
  EXPECT_TRUE(looked_for_.empty());
}

TEST_F(PullRequestAcceptanceTest, PushedRefsReleaseHeldEventsOrKeepPlaceholders) {
  auto held = pr(c1);
  submit({held});
  verdicts();
  // Its ref with its commit releases it; an unknown id keeps a placeholder (persisted).
  auto later = pr(c2);
  auto unknown = pr(c1);
  pushed_refs({{held->id, c1}, {later->id, c2}, {unknown->id, c2}});
  ASSERT_EQ(gate_->held.size(), 1u);
  EXPECT_EQ(gate_->held[0].event, held);
  EXPECT_EQ(acceptance_state().placeholders->size(), 2u);
  EXPECT_EQ(held_records(), 3u) << "the placeholders' and the released event's until it is stored";
  commit();
  EXPECT_TRUE(store_->contains(held->id));
  EXPECT_EQ(held_records(), 2u) << "the placeholders' records";

  // The PR event whose ref names its commit is stored at once; the other's ref is deleted and it
  // waits.
  submit({later, unknown});
  ASSERT_EQ(gate_->held.size(), 1u);
  EXPECT_EQ(gate_->held[0].event, later);
  EXPECT_EQ(refs_deleted(),
            (std::vector<std::pair<nostr::EventId, std::string>>{{unknown->id, c2}}));
  EXPECT_TRUE(purgatory().contains(unknown->id));
  EXPECT_EQ(acceptance_state().placeholders->size(), 0u);
  EXPECT_EQ(held_records(), 1u) << "only the held event's";
  // A later push of its ref naming another commit again is deleted as well.
  pushed_refs({{unknown->id, c2}});
  EXPECT_EQ(refs_deleted().size(), 2u);
  EXPECT_TRUE(purgatory().contains(unknown->id));
}

TEST_F(PullRequestAcceptanceTest, PlaceholdersEndOnTheClockAndSurviveARestart) {
  auto never = pr(c1);  // its event never comes
  auto held = pr(c2);
  pushed_refs({{never->id, c1}});
  submit({held});
  verdicts();
  caf::anon_send_exit(acceptance_, caf::exit_reason::kill);
  run();
  acceptance_ = start_purgatory();  // as after a restart
  EXPECT_EQ(acceptance_state().placeholders->size(), 1u);
  EXPECT_TRUE(purgatory().contains(held->id));
  EXPECT_EQ(looked_for_.size(), 2u) << "the held event is looked for again";

  unix_now_ += 1799;
  advance_time(std::chrono::seconds(30));
  EXPECT_TRUE(refs_deleted().empty());
  unix_now_ += 1;
  advance_time(std::chrono::seconds(30));
  EXPECT_EQ(refs_deleted(), (std::vector<std::pair<nostr::EventId, std::string>>{{never->id, c1}}));
  EXPECT_EQ(acceptance_state().placeholders->size(), 0u);
  EXPECT_FALSE(purgatory().contains(held->id)) << "the held event expired too";
  EXPECT_EQ(held_records(), 1u) << "only the expired id is remembered";
}

}  // namespace
}  // namespace graspd
