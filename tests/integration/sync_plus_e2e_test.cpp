// GRASP-03 Sync+ end to end with real processes on loopback: graspd finds a participant's relay
// list on a user-index relay (a fault peer), follows it to the participant's outbox and fetches a
// reply found nowhere else; a hostile relay list dials no invalid URL and at most four relays;
// an author without a relay list is probed on the fallback relays, as soon as the index answers;
// NGIT_SYNC_PLUS_ENABLED=false does none of this and drops GRASP-03 from NIP-11.
#include "tests/integration/sync_test_support.hpp"

namespace graspd::test {
namespace {

using namespace std::chrono_literals;

using Env = std::vector<std::pair<std::string, std::string>>;

Env plus_env(const std::vector<std::pair<std::string, std::string>>& extra) {
  auto env = fast_sync_env();
  env.emplace_back("NGIT_SYNC_PLUS_RECONCILE_SECS", "1");
  env.insert(env.end(), extra.begin(), extra.end());
  return env;
}

/// A thread hosted on `node`: announcement (key 11), issue (key 20), comment by the participant
/// (key 40).
struct Thread {
  nostr::Event announcement, issue, comment;
  /// A second reply by the participant, kept off `node`.
  nostr::Event elsewhere;

  explicit Thread(const GraspdProcess& node) {
    auto t = now_seconds() - 1000;
    announcement = announcement_listing({node.relay_url()}, "demo", t);
    issue = issue_for(nostr::address_of(announcement), 0, t + 10);
    comment = comment_on(issue, 0, t + 20);
    elsewhere = comment_on(issue, 5, t + 30);  // same author as `comment`
  }
  void publish_to(const GraspdProcess& node) const {
    publish_all(node.port(), {announcement, issue, comment});
  }
};

nostr::Event relay_list_of_participant(const nostr::Tags& tags) {
  return make_event(10002, "", tags, now_seconds() - 500, 40);
}

nostr::Event profile_of_participant() {
  return make_event(0, "{\"name\":\"participant\"}", {}, now_seconds() - 500, 40);
}

std::vector<std::string> nip11_grasps(std::uint16_t port) {
  auto reply = http_get(port, "/", {{"Accept", "application/nostr+json"}});
  rapidjson::Document doc;
  doc.Parse(reply.body.c_str(), reply.body.size());
  std::vector<std::string> out;
  if (doc.HasParseError() || !doc.IsObject() || !doc.HasMember("supported_grasps")) return out;
  for (const auto& grasp : doc["supported_grasps"].GetArray()) out.emplace_back(grasp.GetString());
  return out;
}

/// The role names of `relay` in the Sync+ section of /api/sync.
std::vector<std::string> plus_roles(std::uint16_t port, const std::string& relay) {
  rapidjson::Document doc;
  auto body = sync_status(port);
  doc.Parse(body.c_str(), body.size());
  std::vector<std::string> out;
  if (doc.HasParseError() || !doc.IsObject() || !doc.HasMember("sync_plus")) return out;
  for (const auto& entry : doc["sync_plus"]["relays"].GetArray())
    if (entry["url"].GetString() == relay)
      for (const auto& role : entry["roles"].GetArray()) out.emplace_back(role.GetString());
  return out;
}

TEST(SyncPlusE2E, TheIndexLeadsToTheOutboxAndItsReplyArrives) {
  FaultPeer index, outbox;
  ASSERT_NE(index.port(), 0);
  ASSERT_NE(outbox.port(), 0);
  GraspdProcess node{
      GraspdOptions{plus_env({{"NGIT_SYNC_PLUS_USER_INDEX_RELAYS", index.url()}}), {}}};
  ASSERT_TRUE(node.start()) << node.stderr_text();
  Thread thread(node);
  auto list = relay_list_of_participant({{"r", outbox.url(), "write"}});
  auto profile = profile_of_participant();
  ASSERT_TRUE(index.seed(list));
  ASSERT_TRUE(index.seed(profile));
  ASSERT_TRUE(outbox.seed(thread.elsewhere));
  thread.publish_to(node);

  ASSERT_TRUE(wait_until(
      [&] {
        return stored_count(node.port(), {list, profile, thread.elsewhere}) == 3;
      },
      40s))
      << stored_count(node.port(), {list, profile, thread.elsewhere}) << "\n"
      << sync_status(node.port()) << node.stderr_text();
  EXPECT_GT(outbox.stat("reqs"), 0);
  EXPECT_EQ(nip11_grasps(node.port()),
            (std::vector<std::string>{"GRASP-01", "GRASP-02", "GRASP-03"}));
  // /api/sync follows within a status interval (1 s) of the fetch that stored the reply.
  EXPECT_TRUE(wait_until(
      [&] {
        auto roles = plus_roles(node.port(), outbox.url());
        return std::find(roles.begin(), roles.end(), "history") != roles.end();
      },
      10s))
      << sync_status(node.port());
  EXPECT_EQ(node.stop(), 0);
}

TEST(SyncPlusE2E, AHostileRelayListDialsNoInvalidUrlAndAtMostFourRelays) {
  FaultPeer index, trap;
  std::vector<std::unique_ptr<FaultPeer>> valid;
  for (int i = 0; i < 5; ++i) valid.push_back(std::make_unique<FaultPeer>());
  ASSERT_NE(index.port(), 0);
  ASSERT_NE(trap.port(), 0);
  for (const auto& peer : valid) ASSERT_NE(peer->port(), 0);
  GraspdProcess node{
      GraspdOptions{plus_env({{"NGIT_SYNC_PLUS_USER_INDEX_RELAYS", index.url()}}), {}}};
  ASSERT_TRUE(node.start()) << node.stderr_text();
  Thread thread(node);
  const auto trap_hostport = "127.0.0.1:" + std::to_string(trap.port());
  nostr::Tags tags{{"r", "wss://user:pw@" + trap_hostport},
                   {"r", "http://" + trap_hostport},
                   {"r", "ws://" + trap_hostport + "/?q=1"},
                   {"r", "ws://" + trap_hostport + "/%2e"},
                   {"r", "ws://" + trap_hostport + "/" + std::string(600, 'a')}};
  for (const auto& peer : valid) tags.push_back({"r", peer->url(), "write"});
  // Variants of the first valid relay take no extra slot.
  tags.push_back({"r", "WS://127.0.0.1:" + std::to_string(valid[0]->port()) + "/", "write"});
  auto list = relay_list_of_participant(tags);
  ASSERT_TRUE(index.seed(list));
  for (const auto& peer : valid) ASSERT_TRUE(peer->seed(thread.elsewhere));
  thread.publish_to(node);

  // The first four relays are asked (outbox discovery and history), one new one per pass.
  ASSERT_TRUE(wait_until(
      [&] {
        for (int i = 0; i < 4; ++i)
          if (valid[i]->stat("reqs") < 2) return false;
        return true;
      },
      60s))
      << sync_status(node.port()) << node.stderr_text();
  EXPECT_EQ(stored_count(node.port(), {list, thread.elsewhere}), 2u);
  EXPECT_EQ(valid[4]->stat("reqs"), 0) << "the fifth relay is past the per-author bound";
  EXPECT_EQ(valid[4]->stat("dials"), 0);
  EXPECT_EQ(trap.stat("reqs"), 0) << "invalid URLs are never dialled";
  EXPECT_EQ(trap.stat("dials"), 0);
  rapidjson::Document doc;
  auto body = sync_status(node.port());
  doc.Parse(body.c_str(), body.size());
  ASSERT_FALSE(doc.HasParseError()) << body;
  EXPECT_EQ(doc["sync_plus"]["refused_urls"].GetUint64(), 5u) << body;
  EXPECT_EQ(node.stop(), 0);
}

TEST(SyncPlusE2E, AnAuthorWithoutARelayListIsProbedOnTheFallbackRelays) {
  FaultPeer index, fallback;
  ASSERT_NE(index.port(), 0);
  ASSERT_NE(fallback.port(), 0);
  GraspdProcess node{GraspdOptions{plus_env({{"NGIT_SYNC_PLUS_USER_INDEX_RELAYS", index.url()},
                                             {"NGIT_SYNC_PLUS_FALLBACK_RELAYS", fallback.url()}}),
                                   {}}};
  ASSERT_TRUE(node.start()) << node.stderr_text();
  Thread thread(node);
  ASSERT_TRUE(fallback.seed(thread.elsewhere));
  thread.publish_to(node);
  ASSERT_TRUE(wait_until([&] { return stored_count(node.port(), {thread.elsewhere}) == 1; }, 40s))
      << sync_status(node.port()) << node.stderr_text();
  EXPECT_GT(index.stat("reqs"), 0) << "the index was asked first";
  // The root author's fallback inbox joins ordinary coverage; participants' is history-only.
  ASSERT_TRUE(wait_until([&] {
    auto roles = plus_roles(node.port(), fallback.url());
    return std::find(roles.begin(), roles.end(), "repository") != roles.end() &&
           std::find(roles.begin(), roles.end(), "history") != roles.end();
  })) << sync_status(node.port());
  EXPECT_TRUE(wait_until([&] {
    return relay_figure(node.port(), fallback.url(), "connection_attempts") >= 1;
  })) << sync_status(node.port());
  EXPECT_EQ(node.stop(), 0);
}

// Sync+ acts on a discovery answer when it arrives. The index knows no relay list and holds its
// answer about the root author until the test lets it go; the reply exists only on the fallback
// relay, and the reconciliation is an hour away: the reply can only come through the answer itself.
TEST(SyncPlusE2E, TheFallbackRelayIsUsedAsSoonAsTheIndexAnswers) {
  FaultPeer index, fallback;
  ASSERT_NE(index.port(), 0);
  ASSERT_NE(fallback.port(), 0);
  auto env = fast_sync_env();
  env.insert(env.end(), {{"NGIT_SYNC_PLUS_RECONCILE_SECS", "3600"},
                         {"NGIT_SYNC_PLUS_USER_INDEX_RELAYS", index.url()},
                         {"NGIT_SYNC_PLUS_FALLBACK_RELAYS", fallback.url()}});
  GraspdProcess node{GraspdOptions{env, {}}};
  ASSERT_TRUE(node.start()) << node.stderr_text();
  Thread thread(node);
  ASSERT_TRUE(index.control(R"({"hold_authors":[")" + nostr::to_hex(thread.issue.pubkey) + "\"]}"));
  ASSERT_TRUE(fallback.seed(thread.elsewhere));
  thread.publish_to(node);
  // The new root author is asked for when the thread reaches the inventory, not at the
  // reconciliation; the index holds that lookup.
  ASSERT_TRUE(wait_until([&] { return index.stat("held") >= 1; }, 10s))
      << sync_status(node.port()) << node.stderr_text();
  EXPECT_FALSE(wait_until([&] { return stored_count(node.port(), {thread.elsewhere}) == 1; }, 3s))
      << "nothing leads to the fallback relay before the index answers";
  EXPECT_EQ(fallback.stat("reqs"), 0);

