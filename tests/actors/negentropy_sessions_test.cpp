// The NIP-77 server side of one connection (NegentropySessions), driven by our own initiator: every
// answer is checked by parsing it and reconciling, never by substring.
#include "actors/relay/engine/negentropy_sessions.hpp"

#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include <set>
#include <variant>

namespace graspd {
namespace {

namespace neg = nostr::negentropy;

neg::Item item(std::uint64_t timestamp, std::uint8_t n) {
  neg::Item out{timestamp, {}};
  out.id.fill(n);
  return out;
}

std::vector<neg::Item> records(std::size_t count) {
  std::vector<neg::Item> out;
  for (std::size_t i = 0; i < count; ++i)
    out.push_back(item(1000 + i, static_cast<std::uint8_t>(i)));
  return out;
}

/// A record source over a fixed set, remembering the bound it was given.
struct FixedSource {
  std::vector<neg::Item> items;
  std::uint64_t last_max = 0;
  NegentropySessions::RecordSource source() {
    return [this](const nostr::Filter&, std::uint64_t max) {
      last_max = max;
      return items.size() > max ? std::nullopt : std::optional(items);
    };
  }
};

rapidjson::Document parsed(const std::string& frame) {
  rapidjson::Document doc;
  doc.Parse(frame.c_str(), frame.size());
  EXPECT_TRUE(doc.IsArray()) << frame;
  return doc;
}

nostr::ClientNegOpen open_message(const std::string& subid, const neg::Storage& client) {
  auto engine = neg::Negentropy::create(client, neg::client_frame_size_limit);
  return nostr::ClientNegOpen{subid, nostr::Filter{}, engine->initiate()};
}

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

NegentropyBudgetLimits budget_limits(std::uint64_t total, std::uint64_t per_address) {
  NegentropyBudgetLimits limits;
  limits.max_records = total;
  limits.max_records_per_address = per_address;
  limits.scan_records_per_second = 0;  // unbounded unless a test says otherwise
  return limits;
}

NegentropyLimits session_limits(std::uint64_t max_sync_events, std::size_t max_sessions) {
  NegentropyLimits limits;
  limits.max_sync_events = max_sync_events;
  limits.max_sessions = max_sessions;
  limits.opens_per_second = 0;
  return limits;
}

class NegentropySessionsTest : public ::testing::Test {
 protected:
  Clock::time_point now_ = Clock::time_point{} + 1000s;
  std::shared_ptr<NegentropyBudget> budget_ =
      std::make_shared<NegentropyBudget>(budget_limits(150, 150));
  NegentropySessions sessions_{session_limits(100, 2), budget_, "ip:a"};
};

TEST_F(NegentropySessionsTest, AClientReconcilesAgainstTheSnapshot) {
  FixedSource server{records(60)};
  auto client_items = records(60);
  client_items.erase(client_items.begin() + 10);  // server-only
  client_items.push_back(item(5000, 0xee));       // client-only
  neg::Storage client(client_items);
  auto msg = open_message("n", client);
  auto answer = sessions_.open(msg, server.source(), now_);
  ASSERT_FALSE(answer.error) << answer.frame;
  EXPECT_EQ(answer.items, 60u);
  EXPECT_EQ(server.last_max, 100u) << "the source is asked for the configured bound";
  std::set<nostr::EventId> have, need;
  auto engine = neg::Negentropy::create(client, neg::client_frame_size_limit);
  for (int round = 0; round < 10; ++round) {
    auto doc = parsed(answer.frame);
    ASSERT_STREQ(doc[0].GetString(), "NEG-MSG");
    ASSERT_STREQ(doc[1].GetString(), "n");
    auto binary = neg::message_from_hex(doc[2].GetString());
    ASSERT_TRUE(binary);
    std::vector<nostr::EventId> h, n;
    auto next = engine->reconcile(*binary, h, n);
    ASSERT_TRUE(next);
    have.insert(h.begin(), h.end());
    need.insert(n.begin(), n.end());
    if (!*next) break;
    answer = sessions_.message(nostr::ClientNegMsg{"n", **next}, now_);
    ASSERT_FALSE(answer.error) << answer.frame;
  }
  EXPECT_EQ(have, (std::set<nostr::EventId>{item(5000, 0xee).id}));
  EXPECT_EQ(need, (std::set<nostr::EventId>{item(1010, 10).id}));
}

TEST_F(NegentropySessionsTest, UnknownSubscriptionIsClosed) {
  auto answer = sessions_.message(nostr::ClientNegMsg{"nobody", "a"}, now_);
  ASSERT_EQ(answer.error, NegentropyError::unknown_subscription);
  auto doc = parsed(answer.frame);
  EXPECT_STREQ(doc[0].GetString(), "NEG-ERR");
  EXPECT_EQ(std::string(doc[2].GetString()).rfind("closed:", 0), 0u);
}

TEST_F(NegentropySessionsTest, TooManyResultsIsBlockedWithTheCap) {
  FixedSource server{records(101)};
  neg::Storage client;
  auto msg = open_message("n", client);
  auto answer = sessions_.open(msg, server.source(), now_);
  ASSERT_EQ(answer.error, NegentropyError::too_many_results);
  auto doc = parsed(answer.frame);
  EXPECT_STREQ(doc[2].GetString(), "blocked: too many query results");
  ASSERT_EQ(doc.Size(), 4u);
  EXPECT_EQ(doc[3].GetUint64(), 100u);
  EXPECT_EQ(sessions_.open_sessions(), 0u);
  EXPECT_EQ(budget_->held(), 0u);
}

TEST_F(NegentropySessionsTest, MalformedMessageClosesTheSession) {
  FixedSource server{records(3)};
  neg::Storage client;
  auto msg = open_message("n", client);
  ASSERT_FALSE(sessions_.open(msg, server.source(), now_).error);
  auto answer = sessions_.message(nostr::ClientNegMsg{"n", std::string("\x61\x00\x00", 3)}, now_);
  ASSERT_EQ(answer.error, NegentropyError::malformed);
  EXPECT_EQ(std::string(parsed(answer.frame)[2].GetString()).rfind("invalid:", 0), 0u);
  EXPECT_EQ(sessions_.message(nostr::ClientNegMsg{"n", "\x61"}, now_).error,
            NegentropyError::unknown_subscription);
  EXPECT_EQ(budget_->held(), 0u);
}

TEST_F(NegentropySessionsTest, OtherVersionsAreAnsweredWithOurs) {
  FixedSource server{records(1)};
  nostr::ClientNegOpen msg{"n", nostr::Filter{}, std::string("\x62\xaa\xbb", 3)};
  auto answer = sessions_.open(msg, server.source(), now_);
  ASSERT_FALSE(answer.error);
  EXPECT_STREQ(parsed(answer.frame)[2].GetString(), "61");
}

TEST_F(NegentropySessionsTest, SessionsAreBoundedPerConnectionAndInTotal) {
  FixedSource server{records(70)};
  neg::Storage client;
  auto a = open_message("a", client), b = open_message("b", client), c = open_message("c", client);
  ASSERT_FALSE(sessions_.open(a, server.source(), now_).error);
  EXPECT_EQ(budget_->held(), 70u);
  // The second session would hold 140 of the 150 records: fine. Reusing "a" replaces it.
  ASSERT_FALSE(sessions_.open(b, server.source(), now_).error);
  ASSERT_FALSE(sessions_.open(a, server.source(), now_).error);
  EXPECT_EQ(sessions_.open_sessions(), 2u);
  EXPECT_EQ(sessions_.open(c, server.source(), now_).error, NegentropyError::too_many_sessions);
  // The two sessions here hold 140: another connection's 70 would pass the process budget.
  NegentropySessions other{session_limits(100, 2), budget_, "ip:b"};
  auto d = open_message("d", client);
  EXPECT_EQ(other.open(d, server.source(), now_).error, NegentropyError::busy);
  sessions_.clear();
  EXPECT_EQ(budget_->held(), 0u);
  EXPECT_FALSE(other.open(d, server.source(), now_).error);
}

TEST_F(NegentropySessionsTest, OneAddressHoldsAtMostItsShare) {
  auto budget = std::make_shared<NegentropyBudget>(budget_limits(400, 100));
  FixedSource server{records(60)};
  neg::Storage client;
  // Two connections from one address: the second's session would pass the address's 100.
  NegentropySessions first{session_limits(100, 4), budget, "ip:attacker"};
  NegentropySessions second{session_limits(100, 4), budget, "ip:attacker"};
  auto a = open_message("a", client);
  ASSERT_FALSE(first.open(a, server.source(), now_).error);
  auto answer = second.open(a, server.source(), now_);
  ASSERT_EQ(answer.error, NegentropyError::address_busy);
  EXPECT_EQ(std::string(parsed(answer.frame)[2].GetString()).rfind("rate-limited:", 0), 0u);
  EXPECT_EQ(budget->held_by("ip:attacker"), 60u);
  // Another address still has the rest of the process budget.
  NegentropySessions victim{session_limits(100, 4), budget, "ip:victim"};
  ASSERT_FALSE(victim.open(a, server.source(), now_).error);
  EXPECT_EQ(budget->held(), 120u);
  first.clear();
  EXPECT_EQ(budget->held_by("ip:attacker"), 0u);
  EXPECT_FALSE(second.open(a, server.source(), now_).error);
}

TEST_F(NegentropySessionsTest, IdleSessionsAreClosedWithNegErr) {
  auto limits = session_limits(100, 4);
  limits.idle_timeout = 30s;
  NegentropySessions sessions{limits, budget_, "ip:a"};
  FixedSource server{records(10)};
  neg::Storage client;
  auto a = open_message("a", client), b = open_message("b", client);
  ASSERT_FALSE(sessions.open(a, server.source(), now_).error);
  ASSERT_FALSE(sessions.open(b, server.source(), now_ + 10s).error);
  EXPECT_EQ(sessions.next_expiry(), now_ + 30s);
  EXPECT_TRUE(sessions.expire(now_ + 29s).empty());
  // "b" is kept alive by a round; "a" waited 30 s for one.
  EXPECT_EQ(sessions.message(nostr::ClientNegMsg{"b", a.message}, now_ + 25s).error, std::nullopt);
  auto closed = sessions.expire(now_ + 30s);
  ASSERT_EQ(closed.size(), 1u);
  EXPECT_EQ(closed[0].error, NegentropyError::idle);
  auto doc = parsed(closed[0].frame);
  EXPECT_STREQ(doc[0].GetString(), "NEG-ERR");
  EXPECT_STREQ(doc[1].GetString(), "a");
  EXPECT_EQ(std::string(doc[2].GetString()).rfind("closed:", 0), 0u);
  EXPECT_EQ(sessions.open_sessions(), 1u);
  EXPECT_EQ(budget_->held(), 10u);
  EXPECT_EQ(sessions.next_expiry(), now_ + 55s);
  EXPECT_EQ(sessions.expire(now_ + 55s).size(), 1u);
  EXPECT_EQ(sessions.next_expiry(), std::nullopt);
  EXPECT_EQ(budget_->held(), 0u);
}

TEST_F(NegentropySessionsTest, NegOpenIsRateLimitedPerConnection) {
  auto limits = session_limits(100, 4);
  limits.opens_per_second = 1;
  limits.open_burst = 3;
  NegentropySessions sessions{limits, budget_, "ip:a"};
  FixedSource server{records(1)};
  neg::Storage client;
  auto a = open_message("a", client);
  for (int i = 0; i < 3; ++i) ASSERT_FALSE(sessions.open(a, server.source(), now_).error);
  auto refused = sessions.open(a, server.source(), now_);
  ASSERT_EQ(refused.error, NegentropyError::rate_limited);
  EXPECT_EQ(std::string(parsed(refused.frame)[2].GetString()).rfind("rate-limited:", 0), 0u);
  EXPECT_FALSE(sessions.open(a, server.source(), now_ + 1s).error) << "one token refilled";
}

TEST_F(NegentropySessionsTest, ScansAreBudgetedPerAddress) {
  auto limits = budget_limits(1000, 1000);
  limits.scan_records_per_second = 10;
  limits.scan_burst = 100;
  auto budget = std::make_shared<NegentropyBudget>(limits);
  FixedSource server{records(60)};
  neg::Storage client;
  NegentropySessions one{session_limits(100, 4), budget, "ip:scanner"};
  NegentropySessions two{session_limits(100, 4), budget, "ip:scanner"};
  auto a = open_message("a", client);
  ASSERT_FALSE(one.open(a, server.source(), now_).error);  // 100 - 60 = 40 left
  ASSERT_FALSE(two.open(a, server.source(), now_).error);  // 40 - 60 = -20: in debt
  EXPECT_EQ(one.open(a, server.source(), now_).error, NegentropyError::scan_budget);
  EXPECT_EQ(two.open(a, server.source(), now_ + 2s).error, NegentropyError::scan_budget);
  EXPECT_FALSE(two.open(a, server.source(), now_ + 3s).error) << "refilled past zero";
  // Another address scans on its own budget.
  NegentropySessions other{session_limits(100, 4), budget, "ip:other"};
  EXPECT_FALSE(other.open(a, server.source(), now_).error);
}

// The asynchronous NEG-OPEN (the scan runs on the scanner's threads): the pending open counts as
// a session of the connection, its answer comes with finish_open, and an open replaced or closed
// meanwhile gets no answer while its scan is still charged.
TEST_F(NegentropySessionsTest, AnOpenWhoseScanRunsElsewhereIsAnsweredWhenItEnds) {
  auto msg = open_message("a", neg::Storage{});
  auto begun = sessions_.begin_open(msg, now_);
  auto* pending = std::get_if<NegentropySessions::PendingScan>(&begun);
  ASSERT_TRUE(pending);
  EXPECT_EQ(pending->max, 100u);
  EXPECT_EQ(sessions_.pending_opens(), 1u);
  EXPECT_EQ(sessions_.open_sessions(), 0u);
  auto answer = sessions_.finish_open("a", pending->ticket, {records(10), false}, now_);
  ASSERT_TRUE(answer);
  EXPECT_FALSE(answer->error);
  EXPECT_EQ(answer->items, 10u);
  EXPECT_EQ(std::string(parsed(answer->frame)[0].GetString()), "NEG-MSG");
  EXPECT_EQ(sessions_.open_sessions(), 1u);
  EXPECT_EQ(sessions_.pending_opens(), 0u);
  EXPECT_EQ(budget_->held(), 10u);
}

TEST_F(NegentropySessionsTest, PendingOpensCountAgainstTheConnectionsSessions) {
  auto a = open_message("a", neg::Storage{});
  auto b = open_message("b", neg::Storage{});
  auto c = open_message("c", neg::Storage{});
  ASSERT_TRUE(
      std::holds_alternative<NegentropySessions::PendingScan>(sessions_.begin_open(a, now_)));
  ASSERT_TRUE(
      std::holds_alternative<NegentropySessions::PendingScan>(sessions_.begin_open(b, now_)));
  auto refused = sessions_.begin_open(c, now_);
  auto* answer = std::get_if<NegentropySessions::Answer>(&refused);
  ASSERT_TRUE(answer);
  EXPECT_EQ(answer->error, NegentropyError::too_many_sessions);
}

TEST_F(NegentropySessionsTest, AReplacedOrClosedOpenGetsNoAnswerFromItsOldScan) {
  auto first = open_message("a", neg::Storage{});
  auto old_ticket =
      std::get<NegentropySessions::PendingScan>(sessions_.begin_open(first, now_)).ticket;
  auto again = open_message("a", neg::Storage{});
  auto new_ticket =
      std::get<NegentropySessions::PendingScan>(sessions_.begin_open(again, now_)).ticket;
  EXPECT_FALSE(sessions_.finish_open("a", old_ticket, {records(5), false}, now_))
      << "the replaced open's scan is stale";
  EXPECT_TRUE(sessions_.finish_open("a", new_ticket, {records(5), false}, now_));
  auto closing = open_message("b", neg::Storage{});
  auto ticket =
      std::get<NegentropySessions::PendingScan>(sessions_.begin_open(closing, now_)).ticket;
  sessions_.close("b");
  EXPECT_FALSE(sessions_.finish_open("b", ticket, {records(5), false}, now_));
  EXPECT_EQ(budget_->held(), 5u) << "only the live session holds records";
  auto queued = open_message("c", neg::Storage{});
  sessions_.close("a");
  auto t = std::get<NegentropySessions::PendingScan>(sessions_.begin_open(queued, now_)).ticket;
  auto refused = sessions_.abandon_open("c", t, NegentropyError::scan_queue, "rate-limited: busy");
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->error, NegentropyError::scan_queue);
  EXPECT_EQ(sessions_.pending_opens(), 0u);
}

}  // namespace
}  // namespace graspd
