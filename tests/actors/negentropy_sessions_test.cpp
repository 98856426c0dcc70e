// The NIP-77 server side of one connection (NegentropySessions), driven by our own initiator: every
// answer is checked by parsing it and reconciling, never by substring.
#include "actors/relay/engine/negentropy_sessions.hpp"

#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include <set>

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

class NegentropySessionsTest : public ::testing::Test {
 protected:
  std::shared_ptr<NegentropyBudget> budget_ = std::make_shared<NegentropyBudget>(150);
  NegentropySessions sessions_{NegentropyLimits{100, 2}, budget_};
};

TEST_F(NegentropySessionsTest, AClientReconcilesAgainstTheSnapshot) {
  FixedSource server{records(60)};
  auto client_items = records(60);
  client_items.erase(client_items.begin() + 10);  // server-only
  client_items.push_back(item(5000, 0xee));       // client-only
  neg::Storage client(client_items);
  auto msg = open_message("n", client);
  auto answer = sessions_.open(msg, server.source());
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
    answer = sessions_.message(nostr::ClientNegMsg{"n", **next});
    ASSERT_FALSE(answer.error) << answer.frame;
  }
  EXPECT_EQ(have, (std::set<nostr::EventId>{item(5000, 0xee).id}));
  EXPECT_EQ(need, (std::set<nostr::EventId>{item(1010, 10).id}));
}

TEST_F(NegentropySessionsTest, UnknownSubscriptionIsClosed) {
  auto answer = sessions_.message(nostr::ClientNegMsg{"nobody", "a"});
  ASSERT_EQ(answer.error, NegentropyError::unknown_subscription);
  auto doc = parsed(answer.frame);
  EXPECT_STREQ(doc[0].GetString(), "NEG-ERR");
  EXPECT_EQ(std::string(doc[2].GetString()).rfind("closed:", 0), 0u);
}

TEST_F(NegentropySessionsTest, TooManyResultsIsBlockedWithTheCap) {
  FixedSource server{records(101)};
  neg::Storage client;
  auto msg = open_message("n", client);
  auto answer = sessions_.open(msg, server.source());
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
  ASSERT_FALSE(sessions_.open(msg, server.source()).error);
  auto answer = sessions_.message(nostr::ClientNegMsg{"n", std::string("\x61\x00\x00", 3)});
  ASSERT_EQ(answer.error, NegentropyError::malformed);
  EXPECT_EQ(std::string(parsed(answer.frame)[2].GetString()).rfind("invalid:", 0), 0u);
  EXPECT_EQ(sessions_.message(nostr::ClientNegMsg{"n", "\x61"}).error,
            NegentropyError::unknown_subscription);
  EXPECT_EQ(budget_->held(), 0u);
}

TEST_F(NegentropySessionsTest, OtherVersionsAreAnsweredWithOurs) {
  FixedSource server{records(1)};
  nostr::ClientNegOpen msg{"n", nostr::Filter{}, std::string("\x62\xaa\xbb", 3)};
  auto answer = sessions_.open(msg, server.source());
  ASSERT_FALSE(answer.error);
  EXPECT_STREQ(parsed(answer.frame)[2].GetString(), "61");
}

TEST_F(NegentropySessionsTest, SessionsAreBoundedPerConnectionAndInTotal) {
  FixedSource server{records(70)};
  neg::Storage client;
  auto a = open_message("a", client), b = open_message("b", client), c = open_message("c", client);
  ASSERT_FALSE(sessions_.open(a, server.source()).error);
  EXPECT_EQ(budget_->held(), 70u);
  // The second session would hold 140 of the 150 records: fine. Reusing "a" replaces it.
  ASSERT_FALSE(sessions_.open(b, server.source()).error);
  ASSERT_FALSE(sessions_.open(a, server.source()).error);
  EXPECT_EQ(sessions_.open_sessions(), 2u);
  EXPECT_EQ(sessions_.open(c, server.source()).error, NegentropyError::too_many_sessions);
  // The two sessions here hold 140: another connection's 70 would pass the process budget.
  NegentropySessions other{NegentropyLimits{100, 2}, budget_};
  auto d = open_message("d", client);
  EXPECT_EQ(other.open(d, server.source()).error, NegentropyError::busy);
  sessions_.clear();
  EXPECT_EQ(budget_->held(), 0u);
  EXPECT_FALSE(other.open(d, server.source()).error);
}

}  // namespace
}  // namespace graspd
