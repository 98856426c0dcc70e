// The pure pieces of `graspd sync` (runtime/boot/sync_args.*, sync_ingest.*): its arguments, the
// NOTICE words that end a run, the progress and summary lines, the redraw throttle, and the
// synchronous acceptance path that stores events arriving in any order.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "messages/relay_url.hpp"
#include "runtime/boot/sync_args.hpp"
#include "runtime/boot/sync_ingest.hpp"
#include "tests/support/nostr_builders.hpp"
#include "tests/support/temp_dir.hpp"

namespace graspd::boot {
namespace {

using namespace std::chrono_literals;

SyncArgs parse_ok(const std::vector<std::string>& args) {
  auto parsed = parse_sync_args(args);
  EXPECT_TRUE(parsed) << parsed.error();
  return parsed ? *parsed : SyncArgs{};
}

std::string parse_error(const std::vector<std::string>& args) {
  auto parsed = parse_sync_args(args);
  EXPECT_FALSE(parsed);
  return parsed ? std::string{} : parsed.error();
}

TEST(SyncArgs, DefaultsFollowStrfrySync) {
  auto args = parse_ok({"ws://127.0.0.1:7777"});
  EXPECT_EQ(args.url, "ws://127.0.0.1:7777");
  EXPECT_EQ(args.direction, SyncDirection::both);
  EXPECT_EQ(args.filter, nostr::Filter{});
  EXPECT_FALSE(args.dry_run);
  EXPECT_EQ(args.timeout_secs, 0u);
  EXPECT_EQ(args.frame_size_limit, 60000u);
  EXPECT_FALSE(args.policy);
  EXPECT_TRUE(args.downloads());
  EXPECT_TRUE(args.uploads());
}

TEST(SyncArgs, ReadsEveryOptionInBothSpellings) {
  auto args = parse_ok({"--dir=down", "--filter", R"({"kinds":[1621],"limit":5})", "wss://r.x",
                        "--policy", "open", "--timeout=30", "--frame-size-limit", "0", "--data",
                        "/d", "--config=/c.conf"});
  EXPECT_EQ(args.url, "wss://r.x");
  EXPECT_EQ(args.direction, SyncDirection::down);
  ASSERT_TRUE(args.filter.kinds);
  EXPECT_EQ(*args.filter.kinds, std::vector<std::uint32_t>{1621});
  EXPECT_FALSE(args.filter.limit) << "a limit would reconcile an arbitrary subset";
  EXPECT_EQ(args.policy, runtime::AcceptanceMode::open);
  EXPECT_EQ(args.timeout_secs, 30u);
  EXPECT_EQ(args.frame_size_limit, 0u);
  EXPECT_EQ(args.data_path, "/d");
  EXPECT_EQ(args.config_file, "/c.conf");
  EXPECT_TRUE(args.downloads());
  EXPECT_FALSE(args.uploads());
}

TEST(SyncArgs, DryRunAndPrintMissingMoveNothing) {
  auto dry = parse_ok({"ws://a", "--dry-run"});
  EXPECT_TRUE(dry.dry_run);
  EXPECT_FALSE(dry.downloads());
  EXPECT_FALSE(dry.uploads());
  auto missing = parse_ok({"ws://a", "--print-missing"});
  EXPECT_TRUE(missing.print_missing);
  EXPECT_TRUE(missing.dry_run);
  auto none = parse_ok({"ws://a", "--dir", "none"});
  EXPECT_FALSE(none.downloads());
  EXPECT_FALSE(none.uploads());
  EXPECT_TRUE(parse_ok({"--help"}).help);
}

TEST(SyncArgs, RefusesWhatItCannotUse) {
  EXPECT_EQ(parse_error({}), "missing the relay URL");
  EXPECT_NE(parse_error({"ws://a", "ws://b"}).find("more than one"), std::string::npos);
  EXPECT_NE(parse_error({"ws://a", "--dir", "sideways"}).find("--dir"), std::string::npos);
  EXPECT_NE(parse_error({"ws://a", "--filter", "[{}]"}).find("--filter"), std::string::npos);
  EXPECT_NE(parse_error({"ws://a", "--filter", R"({"search":"x"})"}).find("--filter"),
            std::string::npos);
  EXPECT_NE(parse_error({"ws://a", "--timeout", "-1"}).find("--timeout"), std::string::npos);
  EXPECT_NE(parse_error({"ws://a", "--frame-size-limit", "100"}).find("4096"), std::string::npos);
  EXPECT_NE(parse_error({"ws://a", "--policy", "lax"}).find("--policy"), std::string::npos);
  EXPECT_EQ(parse_error({"ws://a", "--filter"}), "--filter needs a value");
  EXPECT_EQ(parse_error({"ws://a", "--frobnicate"}), "unknown option --frobnicate");
}

TEST(SyncProgress, TheLineShowsCountsAndRate) {
  SyncFigures f;
  f.rounds = 2;
  f.have = 10;
  f.need = 200;
  EXPECT_EQ(format_progress(f, 1s), "sync: reconciling (round 2)  have 10 need 200  0 ev/s");
  f.reconciled = true;
  f.rounds = 3;
  f.received = 150;
  f.stored = 140;
  f.sent = 10;
  f.sent_ok = 4;
  f.sent_refused = 1;
  EXPECT_EQ(format_progress(f, 2s),
            "sync: reconciled in 3 rounds  have 10 need 200  down 150/200 stored 140  up 5/10  "
            "80 ev/s  ETA 0:01");
  f.received = 200;
  f.sent_ok = 9;
  EXPECT_EQ(format_progress(f, 2s),
            "sync: reconciled in 3 rounds  have 10 need 200  down 200/200 stored 140  up 10/10  "
            "105 ev/s")
      << "nothing left, no ETA";
}

TEST(SyncProgress, TheSummaryNamesEveryFigure) {
  SyncFigures f;
  f.local_records = 7;
  f.rounds = 1;
  f.have = 1;
  f.need = 2;
  f.sent = 1;
  f.sent_ok = 1;
  f.received = 2;
  f.stored = 2;
  EXPECT_EQ(format_summary(f, 1500ms),
            "have 1, need 2, sent 1 (accepted 1, rejected 0), received 2, stored 2, duplicate 0, "
            "refused 0, invalid 0, parked 0, not delivered 0 (7 local records, 1 rounds, 1.5 s)");
}

TEST(SyncProgress, RedrawsAtMostOncePerInterval) {
  ProgressThrottle throttle(100ms);
  ProgressThrottle::Clock::time_point t{};
  EXPECT_TRUE(throttle.due(t));
  EXPECT_FALSE(throttle.due(t + 50ms));
  EXPECT_TRUE(throttle.due(t + 100ms));
  EXPECT_FALSE(throttle.due(t + 199ms));
  EXPECT_TRUE(throttle.due(t + 250ms));
}

/// A repository whose announcement lists `service`, an issue and a comment on it.
struct Thread {
  nostr::Event announcement, issue, comment;
};

Thread thread_for(const std::string& service, const std::string& d = "demo") {
  Thread t;
  t.announcement = test::signed_event(30617,
                                      {{"d", d},
                                       {"clone", "https://" + service + "/owner/" + d + ".git"},
                                       {"relays", "wss://" + service}},
                                      1700000000, "repo", 11);
  auto address = nostr::address_of(t.announcement);
  t.issue = test::signed_event(1621, {{"a", address}, {"subject", "s"}}, 1700000100, "bug", 21);
  auto root = nostr::to_hex(t.issue.id);
  t.comment =
      test::signed_event(1111, {{"E", root}, {"e", root}, {"K", "1621"}}, 1700000200, "me too", 41);
  return t;
}

nostr::EventPtr ptr(const nostr::Event& ev) {
  return std::make_shared<const nostr::Event>(ev);
}

std::shared_ptr<store::EventStore> open_store(const test::TempDir& dir) {
  store::StoreOptions options;
  options.path = dir.path();
  options.durable = false;
  return std::make_shared<store::EventStore>(options);
}

policy::PolicyConfig policy_for(const std::string& service) {
  policy::PolicyConfig config;
  config.service = *parse_host_port(service);
  return config;
}

TEST(SyncIngest, StoresEventsThatArriveBeforeWhatTheyDependOn) {
  test::TempDir dir;
  auto store = open_store(dir);
  auto t = thread_for("relay.example.com");
  SyncIngest ingest(store, policy_for("relay.example.com"));
  // Newest first, as a relay answers: the comment, then its issue, then the announcement, each
  // in its own flush (its own download batch).
  for (const auto* ev : {&t.comment, &t.issue, &t.announcement}) {
    ingest.submit(ptr(*ev));
    ASSERT_TRUE(ingest.flush()) << ingest.error();
  }
  EXPECT_EQ(ingest.counts().stored, 3u);
  EXPECT_EQ(ingest.counts().parked, 0u);
  for (const auto* ev : {&t.comment, &t.issue, &t.announcement})
    EXPECT_TRUE(store->contains(ev->id));
}

TEST(SyncIngest, RefusesWhatThePolicyRefusesAndCountsDuplicates) {
  test::TempDir dir;
  auto store = open_store(dir);
  auto elsewhere = thread_for("other.example.com", "other");
  auto here = thread_for("relay.example.com");
  auto spam = test::signed_event(1621, {{"a", nostr::address_of(here.announcement)}}, 1700000300,
                                 "spam", 99);
  auto config = policy_for("relay.example.com");
  config.event_blacklist.insert(spam.pubkey);
  std::vector<std::string> refusals;
  SyncIngest ingest(store, config, [&](const nostr::EventId&, const std::string& why) {
    refusals.push_back(why);
  });
  ingest.submit(ptr(elsewhere.announcement));  // not listing this service: may become eligible
  ingest.submit(ptr(here.announcement));
  ingest.submit(ptr(here.announcement));  // the same one again, still pending
  ingest.submit(ptr(elsewhere.issue));    // its repository is not stored: waits
  ingest.submit(ptr(spam));               // a blacklisted author: refused
  ASSERT_TRUE(ingest.flush()) << ingest.error();
  ingest.submit(ptr(here.announcement));  // now stored: the store answers duplicate
  ASSERT_TRUE(ingest.flush()) << ingest.error();
  auto counts = ingest.counts();
  EXPECT_EQ(counts.stored, 1u);
  EXPECT_EQ(counts.refused, 1u);
  EXPECT_EQ(counts.duplicate, 2u);
  EXPECT_EQ(counts.parked, 2u);
  ASSERT_EQ(refusals.size(), 1u);
  EXPECT_EQ(refusals[0].rfind("blocked:", 0), 0u) << refusals[0];
  EXPECT_FALSE(store->contains(spam.id));
}

TEST(SyncIngest, ProtectedEventsAreRefusedWithOrWithoutAPolicy) {
  auto t = thread_for("relay.example.com");
  auto guarded = test::signed_event(1621, {{"a", nostr::address_of(t.announcement)}, {"-"}},
                                    1700000150, "mine only", 21);
  for (bool with_policy : {true, false}) {
    test::TempDir dir;
    auto store = open_store(dir);
    std::vector<std::string> refusals;
    SyncIngest ingest(
        store, with_policy ? std::optional(policy_for("relay.example.com")) : std::nullopt,
        [&](const nostr::EventId&, const std::string& why) { refusals.push_back(why); });
    ingest.submit(ptr(t.announcement));
    ingest.submit(ptr(guarded));
    ASSERT_TRUE(ingest.flush()) << ingest.error();
    EXPECT_EQ(ingest.counts().stored, 1u) << with_policy;
    EXPECT_EQ(ingest.counts().refused, 1u);
    EXPECT_EQ(ingest.counts().protected_refused, 1u);
    ASSERT_EQ(refusals.size(), 1u);
    EXPECT_EQ(refusals[0].rfind("restricted:", 0), 0u) << refusals[0];
    EXPECT_FALSE(store->contains(guarded.id));
  }
}

TEST(SyncIngest, WithoutAPolicyEveryEventIsWritten) {
  test::TempDir dir;
  auto store = open_store(dir);
  auto t = thread_for("other.example.com");
  SyncIngest ingest(store, std::nullopt);
  ingest.submit(ptr(t.comment));
  ingest.submit(ptr(t.announcement));
  ingest.submit(ptr(t.comment));
  ASSERT_TRUE(ingest.flush()) << ingest.error();
  EXPECT_EQ(ingest.counts().stored, 2u);
  EXPECT_EQ(ingest.counts().duplicate, 1u);
}

}  // namespace
}  // namespace graspd::boot
