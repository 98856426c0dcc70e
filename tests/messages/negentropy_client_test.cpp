// The client session of NIP-77 against our responder: frames, de-duplicated
// have/need across rounds, the filter sent without `limit`, bad payloads.
#include <gtest/gtest.h>

#include <rapidjson/document.h>

#include <random>
#include <set>
#include <string>
#include <vector>

#include "messages/nostr/canonical.hpp"
#include "messages/nostr/negentropy_client.hpp"

namespace graspd::nostr::negentropy {
namespace {

Item item(std::uint64_t timestamp, int n) {
  return Item{timestamp, sha256(std::to_string(n))};
}

rapidjson::Document parse(const std::string& frame) {
  rapidjson::Document doc;
  doc.Parse(frame.c_str(), frame.size());
  EXPECT_FALSE(doc.HasParseError()) << frame;
  return doc;
}

/// Runs `client` against a responder over `theirs` until done; returns the frames' verbs.
std::vector<std::string> run(ClientSession& client, const Storage& theirs, std::set<EventId>& have,
                             std::set<EventId>& need,
                             std::size_t server_limit = server_frame_size_limit) {
  auto server = Negentropy::create(theirs, server_limit);
  EXPECT_TRUE(server.ok());
  std::vector<std::string> verbs;
  auto frame = client.open_frame();
  for (int guard = 0; guard < 10000; ++guard) {
    auto doc = parse(frame);
    verbs.emplace_back(doc[0].GetString());
    if (verbs.back() == "NEG-CLOSE") break;
    const auto& payload = doc[verbs.back() == "NEG-OPEN" ? 3 : 2];
    auto reply = server->respond(*message_from_hex(payload.GetString()));
    EXPECT_TRUE(reply.ok());
    auto round = client.on_message(message_to_hex(*reply));
    EXPECT_TRUE(round.ok()) << round.error().detail;
    for (const auto& id : round->have) EXPECT_TRUE(have.insert(id).second) << "reported twice";
    for (const auto& id : round->need) EXPECT_TRUE(need.insert(id).second) << "reported twice";
    frame = round->frame;
  }
  return verbs;
}

TEST(NegentropyClient, OpenFrameCarriesTheFilterWithoutLimit) {
  Filter filter;
  filter.kinds = std::vector<std::uint32_t>{1621};
  filter.limit = 10;
  auto session = ClientSession::open("n\"1", filter, {item(5, 1)});
  ASSERT_TRUE(session.ok());
  auto doc = parse(session->open_frame());
  ASSERT_EQ(doc.Size(), 4u);
  EXPECT_STREQ(doc[0].GetString(), "NEG-OPEN");
  EXPECT_STREQ(doc[1].GetString(), "n\"1");
  EXPECT_FALSE(doc[2].HasMember("limit"));
  EXPECT_EQ(doc[2]["kinds"][0].GetUint(), 1621u);
  EXPECT_EQ(std::string(doc[3].GetString()).substr(0, 2), "61");
  auto close = parse(session->close_frame());
  EXPECT_STREQ(close[0].GetString(), "NEG-CLOSE");
  EXPECT_EQ(close.Size(), 2u);
}

TEST(NegentropyClient, ReportsEachDifferenceOnceAcrossRounds) {
  // Many records on one timestamp and a small server frame limit force several rounds,
  // in which ranges are re-asked and ids can come back.
  std::mt19937 rng(7);
  std::vector<Item> ours;
  std::vector<Item> theirs;
  std::set<EventId> only_ours;
  std::set<EventId> only_theirs;
  for (int i = 0; i < 20000; ++i) {
    const auto it = item(1700000000 + (i % 3 == 0 ? 0 : i / 7), i);
    switch (rng() % 10) {
      case 0:
        ours.push_back(it), only_ours.insert(it.id);
        break;
      case 1:
        theirs.push_back(it), only_theirs.insert(it.id);
        break;
      default:
        ours.push_back(it), theirs.push_back(it);
    }
  }
  auto session = ClientSession::open("n", Filter{}, ours, 4096);
  ASSERT_TRUE(session.ok());
  std::set<EventId> have;
  std::set<EventId> need;
  auto verbs = run(*session, Storage(theirs), have, need, 4096);
  EXPECT_EQ(have.size(), only_ours.size());
  EXPECT_EQ(need.size(), only_theirs.size());
  EXPECT_TRUE(have == only_ours);
  EXPECT_TRUE(need == only_theirs);
  EXPECT_EQ(verbs.front(), "NEG-OPEN");
  EXPECT_EQ(verbs.back(), "NEG-CLOSE");
  EXPECT_GT(session->rounds(), 2u);
  EXPECT_EQ(session->have_count(), only_ours.size());
  EXPECT_EQ(session->need_count(), only_theirs.size());
  EXPECT_EQ(session->local_records(), ours.size());
}

TEST(NegentropyClient, EqualSetsCloseAfterOneRound) {
  std::vector<Item> items;
  for (int i = 0; i < 1000; ++i) items.push_back(item(1000 + i, i));
  auto session = ClientSession::open("n", Filter{}, items);
  ASSERT_TRUE(session.ok());
  std::set<EventId> have;
  std::set<EventId> need;
  auto verbs = run(*session, Storage(items), have, need);
  EXPECT_TRUE(have.empty());
  EXPECT_TRUE(need.empty());
  EXPECT_EQ(verbs, (std::vector<std::string>{"NEG-OPEN", "NEG-CLOSE"}));
}

TEST(NegentropyClient, RefusesBadPayloads) {
  auto session = ClientSession::open("n", Filter{}, {item(5, 1)});
  ASSERT_TRUE(session.ok());
  EXPECT_FALSE(session->on_message("6").ok());
  EXPECT_FALSE(session->on_message("zz").ok());
  EXPECT_FALSE(session->on_message("620000").ok());
  EXPECT_FALSE(ClientSession::open("n", Filter{}, {}, 100).ok());
}

TEST(NegentropyClient, ARelayThatKeepsAnsweringIsCutOffAtTheRoundCap) {
  // A hostile relay answers every round with one range up to infinity whose fingerprint never
  // matches ours: version 0x61, bound (timestamp 0 = infinity, empty id prefix), mode 1
  // (fingerprint), 16 bytes.
  const std::string hostile =
      "61"
      "00"
      "00"
      "01" +
      std::string(32, 'f');
  std::vector<Item> ours;
  for (int i = 0; i < 1000; ++i) ours.push_back(item(1000 + i, i));
  auto session = ClientSession::open("n", Filter{}, ours, client_frame_size_limit, 5);
  ASSERT_TRUE(session.ok());
  for (int round = 0; round < 5; ++round) {
    auto answer = session->on_message(hostile);
    ASSERT_TRUE(answer.ok()) << answer.error().detail;
    ASSERT_FALSE(answer->done) << "the hostile reply must keep the session going";
  }
  auto cut = session->on_message(hostile);
  ASSERT_FALSE(cut.ok());
  EXPECT_EQ(cut.error().code, ErrorCode::too_many_rounds);
  EXPECT_NE(cut.error().detail.find("5 rounds"), std::string::npos) << cut.error().detail;
  EXPECT_EQ(session->rounds(), 5u);
}

TEST(NegentropyClient, AnErrorNoticeBeforeTheFirstAnswerRefusesNip77) {
  EXPECT_TRUE(notice_refuses_negentropy("ERROR: bad msg: negentropy disabled"));
  EXPECT_TRUE(notice_refuses_negentropy("Unrecognized command NEG-OPEN"));
  EXPECT_TRUE(notice_refuses_negentropy("could not parse message"));
  EXPECT_TRUE(notice_refuses_negentropy("invalid: unknown verb"));
  EXPECT_FALSE(notice_refuses_negentropy("welcome, be nice"));
  EXPECT_FALSE(notice_refuses_negentropy("rate-limited: slow down"));
}

TEST(ClientFrames, RequestCloseAndEvent) {
  Filter by_id;
  by_id.ids = std::vector<EventId>{sha256("1")};
  auto req = parse(client_req("r", {by_id}));
  EXPECT_STREQ(req[0].GetString(), "REQ");
  EXPECT_STREQ(req[2]["ids"][0].GetString(), to_hex(sha256("1")).c_str());
  EXPECT_EQ(client_close("r"), "[\"CLOSE\",\"r\"]");
  EXPECT_EQ(client_event("{}"), "[\"EVENT\",{}]");
}

}  // namespace
}  // namespace graspd::nostr::negentropy
