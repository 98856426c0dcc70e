// GRASP-02 end to end with real processes on loopback: graspd syncing from
// another graspd and from the fault-injecting peer (tests/interop/
// fault_peer.mjs): historic layers 2 and 3 with pagination past a remote cap,
// live sync, hostile frames, rate limits, dropped connections with gap events,
// a first dial that fails, discovery through the bootstrap relay, URL variants,
// the own-relay and private-address guards, and a restart that resumes.
#include "tests/integration/sync_test_support.hpp"

namespace graspd::test {
namespace {

using namespace std::chrono_literals;

RepoFixture build_repo(const std::vector<std::string>& relays, int issues, int comments_each,
                       const std::string& d = "demo") {
  RepoFixture repo;
  auto t = now_seconds() - 10000;
  repo.announcement = announcement_listing(relays, d, t);
  for (int i = 0; i < issues; ++i) {
    repo.issues.push_back(issue_for(repo.address(), i, t + 10 + i));
    for (int c = 0; c < comments_each; ++c)
      repo.comments.push_back(comment_on(repo.issues.back(), i * 100 + c, t + 5000 + i * 10 + c));
  }
  return repo;
}

std::vector<nostr::Event> everything(const RepoFixture& repo) {
  std::vector<nostr::Event> out{repo.announcement};
  out.insert(out.end(), repo.issues.begin(), repo.issues.end());
  out.insert(out.end(), repo.comments.begin(), repo.comments.end());
  return out;
}

TEST(SyncE2E, GraspdSyncsHistoryAndLiveFromAnotherGraspdAndResumesAfterRestart) {
  GraspdProcess peer{GraspdOptions{{{"NGIT_SYNC_ENABLED", "false"}}, {}}};
  ASSERT_TRUE(peer.start()) << peer.stderr_text();
  GraspdProcess node{GraspdOptions{fast_sync_env(), {}}};
  ASSERT_TRUE(node.start()) << node.stderr_text();

  auto repo = build_repo({node.relay_url(), peer.relay_url()}, 3, 2);
  publish_all(peer.port(), everything(repo));
  publish_all(node.port(), {repo.announcement});

  // Layer 2 brings the issues; the self-subscriber then adds them as roots and
  // layer 3 brings their comments.
  auto all = everything(repo);
  ASSERT_TRUE(wait_until([&] { return stored_count(node.port(), all) == all.size(); }))
      << stored_count(node.port(), all) << " of " << all.size() << "\n"
      << sync_status(node.port()) << node.stderr_text();
  EXPECT_TRUE(wait_until([&] {
    return relay_figure(node.port(), peer.relay_url(), "repos_confirmed") == 1;
  })) << sync_status(node.port());

  // Live: a new comment on the peer arrives without any reconnect.
  auto live = comment_on(repo.issues[0], 999, now_seconds());
  publish_all(peer.port(), {live});
  EXPECT_TRUE(wait_until([&] { return stored_count(node.port(), {live}) == 1; }))
      << sync_status(node.port());

  // Never dials itself, although the announcement lists it.
  EXPECT_EQ(sync_status(node.port()).find(node.relay_url() + "\""), std::string::npos)
      << sync_status(node.port());

  // Restart: a comment published meanwhile arrives, and the history is not
  // fetched again (catch-up from the persisted sync state).
  ASSERT_EQ(node.stop(), 0) << node.stderr_text();
  auto gap = comment_on(repo.issues[1], 998, now_seconds());
  publish_all(peer.port(), {gap});
  ASSERT_TRUE(node.restart()) << node.stderr_text();
  ASSERT_TRUE(wait_until([&] { return stored_count(node.port(), {gap}) == 1; }))
      << sync_status(node.port());
  // The catch-up's first traffic report (once a second) carries the gap event.
  ASSERT_TRUE(wait_until(
      [&] { return relay_figure(node.port(), peer.relay_url(), "events_received") >= 1; }));
  auto received = relay_figure(node.port(), peer.relay_url(), "events_received");
  EXPECT_LT(received, static_cast<std::int64_t>(all.size()))
      << "after a restart only the recent window is fetched again";
  EXPECT_NE(node.stderr_text().find("resumed sync state"), std::string::npos);
  EXPECT_EQ(node.stop(), 0);
  EXPECT_EQ(peer.stop(), 0);
}

// A relay named by an announcement (on another host: 127.0.0.2) answers graspd's first REQ with a
// 256 MiB NOTICE of one letter, ~250 KiB once compressed over the permessage-deflate graspd
// offered. graspd inflates no further than its message limit (NGIT_MAX_MESSAGE_BYTES, 1 MiB),
// drops that connection, and syncs over the next one; its memory never holds the bomb.
TEST(SyncE2E, APeersDecompressionBombEndsOnlyThatConnectionAndMemoryStaysBounded) {
  FaultPeer peer("127.0.0.2");
  ASSERT_NE(peer.port(), 0) << "fault peer did not start (node + tests/interop/node_modules?)";
  GraspdProcess node{GraspdOptions{fast_sync_env(), {}}};
  ASSERT_TRUE(node.start()) << node.stderr_text();
  auto repo = build_repo({node.relay_url(), peer.url()}, 10, 0);
  for (const auto& ev : everything(repo)) ASSERT_TRUE(peer.seed(ev));
  constexpr std::size_t kBombBytes = std::size_t{256} << 20;
  ASSERT_TRUE(peer.control("{\"bomb_bytes\":" + std::to_string(kBombBytes) + "}"));
  const auto before_kib = node.resident_kib();

  publish_all(node.port(), {repo.announcement});
  const auto all = everything(repo);
  ASSERT_TRUE(wait_until([&] { return stored_count(node.port(), all) == all.size(); }, 60s))
      << stored_count(node.port(), all) << " of " << all.size() << "\n"
      << sync_status(node.port()) << node.stderr_text();
  EXPECT_EQ(peer.stat("bombs"), 1);
  EXPECT_GE(peer.stat("compressed_connections"), 1) << "the bomb travelled compressed";
  EXPECT_GE(peer.stat("connections"), 2) << "the bombed connection was dropped and dialled again";
  const auto peak_kib = node.peak_resident_kib();
  EXPECT_LT(peak_kib, before_kib + 64 * 1024)
      << "peak " << peak_kib << " KiB against " << before_kib << " KiB before the bomb";
  EXPECT_EQ(node.stop(), 0) << node.stderr_text();
}

TEST(SyncE2E, PaginatesPastARemoteCapAndSurvivesHostilePeerBehaviour) {
  FaultPeer peer;
  ASSERT_NE(peer.port(), 0) << "fault peer did not start (node + tests/interop/node_modules?)";
  GraspdProcess node{GraspdOptions{fast_sync_env(), {}}};
  ASSERT_TRUE(node.start()) << node.stderr_text();

  auto repo = build_repo({node.relay_url(), peer.url()}, 65, 0);
  for (int i = 0; i < 3; ++i)
    for (int c = 0; c < 30; ++c)
      repo.comments.push_back(
          comment_on(repo.issues[i], 1000 + i * 100 + c, now_seconds() - 500 + c));
  {
    auto events = everything(repo);
    for (std::size_t i = 0; i < events.size(); ++i) ASSERT_TRUE(peer.seed(events[i])) << i;
  }

  auto forged = issue_for(repo.address(), 900, now_seconds() - 100);
  forged.content = "tampered after signing";
  auto huge = issue_for(repo.address(), 901, now_seconds() - 100);
  huge.content = std::string(600 * 1024, 'x');
  huge = nostr::sign_event(huge, secret_key(21));
  ASSERT_TRUE(
      peer.control("{\"cap\":20,\"garbage_frames\":2,\"rate_limit_reqs\":2,\"raw_events\":[" +
                   nostr::serialize_event(forged) + "," + nostr::serialize_event(huge) + "]}"));

  publish_all(node.port(), {repo.announcement});
  auto all = everything(repo);
  ASSERT_TRUE(wait_until([&] { return stored_count(node.port(), all) == all.size(); }, 60s))
      << stored_count(node.port(), all) << " of " << all.size() << "\n"
      << sync_status(node.port());
  EXPECT_EQ(stored_count(node.port(), {forged}), 0u);
  EXPECT_EQ(stored_count(node.port(), {huge}), 0u);
  EXPECT_TRUE(wait_until([&] {
    return relay_figure(node.port(), peer.url(), "events_invalid") >= 2 &&
           relay_figure(node.port(), peer.url(), "pages") > 0;
  })) << sync_status(node.port());

  // Drop every connection and refuse new ones for a while; events published
  // meanwhile (the gap) arrive after the quick reconnect.
  ASSERT_TRUE(
      peer.control("{\"raw_events\":[],\"garbage_frames\":0,\"refuse_for_ms\":1500,"
                   "\"drop_all\":true}"));
  std::vector<nostr::Event> gap;
  for (int i = 0; i < 5; ++i) gap.push_back(issue_for(repo.address(), 500 + i, now_seconds()));
  for (const auto& ev : gap) ASSERT_TRUE(peer.seed(ev));
  EXPECT_TRUE(wait_until([&] { return stored_count(node.port(), gap) == gap.size(); }, 30s))
      << sync_status(node.port());
  EXPECT_TRUE(wait_until([&] {
    return relay_figure(node.port(), peer.url(), "connection_attempts") >= 2;
  })) << sync_status(node.port());
  EXPECT_EQ(node.stop(), 0) << node.stderr_text();
}

TEST(SyncE2E, StaleReconnectIsAFreshSync) {
  FaultPeer peer;
  ASSERT_NE(peer.port(), 0);
  auto env = fast_sync_env();
  env.emplace_back("NGIT_SYNC_QUICK_RECONNECT_SECS", "1");
  GraspdProcess node{GraspdOptions{env, {}}};
  ASSERT_TRUE(node.start()) << node.stderr_text();
  auto repo = build_repo({node.relay_url(), peer.url()}, 10, 1);
  for (const auto& ev : everything(repo)) ASSERT_TRUE(peer.seed(ev));
  publish_all(node.port(), {repo.announcement});
  auto all = everything(repo);
  ASSERT_TRUE(wait_until([&] { return stored_count(node.port(), all) == all.size(); }))
      << sync_status(node.port());
  ASSERT_TRUE(wait_until([&] {
    return relay_figure(node.port(), peer.url(), "events_received") >=
           static_cast<std::int64_t>(repo.issues.size() + repo.comments.size());
  })) << sync_status(node.port());
  auto before = relay_figure(node.port(), peer.url(), "events_received");
  // Down for longer than the quick window: the reconnect fetches the whole
  // history again instead of catching up from the last connection.
  ASSERT_TRUE(peer.control("{\"refuse_for_ms\":2500,\"drop_all\":true}"));
  EXPECT_TRUE(wait_until(
      [&] {
        return relay_figure(node.port(), peer.url(), "events_received") >=
               before + static_cast<std::int64_t>(repo.issues.size() + repo.comments.size());
      },
      30s))
      << before << "\n"
      << sync_status(node.port());
  EXPECT_EQ(node.stop(), 0);
}

TEST(SyncE2E, DiscoversThroughBootstrapRelayAfterAFailedFirstDial) {
  FaultPeer peer;
  ASSERT_NE(peer.port(), 0);
  // The node's port is only known once it runs, so reserve the announcement's
  // host by starting the node first, then seed the peer and refuse dials.
  auto env = fast_sync_env();
  env.emplace_back("NGIT_SYNC_BOOTSTRAP_RELAY_URL", peer.url());
  ASSERT_TRUE(peer.control("{\"refuse_for_ms\":2500}"));
  GraspdProcess node{GraspdOptions{env, {}}};
  ASSERT_TRUE(node.start()) << node.stderr_text();
  // The announcement exists only on the bootstrap relay.
  auto repo = build_repo({node.relay_url(), peer.url()}, 4, 1);
  ASSERT_TRUE(wait_until([&] { return peer.seed(repo.announcement); }, 10s));
  for (const auto& ev : everything(repo)) ASSERT_TRUE(peer.seed(ev));
  auto all = everything(repo);
  ASSERT_TRUE(wait_until([&] { return stored_count(node.port(), all) == all.size(); }, 40s))
      << sync_status(node.port()) << node.stderr_text();
  EXPECT_TRUE(wait_until([&] {
    return relay_figure(node.port(), peer.url(), "connection_attempts") >= 2;
  })) << "the first dial was refused\n"
      << sync_status(node.port());
  EXPECT_NE(sync_status(node.port()).find("\"bootstrap\":true"), std::string::npos);
  EXPECT_EQ(node.stop(), 0);
}

TEST(SyncE2E, UrlVariantsAreOneRelayAndPrivateAddressesAreNotDialledByDefault) {
  FaultPeer peer;
  ASSERT_NE(peer.port(), 0);
  GraspdProcess node{GraspdOptions{{{"NGIT_SYNC_BATCH_WINDOW_MS", "100"}}, {}}};
  ASSERT_TRUE(node.start()) << node.stderr_text();
  auto variant = "WS://127.0.0.1:" + std::to_string(peer.port()) + "/";
  auto repo = build_repo({node.relay_url(), peer.url(), variant}, 1, 0);
  publish_all(node.port(), {repo.announcement});
  ASSERT_TRUE(wait_until([&] {
    auto status = sync_status(node.port());
    return status.find("non-public") != std::string::npos;
  })) << sync_status(node.port());
  auto status = sync_status(node.port());
  std::size_t entries = 0;
  for (auto at = status.find("\"url\":"); at != std::string::npos;
       at = status.find("\"url\":", at + 1))
    ++entries;
  EXPECT_EQ(entries, 1u) << status;
  EXPECT_NE(status.find("\"url\":\"" + peer.url() + "\""), std::string::npos) << status;
  EXPECT_EQ(peer.stat("reqs"), 0) << "127.0.0.1 is private: never dialled";
  EXPECT_EQ(node.stop(), 0);
}

TEST(SyncE2E, LiveCoverageKeepsToThePeersAdvertisedValueBudgetAndItsHistoryGetsThrough) {
  // The peer closes REQs past 2,000 filter values per connection and says so in NIP-11; 700 threads
  // need ~2,100 (#e, #E, #q per root) before any fetch. The node keeps its live coverage within
  // 1,000 (half is left for fetches), so every thread it covers gets its comment by history, and
  // counts the ones it left out.
  GraspdProcess peer{GraspdOptions{
      {{"NGIT_SYNC_ENABLED", "false"}, {"NGIT_MAX_SUBSCRIPTION_VALUES", "2000"}}, {}}};
  ASSERT_TRUE(peer.start()) << peer.stderr_text();
  GraspdProcess node{GraspdOptions{fast_sync_env(), {}}};
  ASSERT_TRUE(node.start()) << node.stderr_text();
  constexpr int threads = 700;
  auto repo = build_repo({node.relay_url(), peer.relay_url()}, threads, 1);
  publish_all(peer.port(), everything(repo));
  publish_all(node.port(), {repo.announcement});

  ASSERT_TRUE(wait_until([&] { return stored_count(node.port(), repo.issues) == threads; }, 30s))
      << sync_status(node.port());
  std::int64_t covered = 0, left_out = 0;
  ASSERT_TRUE(wait_until(
      [&] {
        covered = relay_figure(node.port(), peer.relay_url(), "roots_confirmed");
        left_out = sync_total(node.port(), "over_value_budget");
        return covered + left_out == threads &&
               relay_figure(node.port(), peer.relay_url(), "pending_batches") == 0;
      },
      30s))
      << sync_status(node.port());
  EXPECT_GT(left_out, 0);
  EXPECT_GT(covered, 250) << "the budget is used";
  EXPECT_TRUE(wait_until(
      [&] {
        return static_cast<std::int64_t>(stored_count(node.port(), repo.comments)) == covered;
      },
      20s))
      << stored_count(node.port(), repo.comments) << " comments for " << covered << " threads\n"
      << sync_status(node.port());
  EXPECT_EQ(node.stop(), 0);
  EXPECT_EQ(peer.stop(), 0);
}

TEST(SyncE2E, ConsolidationBoundsOpenSubscriptionsOnThePeer) {
  FaultPeer peer;
  ASSERT_NE(peer.port(), 0);
  auto env = fast_sync_env();
  env.emplace_back("NGIT_SYNC_CONSOLIDATION_THRESHOLD", "12");
  GraspdProcess node{GraspdOptions{env, {}}};
  ASSERT_TRUE(node.start()) << node.stderr_text();
  auto repo = build_repo({node.relay_url(), peer.url()}, 0, 0);
  publish_all(node.port(), {repo.announcement});
  ASSERT_TRUE(wait_until([&] {
    return relay_figure(node.port(), peer.url(), "repos_confirmed") == 1;
  })) << sync_status(node.port());
  // Roots arrive one batch at a time: every batch adds e/E/q filters.
  for (int i = 0; i < 12; ++i) {
    publish_all(node.port(), {issue_for(repo.address(), i, now_seconds() - 100 + i)});
    std::this_thread::sleep_for(200ms);
  }
  ASSERT_TRUE(wait_until([&] {
    return relay_figure(node.port(), peer.url(), "roots_confirmed") == 12 &&
           relay_figure(node.port(), peer.url(), "pending_batches") == 0;
  })) << sync_status(node.port());
  EXPECT_GE(relay_figure(node.port(), peer.url(), "consolidations"), 1);
  EXPECT_LE(relay_figure(node.port(), peer.url(), "open_filters"), 12);
  EXPECT_LE(peer.stat("open_subscriptions"), 4) << "layer 1 plus the consolidated filters";
  EXPECT_EQ(node.stop(), 0);
}

}  // namespace
}  // namespace graspd::test