  const auto answered = std::chrono::steady_clock::now();
  ASSERT_TRUE(index.control(R"({"hold_authors":[],"release":true})"));
  ASSERT_TRUE(wait_until([&] { return stored_count(node.port(), {thread.elsewhere}) == 1; }, 5s))
      << sync_status(node.port()) << node.stderr_text();
  const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::steady_clock::now() - answered);
  RecordProperty("reply_after_index_answer_ms", static_cast<int>(took.count()));
  std::printf("reply stored %lld ms after the index answered\n",
              static_cast<long long>(took.count()));
  EXPECT_GT(fallback.stat("reqs"), 0);
  EXPECT_EQ(node.stop(), 0);
}

TEST(SyncPlusE2E, DisabledSyncPlusDoesNoneOfThis) {
  FaultPeer index_off, index_on, outbox;
  ASSERT_NE(index_off.port(), 0);
  ASSERT_NE(index_on.port(), 0);
  ASSERT_NE(outbox.port(), 0);
  GraspdProcess off{GraspdOptions{plus_env({{"NGIT_SYNC_PLUS_ENABLED", "false"},
                                            {"NGIT_SYNC_PLUS_USER_INDEX_RELAYS", index_off.url()},
                                            {"NGIT_SYNC_PLUS_FALLBACK_RELAYS", outbox.url()}}),
                                  {}}};
  GraspdProcess on{
      GraspdOptions{plus_env({{"NGIT_SYNC_PLUS_USER_INDEX_RELAYS", index_on.url()}}), {}}};
  ASSERT_TRUE(off.start()) << off.stderr_text();
  ASSERT_TRUE(on.start()) << on.stderr_text();
  Thread thread_off(off), thread_on(on);
  auto list = relay_list_of_participant({{"r", outbox.url(), "write"}});
  ASSERT_TRUE(index_off.seed(list));
  ASSERT_TRUE(index_on.seed(list));
  thread_off.publish_to(off);
  thread_on.publish_to(on);
  // The enabled node, started alongside, gets the relay list: the disabled one had the same time.
  ASSERT_TRUE(wait_until([&] { return stored_count(on.port(), {list}) == 1; }, 40s))
      << sync_status(on.port()) << on.stderr_text();
  EXPECT_EQ(index_off.stat("reqs"), 0);
  EXPECT_EQ(index_off.stat("dials"), 0);
  EXPECT_EQ(stored_count(off.port(), {list}), 0u);
  EXPECT_EQ(nip11_grasps(off.port()), (std::vector<std::string>{"GRASP-01", "GRASP-02"}));
  rapidjson::Document doc;
  auto body = sync_status(off.port());
  doc.Parse(body.c_str(), body.size());
  ASSERT_FALSE(doc.HasParseError()) << body;
  EXPECT_FALSE(doc.HasMember("sync_plus")) << body;
  EXPECT_EQ(doc["control_connections"].Size(), 0u) << body;
  EXPECT_EQ(off.stop(), 0);
  EXPECT_EQ(on.stop(), 0);
}

}  // namespace
}  // namespace graspd::test
