// GRASP-02 history by NIP-77 end to end: graspd against a peer that answers
// NIP-77 with the nostr-tools port and caps every REQ answer at 100
// (tests/interop/fault_peer.mjs), against a peer that refuses it with strfry's
// NOTICE, against one whose NIP-11 does not list it, and against another
// graspd: every event arrives, only missing ones travel, and /api/sync says
// which method each relay's history uses.
#include "tests/integration/sync_test_support.hpp"

namespace graspd::test {
namespace {

/// An announcement listing `relays` and `count` issues all on one created_at.
std::vector<nostr::Event> issues_on_one_second(const std::vector<std::string>& relays, int count) {
  const auto t = now_seconds() - 5000;
  std::vector<nostr::Event> out{announcement_listing(relays, "demo", t)};
  const auto address = nostr::address_of(out.front());
  for (int i = 0; i < count; ++i) out.push_back(issue_for(address, i, t + 10));
  return out;
}

/// The peer holds all of `events`, the node the announcement and about half the issues; true once
/// the node holds them all (within 60 s).
bool node_catches_up(const GraspdProcess& peer, const GraspdProcess& node,
                     const std::vector<nostr::Event>& events) {
  publish_all(peer.port(), events);
  publish_all(node.port(),
              std::vector<nostr::Event>(events.begin(), events.begin() + events.size() / 2 + 1));
  return wait_until([&] { return stored_count(node.port(), events) == events.size(); },
                    std::chrono::seconds(60));
}

void seed_all(FaultPeer& peer, const std::vector<nostr::Event>& events) {
  for (const auto& ev : events) ASSERT_TRUE(peer.seed(ev));
}

TEST(SyncNegentropyE2E, AThousandEventsOnOneSecondArriveThroughAPeerCappingAt100) {
  FaultPeer peer;
  ASSERT_TRUE(peer.control("{\"cap\":100,\"negentropy\":true}"));
  GraspdProcess node{GraspdOptions{fast_sync_env(), {}}};
  ASSERT_TRUE(node.start()) << node.stderr_text();

  auto events = issues_on_one_second({node.relay_url(), peer.url()}, 1000);
  seed_all(peer, events);
  // Our copy of the announcement (and 100 issues) is there before the sync: it is not fetched.
  publish_all(node.port(), std::vector<nostr::Event>(events.begin(), events.begin() + 101));

  ASSERT_TRUE(wait_until([&] { return stored_count(node.port(), events) == events.size(); },
                         std::chrono::seconds(60)))
      << stored_count(node.port(), events) << " of " << events.size() << "\n"
      << sync_status(node.port()) << node.stderr_text();
  // /api/sync is published once a second.
  EXPECT_TRUE(wait_until([&] {
    return relay_history_method(node.port(), peer.url()) == "negentropy" &&
           relay_figure(node.port(), peer.url(), "ids_needed") >= 900;
  })) << sync_status(node.port());
  EXPECT_GT(relay_figure(node.port(), peer.url(), "negentropy_rounds"), 0);
  EXPECT_GT(peer.stat("neg_opens"), 0);
  EXPECT_GT(peer.stat("id_reqs"), 0);
  // What we held did not travel again: the peer sent the 900 missing issues and at most the
  // few events a live subscription or a retried batch repeats.
  EXPECT_LT(peer.stat("events_sent"), 1000) << sync_status(node.port());
}

/// A peer capping REQ answers at 20 (and configured by `control`) holds 60 issues spread over
/// time; `node` knows the announcement and one issue (so the issues filter is offered by NEG-OPEN
/// where the peer may be asked) and must page everything else in by REQ.
void expect_paged_by_req(FaultPeer& peer, GraspdProcess& node) {
  auto events = issues_on_one_second({node.relay_url(), peer.url()}, 0);
  const auto address = nostr::address_of(events.front());
  for (int i = 0; i < 60; ++i) events.push_back(issue_for(address, i, now_seconds() - 4000 + i));
  seed_all(peer, events);
  publish_all(node.port(), {events.front(), events.back()});
  ASSERT_TRUE(wait_until([&] { return stored_count(node.port(), events) == events.size(); },
                         std::chrono::seconds(60)))
      << stored_count(node.port(), events) << " of " << events.size() << "\n"
      << sync_status(node.port()) << node.stderr_text();
  EXPECT_TRUE(wait_until([&] {
    return relay_history_method(node.port(), peer.url()) == "req" &&
           relay_figure(node.port(), peer.url(), "pages") > 0;
  })) << sync_status(node.port());
}

TEST(SyncNegentropyE2E, APeerRefusingNip77WithANoticeIsPagedByReq) {
  FaultPeer peer;
  ASSERT_TRUE(peer.control("{\"cap\":20,\"negentropy_notice\":true}"));
  GraspdProcess node{GraspdOptions{fast_sync_env(), {}}};
  ASSERT_TRUE(node.start()) << node.stderr_text();
  expect_paged_by_req(peer, node);
}

TEST(SyncNegentropyE2E, APeerWhoseNip11LacksNip77IsNotAsked) {
  FaultPeer peer;
  ASSERT_TRUE(peer.control("{\"cap\":20}"));
  GraspdProcess node{GraspdOptions{fast_sync_env(), {}}};
  ASSERT_TRUE(node.start()) << node.stderr_text();
  expect_paged_by_req(peer, node);
  EXPECT_EQ(peer.stat("neg_opens"), 0);
}

TEST(SyncNegentropyE2E, GraspdReconcilesWithGraspd) {
  GraspdProcess peer{GraspdOptions{{{"NGIT_SYNC_ENABLED", "false"}}, {}}};
  ASSERT_TRUE(peer.start()) << peer.stderr_text();
  GraspdProcess node{GraspdOptions{fast_sync_env(), {}}};
  ASSERT_TRUE(node.start()) << node.stderr_text();

  auto events = issues_on_one_second({node.relay_url(), peer.relay_url()}, 300);
  ASSERT_TRUE(node_catches_up(peer, node, events))
      << sync_status(node.port()) << node.stderr_text();
  EXPECT_TRUE(wait_until([&] {
    return relay_history_method(node.port(), peer.relay_url()) == "negentropy" &&
           relay_figure(node.port(), peer.relay_url(), "ids_needed") >= 150;
  })) << sync_status(node.port());
  const auto needed = relay_figure(node.port(), peer.relay_url(), "ids_needed");
  EXPECT_TRUE(needed >= 150 && needed < 300) << needed << "\n" << sync_status(node.port());
  // A relay named by an announcement is offered permessage-deflate, and graspd agrees.
  EXPECT_EQ(relay_flag(node.port(), peer.relay_url(), "compression"), true)
      << sync_status(node.port());
}

TEST(SyncNegentropyE2E, WithSyncCompressionOffTheMissingEventsArriveOverAPlainConnection) {
  GraspdProcess peer{GraspdOptions{{{"NGIT_SYNC_ENABLED", "false"}}, {}}};
  ASSERT_TRUE(peer.start()) << peer.stderr_text();
  auto env = fast_sync_env();
  env.emplace_back("NGIT_SYNC_WEBSOCKET_COMPRESSION", "false");
  GraspdProcess node{GraspdOptions{env, {}}};
  ASSERT_TRUE(node.start()) << node.stderr_text();

  auto events = issues_on_one_second({node.relay_url(), peer.relay_url()}, 40);
  ASSERT_TRUE(node_catches_up(peer, node, events))
      << sync_status(node.port()) << node.stderr_text();
  // /api/sync is refreshed on its own schedule: wait for the connection to show there.
  EXPECT_TRUE(wait_until([&] {
    return relay_text(node.port(), peer.relay_url(), "status") == "connected";
  })) << sync_status(node.port());
  EXPECT_EQ(relay_flag(node.port(), peer.relay_url(), "compression"), false)
      << sync_status(node.port());
}

TEST(SyncNegentropyE2E, FromEmptyTheIssuesArePagedAndTheSecondPastThePeersCapIsReconciled) {
  // The node holds nothing of the issues: they are paged by REQ (no NEG round per filter). 200 of
  // them share one second behind a peer answering at most 50 a filter (NIP-11 max_limit), past
  // what REQ pages reach; that second alone is reconciled by NIP-77 after the pages.
  GraspdProcess peer{GraspdOptions{{{"NGIT_SYNC_ENABLED", "false"}, {"NGIT_MAX_LIMIT", "50"}}, {}}};
  ASSERT_TRUE(peer.start()) << peer.stderr_text();
  GraspdProcess node{GraspdOptions{fast_sync_env(), {}}};
  ASSERT_TRUE(node.start()) << node.stderr_text();
  auto events = issues_on_one_second({node.relay_url(), peer.relay_url()}, 200);
  const auto address = nostr::address_of(events.front());
  const auto flood = events.back().created_at;
  for (int i = 0; i < 30; ++i) events.push_back(issue_for(address, 1000 + i, flood - 1 - i % 5));
  publish_all(peer.port(), events);
  publish_all(node.port(), {events.front()});

  ASSERT_TRUE(wait_until([&] { return stored_count(node.port(), events) == events.size(); },
                         std::chrono::seconds(60)))
      << stored_count(node.port(), events) << " of " << events.size() << "\n"
      << sync_status(node.port()) << node.stderr_text();
  EXPECT_TRUE(wait_until([&] {
    return relay_history_method(node.port(), peer.relay_url()) == "negentropy" &&
           relay_figure(node.port(), peer.relay_url(), "pages") > 0 &&
           relay_figure(node.port(), peer.relay_url(), "ids_needed") >= 150;
  })) << sync_status(node.port());
  // At most the flood's 200 (fewer when the paged 50 were stored before the session began): the
  // older issues were paged, not reconciled.
  EXPECT_LE(relay_figure(node.port(), peer.relay_url(), "ids_needed"), 200)
      << sync_status(node.port());
}

TEST(SyncNegentropyE2E, APeerCappingSubscriptionsStillGetsAskedForEveryMissingEvent) {
  // The peer holds at most 5 REQs per connection (NIP-11 max_subscriptions) and 10 filters per
  // REQ; 20 repositories of 30 issues need more live filters than that holds at 100 references a
  // filter. The node keeps its live REQs within the cap less two, so its NIP-77 id fetches
  // always find a slot.
  GraspdProcess peer{GraspdOptions{
      {{"NGIT_SYNC_ENABLED", "false"}, {"NGIT_MAX_SUBSCRIPTIONS", "5"}, {"NGIT_MAX_FILTERS", "10"}},
      {}}};
  ASSERT_TRUE(peer.start()) << peer.stderr_text();
  GraspdProcess node{GraspdOptions{fast_sync_env(), {}}};
  ASSERT_TRUE(node.start()) << node.stderr_text();
  const auto t = now_seconds() - 5000;
  std::vector<nostr::Event> announcements, everything;
  for (int r = 0; r < 20; ++r) {
    auto announcement =
        announcement_listing({node.relay_url(), peer.relay_url()}, "repo" + std::to_string(r), t);
    announcements.push_back(announcement);
    everything.push_back(announcement);
    for (int i = 0; i < 30; ++i)
      everything.push_back(issue_for(nostr::address_of(announcement), r * 100 + i, t + 10 + i));
  }
  publish_all(peer.port(), everything);
  publish_all(node.port(), announcements);
  ASSERT_TRUE(wait_until([&] { return stored_count(node.port(), everything) == everything.size(); },
                         std::chrono::seconds(90)))
      << stored_count(node.port(), everything) << " of " << everything.size() << "\n"
      << sync_status(node.port());
  // /api/sync trails the plan by up to a status interval.
  EXPECT_TRUE(wait_until(
      [&] { return relay_figure(node.port(), peer.relay_url(), "open_subscriptions") <= 3; },
      std::chrono::seconds(10)))
      << "live REQs stay within the cap less two: " << sync_status(node.port());
}

}  // namespace
}  // namespace graspd::test
