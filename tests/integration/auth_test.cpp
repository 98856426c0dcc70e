// NIP-42 AUTH, NIP-70 protected events and the credential kinds end to end
// (docs/relay.md "Authentication"): nostr-tools (tests/interop/auth_client.mjs) against the real
// binary with the GRASP-01 policy, then the sync path: a protected event offered by a peer relay
// (the fault peer of tests/interop/fault_peer.mjs) is not stored and is counted.
#include <gtest/gtest.h>

#include <string>

#include "tests/integration/interop_support.hpp"
#include "tests/integration/sync_test_support.hpp"
#include "tests/support/graspd_process.hpp"
#include "tests/support/http_client.hpp"

namespace graspd::test {
namespace {

double auth_count(const std::string& metrics, const char* outcome) {
  return metric_value(metrics, std::string("graspd_relay_auth_total{outcome=\"") + outcome + "\"}");
}

TEST(AuthE2E, NostrToolsAuthenticatesForProtectedEventsAndCredentialsAreRefused) {
  ASSERT_TRUE(std::filesystem::exists(interop_dir() / "node_modules" / "nostr-tools"))
      << "run deploy/install-deps.sh (npm ci in tests/interop)";
  GraspdProcess graspd{GraspdOptions{{{"NGIT_SYNC_ENABLED", "false"}}, {}}};
  ASSERT_TRUE(graspd.start()) << graspd.stderr_text();
  int status = -1;
  auto output = run_command("cd '" + interop_dir().string() +
                                "' && timeout 60 node auth_client.mjs " + graspd.relay_url(),
                            status);
  EXPECT_EQ(status, 0) << output;
  EXPECT_EQ(output.find("fail"), std::string::npos) << output;
  EXPECT_NE(output.find("ok nostr-tools publishes the protected event after AUTH"),
            std::string::npos)
      << output;

  auto metrics = http_get(graspd.port(), "/metrics").body;
  EXPECT_EQ(auth_count(metrics, "ok"), 2) << metrics;
  EXPECT_EQ(auth_count(metrics, "bad_challenge"), 2) << "before any challenge, wrong challenge";
  EXPECT_EQ(auth_count(metrics, "bad_relay"), 1);
  EXPECT_EQ(auth_count(metrics, "stale"), 1);
  EXPECT_EQ(auth_count(metrics, "bad_sig"), 1);
  EXPECT_EQ(auth_count(metrics, "too_many"), 0);
  EXPECT_EQ(metric_value(metrics, "graspd_relay_protected_refused_total{reason=\"auth_required\"}"),
            2);
  EXPECT_EQ(metric_value(metrics, "graspd_relay_protected_refused_total{reason=\"restricted\"}"),
            1);

  auto nip11 = http_get(graspd.port(), "/", {{"Accept", "application/nostr+json"}}).body;
  EXPECT_NE(nip11.find("42,"), std::string::npos) << nip11;
  EXPECT_NE(nip11.find("70,"), std::string::npos) << nip11;
  EXPECT_NE(nip11.find("\"auth_required\":false"), std::string::npos) << nip11;
  EXPECT_NE(nip11.find("\"restricted_writes\":true"), std::string::npos) << nip11;
  EXPECT_EQ(graspd.stop(), 0) << graspd.stderr_text();
}

TEST(AuthE2E, AProtectedEventOfferedByASyncPeerIsNotStoredAndIsCounted) {
  FaultPeer peer;
  ASSERT_NE(peer.port(), 0) << "fault peer did not start (node + tests/interop/node_modules?)";
  GraspdProcess node{GraspdOptions{fast_sync_env(), {}}};
  ASSERT_TRUE(node.start()) << node.stderr_text();

  const auto t = now_seconds() - 1000;
  auto announcement = announcement_listing({node.relay_url(), peer.url()}, "guarded", t);
  const auto address = nostr::address_of(announcement);
  auto plain = issue_for(address, 1, t + 10);
  auto guarded = issue_for(address, 2, t + 20);
  guarded.tags.push_back({"-"});
  guarded = nostr::sign_event(guarded, secret_key(22));
  for (const auto& ev : {announcement, plain, guarded}) ASSERT_TRUE(peer.seed(ev));

  publish_all(node.port(), {announcement});
  ASSERT_TRUE(wait_until([&] { return stored_count(node.port(), {plain}) == 1; }))
      << sync_status(node.port());
  EXPECT_TRUE(wait_until([&] {
    return relay_figure(node.port(), peer.url(), "events_protected") == 1;
  })) << sync_status(node.port());
  EXPECT_EQ(stored_count(node.port(), {guarded}), 0u);
  EXPECT_TRUE(wait_until([&] {
    return metric_value(http_get(node.port(), "/metrics").body,
                        "graspd_sync_total{what=\"events_protected\"}") == 1;
  }));
  EXPECT_EQ(node.stop(), 0) << node.stderr_text();
}

}  // namespace
}  // namespace graspd::test
