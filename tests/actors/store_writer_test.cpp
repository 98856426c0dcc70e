// Deterministic tests of the store writer actor under CAF's test_coordinator:
// batching per write transaction, replies after commit, the change feed
// (once, in commit order, dead subscribers dropped), the expiration sweep and purgatory's
// records folded into the same transactions.
#include "actors/store/store_writer.hpp"

#include <gtest/gtest.h>
#include <caf/all.hpp>

#include <map>
#include <optional>

#include "tests/store/store_test_util.hpp"
#include "tests/support/actor_fixture.hpp"

namespace graspd {
namespace {

using store::test::unsigned_event;

class StoreWriterTest : public test::ActorTest {
 protected:
  StoreWriterTest() : self_(system()) {
    store_ = std::make_shared<store::EventStore>(store::test::options_for(dir_, &now_));
  }

  store_writer_actor spawn_writer(StoreWriterConfig config = {}) {
    auto h = spawn(store_writer, store_, config);
    run();
    return h;
  }

  StoreWriterState& state(const store_writer_actor& h) {
    return ActorTest::state<StoreWriterState, store_writer_actor::base>(h);
  }

  /// What a feed subscriber received: the events, and in how many messages.
  struct FeedLog : std::vector<StoreCommitted> {
    std::size_t messages = 0;
  };

  /// A feed subscriber recording what it receives.
  store_feed_actor spawn_recorder(std::shared_ptr<FeedLog> log) {
    return spawn([log]() -> store_feed_actor::behavior_type {
      return {[log](const StoreCommits& batch) {
        ++log->messages;
        log->insert(log->end(), batch.commits->begin(), batch.commits->end());
      }};
    });
  }

  std::vector<WriteOutcome> write_all(const store_writer_actor& w,
                                      const std::vector<nostr::EventPtr>& events) {
    for (const auto& ev : events) self_->send(w, StoreWrite{ev, {}});
    run();
    std::vector<WriteOutcome> out;
    for (std::size_t i = 0; i < events.size(); ++i)
      self_->receive([&](WriteOutcome o) { out.push_back(o); },
                     caf::after(std::chrono::seconds(0)) >> [&] { ADD_FAILURE() << "no reply"; });
    return out;
  }

