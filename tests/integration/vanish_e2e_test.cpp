// NIP-62 requests to vanish end to end (docs/store.md "Requests to vanish"): under the GRASP-01
// policy a kind 62 naming this relay removes its author's events and keeps them out afterwards,
// from clients and from sync; one naming another relay only is refused.
#include <gtest/gtest.h>

#include <filesystem>

#include "messages/nostr/nip19.hpp"
#include "tests/integration/sync_test_support.hpp"

namespace graspd::test {
namespace {

constexpr std::uint8_t vanishing_key = 21;
constexpr std::uint8_t staying_key = 22;
constexpr std::int64_t vanish_t0 = 1700000000;

std::string hex_of_key(std::uint8_t key) {
  return nostr::to_hex(*nostr::pubkey_from_secret(secret_key(key)));
}

class VanishE2E : public ::testing::Test {
 protected:
  void SetUp() override {
    graspd_ = std::make_unique<GraspdProcess>(GraspdOptions{{{"NGIT_SYNC_ENABLED", "false"}}, {}});
    ASSERT_TRUE(graspd_->start()) << graspd_->stderr_text();
    client_ = TestClient::connect(graspd_->port());
    ASSERT_TRUE(client_);
  }
  void TearDown() override {
    client_.reset();
    if (graspd_ && graspd_->running()) {
      EXPECT_EQ(graspd_->stop(), 0) << graspd_->stderr_text();
    }
  }

  std::string host() const { return "127.0.0.1:" + std::to_string(graspd_->port()); }

  nostr::Event announcement(std::uint8_t key, const std::string& d, std::int64_t created_at) {
    auto npub = nostr::encode_npub(*nostr::pubkey_from_secret(secret_key(key)));
    return make_event(30617, "",
                      {{"d", d},
                       {"clone", "http://" + host() + "/" + npub + "/" + d + ".git"},
                       {"relays", "ws://" + host()}},
                      created_at, key);
  }

  std::vector<nostr::EventId> stored_by(std::uint8_t key) {
    // On a connection of its own, closed after EOSE: a subscription left open would deliver the
    // author's next events live to the publishing connection.
    auto reader = TestClient::connect(graspd_->port());
    if (!reader) return {};
    auto events = reader->query("q", "{\"authors\":[\"" + hex_of_key(key) + "\"]}");
    std::vector<nostr::EventId> ids;
    for (const auto& ev : events.value_or(std::vector<nostr::Event>{})) ids.push_back(ev.id);
    return ids;
  }

  std::unique_ptr<GraspdProcess> graspd_;
  std::unique_ptr<TestClient> client_;
};

TEST_F(VanishE2E, ARequestNamingThisRelayRemovesAndRefusesTheAuthorsEvents) {
  auto repo = announcement(vanishing_key, "repo", vanish_t0);
  auto issue =
      make_event(1621, "bug", {{"a", nostr::address_of(repo)}}, vanish_t0 + 10, vanishing_key);
  auto others = announcement(staying_key, "repo", vanish_t0);
  auto comment =
      make_event(1111, "me too", {{"E", nostr::to_hex(issue.id)}}, vanish_t0 + 20, staying_key);
  for (const auto& ev : {repo, issue, others, comment}) {
    auto ok = client_->publish(ev);
    ASSERT_TRUE(ok && ok->accepted) << (ok ? ok->message : "no OK");
  }
  // Another relay only: refused, nothing removed.
  auto elsewhere =
      make_event(62, "", {{"relay", "wss://relay.example.com"}}, vanish_t0 + 100, vanishing_key);
  auto refused = client_->publish(elsewhere);
  ASSERT_TRUE(refused);
  EXPECT_FALSE(refused->accepted);
  EXPECT_EQ(refused->message.rfind("blocked:", 0), 0u) << refused->message;
  EXPECT_EQ(stored_by(vanishing_key).size(), 2u);

  auto request =
      make_event(62, "please", {{"relay", "ws://" + host()}}, vanish_t0 + 100, vanishing_key);
  auto ok = client_->publish(request);
  ASSERT_TRUE(ok && ok->accepted) << (ok ? ok->message : "no OK");
  EXPECT_EQ(stored_by(vanishing_key), std::vector<nostr::EventId>{request.id});
  EXPECT_EQ(stored_by(staying_key).size(), 2u) << "another author's events stay";

  // The author's older events are refused from now on, newer ones judged as usual.
  auto again = client_->publish(repo);
  ASSERT_TRUE(again);
  EXPECT_FALSE(again->accepted);
  EXPECT_EQ(again->message.rfind("blocked:", 0), 0u) << again->message;
  auto later = announcement(vanishing_key, "repo", vanish_t0 + 200);
  auto accepted = client_->publish(later);
  ASSERT_TRUE(accepted && accepted->accepted) << (accepted ? accepted->message : "no OK");
  // A deletion request against the request to vanish has no effect.
  auto undo = make_event(5, "", {{"e", nostr::to_hex(request.id)}}, vanish_t0 + 300, vanishing_key);
  client_->publish(undo);
  auto after_undo = client_->publish(
      make_event(1621, "x", {{"a", nostr::address_of(later)}}, vanish_t0 + 50, vanishing_key));
  ASSERT_TRUE(after_undo);
  EXPECT_FALSE(after_undo->accepted);

  auto nip11 = http_get(graspd_->port(), "/", {{"Accept", "application/nostr+json"}});
  EXPECT_NE(nip11.body.find(",62,"), std::string::npos) << nip11.body;
  // The request survives a restart, and with it the refusal.
  client_.reset();
  ASSERT_TRUE(graspd_->stop() == 0 && graspd_->restart()) << graspd_->stderr_text();
  client_ = TestClient::connect(graspd_->port());
  ASSERT_TRUE(client_);
  auto after_restart = client_->publish(repo);
  ASSERT_TRUE(after_restart);
  EXPECT_FALSE(after_restart->accepted);
}

TEST(VanishHeldE2E, ARequestToVanishEndsTheHoldOfAHeldAnnouncementAndRemovesItsRepository) {
  GraspdProcess graspd{GraspdOptions{{{"NGIT_SYNC_ENABLED", "false"}}, {}, true}};
  ASSERT_TRUE(graspd.start()) << graspd.stderr_text();
  auto host = "127.0.0.1:" + std::to_string(graspd.port());
  auto npub = nostr::encode_npub(*nostr::pubkey_from_secret(secret_key(vanishing_key)));
  auto repo = make_event(30617, "",
                         {{"d", "held"},
                          {"clone", "http://" + host + "/" + npub + "/held.git"},
                          {"relays", "ws://" + host}},
                         vanish_t0, vanishing_key);
  auto client = TestClient::connect(graspd.port());
  ASSERT_TRUE(client);
  auto held = client->publish(repo);
  ASSERT_TRUE(held && held->accepted) << (held ? held->message : "no OK");
  auto metrics = [&] { return http_get(graspd.port(), "/metrics").body; };
  ASSERT_EQ(metric_value(metrics(), "graspd_purgatory_events{kind=\"announcement\"}"), 1);
  const auto repository = graspd.work_dir() + "/git/" + npub + "/held.git";
  ASSERT_TRUE(std::filesystem::exists(repository));

  auto request = make_event(62, "", {{"relay", "ALL_RELAYS"}}, vanish_t0 + 10, vanishing_key);
  auto ok = client->publish(request);
  ASSERT_TRUE(ok && ok->accepted) << (ok ? ok->message : "no OK");
  EXPECT_TRUE(wait_until(
      [&] {
        return metric_value(metrics(), "graspd_purgatory_events{kind=\"announcement\"}") == 0 &&
               !std::filesystem::exists(repository);
      },
      std::chrono::seconds(10)))
      << graspd.stderr_text();
  EXPECT_EQ(graspd.stop(), 0) << graspd.stderr_text();
}

TEST(VanishSyncE2E, AVanishedAuthorsEventsDoNotComeBackBySync) {
  GraspdProcess peer{GraspdOptions{{{"NGIT_SYNC_ENABLED", "false"}}, {}}};
  ASSERT_TRUE(peer.start()) << peer.stderr_text();
  GraspdProcess node{GraspdOptions{fast_sync_env(), {}}};
  ASSERT_TRUE(node.start()) << node.stderr_text();
  auto written = now_seconds() - 1000;
  auto repo = announcement_listing({node.relay_url(), peer.relay_url()}, "vanish", written);
  auto address = nostr::address_of(repo);
  auto gone = issue_for(address, 0, written + 1);  // by key 20
  auto kept = issue_for(address, 1, written + 2);  // by key 21
  // Key 20 asks the node to vanish after writing its issue; the peer never heard of it.
  auto request = make_event(62, "", {{"relay", node.relay_url()}}, now_seconds(), 20);
  publish_all(node.port(), {request, repo});
  publish_all(peer.port(), {repo, gone, kept});
  auto refused = [&] {
    return metric_value(http_get(node.port(), "/metrics").body,
                        "graspd_policy_rule_total{rule=\"author_vanished\"}");
  };
  ASSERT_TRUE(wait_until([&] { return stored_count(node.port(), {kept}) == 1 && refused() >= 1; }))
      << sync_status(node.port()) << node.stderr_text();
  EXPECT_EQ(stored_count(node.port(), {gone}), 0u);
  EXPECT_EQ(node.stop(), 0);
  EXPECT_EQ(peer.stop(), 0);
}

}  // namespace
}  // namespace graspd::test