  std::int64_t now_ = 1'700'000'000;
  store::test::TempDir dir_;
  std::shared_ptr<store::EventStore> store_;
  caf::scoped_actor self_;
};

TEST_F(StoreWriterTest, QueuedWritesShareOneTransactionAndReplyAfterCommit) {
  auto w = spawn_writer();
  auto outcomes = write_all(
      w, {unsigned_event(1, 1, 100, 1), unsigned_event(2, 1, 100, 0), unsigned_event(1, 1, 100, 1),
          unsigned_event(3, 1, 90, 0), unsigned_event(4, 1, 100, 20001)});
  EXPECT_EQ(outcomes,
            (std::vector<WriteOutcome>{
                WriteOutcome::stored, WriteOutcome::stored, WriteOutcome::duplicate,
                WriteOutcome::rejected_older_version, WriteOutcome::ephemeral_not_stored}));
  EXPECT_EQ(state(w).batches, 1u);
  EXPECT_EQ(store_->size(), 2u) << "replies came after the commit";
}

TEST_F(StoreWriterTest, MaxBatchSplitsTransactions) {
  StoreWriterConfig config;
  config.max_batch = 2;
  auto w = spawn_writer(config);
  std::vector<nostr::EventPtr> events;
  for (int i = 1; i <= 5; ++i) events.push_back(unsigned_event(i, 1, 100 + i, 1));
  auto outcomes = write_all(w, events);
  EXPECT_EQ(outcomes, std::vector<WriteOutcome>(5, WriteOutcome::stored));
  EXPECT_EQ(state(w).batches, 3u);
}

TEST_F(StoreWriterTest, FeedPublishesEachCommittedEventOnceInCommitOrder) {
  auto w = spawn_writer();
  auto log_a = std::make_shared<FeedLog>();
  auto log_b = std::make_shared<FeedLog>();
  auto a = spawn_recorder(log_a);
  auto b = spawn_recorder(log_b);
  self_->send(w, atom::feed_subscribe::value, a);
  self_->send(w, atom::feed_subscribe::value, b);
  self_->send(w, atom::feed_subscribe::value, a);  // idempotent
  run();
  write_all(w, {unsigned_event(1, 1, 100, 1), unsigned_event(1, 1, 100, 1),
                unsigned_event(2, 1, 100, 0), unsigned_event(3, 1, 101, 0),
                unsigned_event(4, 1, 50, 0), unsigned_event(5, 1, 1, 20000)});
  write_all(w, {unsigned_event(6, 2, 100, 1)});
  for (const auto& log : {log_a, log_b}) {
    ASSERT_EQ(log->size(), 4u);
    EXPECT_EQ((*log)[0].event->id, store::test::bytes_of(1, 0xee));
    EXPECT_EQ((*log)[1].event->id, store::test::bytes_of(2, 0xee));
    EXPECT_EQ((*log)[2].event->id, store::test::bytes_of(3, 0xee));
    EXPECT_EQ((*log)[2].outcome, WriteOutcome::replaced_older);
    EXPECT_EQ((*log)[3].event->id, store::test::bytes_of(6, 0xee));
    // The published JSON is exactly what the store serves.
    EXPECT_EQ(*(*log)[3].json, store_->get((*log)[3].event->id).value());
    EXPECT_EQ(log->messages, 2u) << "one message per transaction, not one per event";
  }
}

TEST_F(StoreWriterTest, DeadSubscribersAreDropped) {
  auto w = spawn_writer();
  auto log = std::make_shared<FeedLog>();
  auto sub = spawn_recorder(log);
  self_->send(w, atom::feed_subscribe::value, sub);
  run();
  ASSERT_EQ(state(w).subscribers.size(), 1u);
  caf::anon_send_exit(sub, caf::exit_reason::kill);
  run();
  EXPECT_TRUE(state(w).subscribers.empty());
  EXPECT_EQ(write_all(w, {unsigned_event(1, 1, 100, 1)})[0], WriteOutcome::stored);
}

TEST_F(StoreWriterTest, TimerSweepsExpiredEvents) {
  StoreWriterConfig config;
  config.sweep_interval = std::chrono::seconds(30);
  auto w = spawn_writer(config);
  write_all(w, {unsigned_event(1, 1, 100, 1, {{"expiration", std::to_string(now_ + 10)}}),
                unsigned_event(2, 1, 100, 1)});
  ASSERT_EQ(store_->size(), 2u);
  now_ += 20;
  EXPECT_EQ(advance_time(std::chrono::seconds(30)), 1u);
  EXPECT_EQ(state(w).swept, 1u);
  EXPECT_EQ(store_->size(), 1u);
  EXPECT_TRUE(has_pending_timeout()) << "the sweep re-arms itself";
}

TEST_F(StoreWriterTest, PublishesWhatAnotherProcessCommittedInCommitOrder) {
  std::vector<nostr::EventPtr> before{unsigned_event(1, 1, 100, 1)};
  store_->write_batch(before);  // there at spawn: never published
  StoreWriterConfig config;
  config.tail_interval = std::chrono::seconds(1);
  config.tail_max = 2;
  auto w = spawn_writer(config);
  auto log = std::make_shared<FeedLog>();
  self_->send(w, atom::feed_subscribe::value, spawn_recorder(log));
  run();
  // Another process (graspd sync) writes to the same store: the next look publishes them, at
  // most tail_max at a time.
  std::vector<nostr::EventPtr> foreign{unsigned_event(2, 2, 101, 1), unsigned_event(3, 2, 102, 1),
                                       unsigned_event(4, 2, 103, 1)};
  store_->write_batch(foreign);
  advance_time(std::chrono::seconds(1));
  ASSERT_EQ(log->size(), 2u);
  // A write of our own publishes the rest of them first, then itself; so does a foreign write
  // between two looks.
  write_all(w, {unsigned_event(5, 1, 104, 1)});
  std::vector<nostr::EventPtr> more{unsigned_event(6, 2, 105, 1)};
  store_->write_batch(more);
  write_all(w, {unsigned_event(7, 1, 106, 1)});
  ASSERT_EQ(log->size(), 6u);
  for (std::size_t i = 0; i < log->size(); ++i) {
    EXPECT_EQ((*log)[i].event->id, store::test::bytes_of(i + 2, 0xee)) << i;
    EXPECT_EQ(*(*log)[i].json, store_->get((*log)[i].event->id).value());
    if (i > 0) {
      EXPECT_GT((*log)[i].seq, (*log)[i - 1].seq);
    }
  }
  EXPECT_EQ(state(w).foreign, 4u);
  advance_time(std::chrono::seconds(1));
  EXPECT_EQ(log->size(), 6u) << "nothing is published twice";
}

TEST_F(StoreWriterTest, WithoutATailIntervalForeignWritesArePublishedOnlyWhenAsked) {
  StoreWriterConfig config;
  config.sweep_interval = std::chrono::seconds(0);
  config.tail_interval = std::chrono::seconds(0);  // boot's file watch sends store_tail instead
  auto w = spawn_writer(config);
  auto log = std::make_shared<FeedLog>();
  self_->send(w, atom::feed_subscribe::value, spawn_recorder(log));
  run();
  EXPECT_FALSE(has_pending_timeout()) << "an idle writer arms no timer";
  std::vector<nostr::EventPtr> foreign{unsigned_event(2, 2, 101, 1)};
  store_->write_batch(foreign);
  advance_time(std::chrono::seconds(5));
  EXPECT_TRUE(log->empty()) << "no polling";
  self_->send(w, atom::store_tail::value);
  run();
  ASSERT_EQ(log->size(), 1u);
  EXPECT_EQ((*log)[0].event->id, foreign[0]->id);
  EXPECT_FALSE(has_pending_timeout()) << "a look on request does not start polling";
}

// ---------------------------------------------------------------- purgatory records (StoreHeld)

/// Held records written through the writer: `puts` as (id byte, record), `erases` as id bytes.
StoreHeld held_changes(std::vector<std::pair<std::uint64_t, std::string>> puts,
                       std::vector<std::uint64_t> erases = {}) {
  StoreHeld msg;
  for (auto& [id, record] : puts)
    msg.changes.puts.emplace_back(store::test::bytes_of(id, 0x11), std::move(record));
  for (auto id : erases) msg.changes.erases.push_back(store::test::bytes_of(id, 0x11));
  return msg;
}

std::map<nostr::EventId, std::string> held_records(const store::EventStore& store) {
  std::map<nostr::EventId, std::string> out;
  store.for_each_held([&](const nostr::EventId& id, std::string_view record) {
    out.emplace(id, std::string(record));
    return true;
  });
  return out;
}

TEST_F(StoreWriterTest, HeldRecordsJoinTheTransactionOfTheEventsQueuedWithThem) {
  auto w = spawn_writer();
  self_->send(w, StoreWrite{unsigned_event(1, 1, 100, 1), {}});
  self_->send(w, held_changes({{7, "record seven"}, {8, "record eight"}}));
  self_->send(w, StoreWrite{unsigned_event(2, 1, 100, 1), {}});
  self_->send(w, held_changes({}, {8}));
  run();
  std::vector<WriteOutcome> outcomes;
  std::vector<bool> held;
  for (int i = 0; i < 4; ++i)
    self_->receive([&](WriteOutcome o) { outcomes.push_back(o); },
                   [&](bool committed) { held.push_back(committed); },
                   caf::after(std::chrono::seconds(0)) >> [&] { ADD_FAILURE() << "no reply"; });
  EXPECT_EQ(outcomes, std::vector<WriteOutcome>(2, WriteOutcome::stored));
  EXPECT_EQ(held, (std::vector<bool>{true, true}));
  EXPECT_EQ(state(w).batches, 1u) << "one transaction (one fsync) for all four";
  auto records = held_records(*store_);
  ASSERT_EQ(records.size(), 1u) << "the erase queued after the put applies after it";
  EXPECT_EQ(records.begin()->second, "record seven");
}

TEST_F(StoreWriterTest, HeldRecordsThatDoNotFitFailAloneAndTheEventsAreStillWritten) {
  store::test::TempDir small_dir;
  auto options = store::test::options_for(small_dir, &now_);
  options.initial_map_size = 128 * 1024;
  options.max_map_size = 256 * 1024;
  store_ = std::make_shared<store::EventStore>(options);
  auto w = spawn_writer();
  self_->send(w, held_changes({{9, std::string(300'000, 'x')}}));
  self_->send(w, StoreWrite{unsigned_event(3, 1, 100, 1), {}});
  run();
  std::optional<bool> held;
  std::optional<WriteOutcome> outcome;
  for (int i = 0; i < 2; ++i)
    self_->receive([&](bool committed) { held = committed; }, [&](WriteOutcome o) { outcome = o; },
                   caf::after(std::chrono::seconds(0)) >> [&] { ADD_FAILURE() << "no reply"; });
  EXPECT_EQ(held, false);
  EXPECT_EQ(outcome, WriteOutcome::stored);
  EXPECT_TRUE(held_records(*store_).empty());
  EXPECT_EQ(store_->size(), 1u);
}

}  // namespace
}  // namespace graspd
