// Deterministic tests of the relay connection under the test coordinator, driven through the sync
// manager that spawns it: signature checks on the verifiers, events known by id, frames reported
// consumed, EOSE in order behind its events and unrequested events dropped (sync_fixture.hpp).
#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include "tests/actors/sync_fixture.hpp"
#include "tests/support/holding_verifier.hpp"

namespace graspd {
namespace {

using namespace std::chrono_literals;
using sync_test::signed_event;

class RelayConnectionTest : public sync_test::SyncFixture {};

TEST_F(RelayConnectionTest, PeerEventsAreVerifiedAndStored) {
  connect_first_peer();
  auto [sub, filters] = peers_[0]->reqs().back();
  auto issue = signed_event(1621, {{"a", repo_}}, unix_now() - 10);
  auto forged = issue;
  forged.content = "tampered";
  peers_[0]->handler->on_message(nostr::relay_event(sub, nostr::serialize_event(issue)));
  peers_[0]->handler->on_message(nostr::relay_event(sub, nostr::serialize_event(forged)));
  peers_[0]->handler->on_message("[\"EVENT\",\"" + sub + "\",{\"garbage\":1}]");
  run();
  EXPECT_TRUE(store_->contains(issue.id));
  advance_time(1s);  // traffic report
  auto& figures = manager_state().figures.at(relay_);
  EXPECT_EQ(figures.events_stored, 1u);
  EXPECT_EQ(figures.events_invalid, 2u);
}

TEST_F(RelayConnectionTest, EveryFrameIsReportedConsumedWhateverItWas) {
  connect_first_peer();
  auto& peer = *peers_[0];
  auto [sub, filters] = peer.reqs().back();
  std::size_t delivered = 0;
  auto deliver = [&](std::string frame) {
    delivered += frame.size();
    peer.handler->on_message(std::move(frame));
  };
  // A NOTICE flood (more than one report batch) and garbage.
  for (int i = 0; i < 64; ++i) deliver("[\"NOTICE\",\"" + std::string(8 * 1024, 'n') + "\"]");
  run();
  EXPECT_GE(peer.consumed_bytes, 256u * 1024) << "reports in batches, not only on the tick";
  for (int i = 0; i < 16; ++i) deliver(std::string(4 * 1024, '{'));
  // Events: stored, then known, under a forged id, for an unknown subscription; then EOSE.
  auto issue = signed_event(1621, {{"a", repo_}}, unix_now() - 10);
  auto forged = issue;
  forged.content = "tampered";
  deliver(nostr::relay_event(sub, nostr::serialize_event(issue)));
  run();
  deliver(nostr::relay_event(sub, nostr::serialize_event(issue)));
  deliver(nostr::relay_event(sub, nostr::serialize_event(forged)));
  deliver(nostr::relay_event("nobody", nostr::serialize_event(issue)));
  deliver(nostr::relay_eose(sub));
  run();
  EXPECT_TRUE(store_->contains(issue.id));
  EXPECT_LT(peer.consumed_bytes, delivered) << "the last batch waits for the tick";
  advance_time(1s);
  EXPECT_EQ(peer.consumed_bytes, delivered);
}

TEST_F(RelayConnectionTest, AlreadyStoredEventsSkipTheSignatureCheckButForgedIdsDoNot) {
  connect_first_peer();
  auto [sub, filters] = peers_[0]->reqs().back();
  auto issue = signed_event(1621, {{"a", repo_}}, unix_now() - 10);
  peers_[0]->handler->on_message(nostr::relay_event(sub, nostr::serialize_event(issue)));
  run();
  ASSERT_TRUE(store_->contains(issue.id));
  // The same event again, with a signature that would not verify: known by its id, so skipped
  // (a signature check would count it invalid).
  auto again = issue;
  again.sig[7] ^= 1;
  peers_[0]->handler->on_message(nostr::relay_event(sub, nostr::serialize_event(again)));
  // Other content under the stored id: the id no longer matches, so it is invalid, not known.
  auto forged = issue;
  forged.content = "tampered";
  peers_[0]->handler->on_message(nostr::relay_event(sub, nostr::serialize_event(forged)));
  run();
  advance_time(1s);  // traffic report
  auto& figures = manager_state().figures.at(relay_);
  EXPECT_EQ(figures.events_received, 3u);
  EXPECT_EQ(figures.events_stored, 1u);
  EXPECT_EQ(figures.events_known, 1u);
  EXPECT_EQ(figures.events_invalid, 1u);
  advance_time(1s);  // status publication
  auto status = board_->get("sync");
  ASSERT_TRUE(status);
  rapidjson::Document doc;
  doc.Parse(status->c_str());
  ASSERT_TRUE(doc.IsObject()) << *status;
  ASSERT_EQ(doc["relays"].Size(), 1u);
  EXPECT_EQ(doc["relays"][0]["events_known"].GetUint64(), 1u) << *status;
  EXPECT_EQ(doc["relays"][0]["events_stored"].GetUint64(), 1u) << *status;
}

TEST_F(RelayConnectionTest, TheVerifiersRefuseABadSignatureUnderAGoodId) {
  connect_first_peer();
  auto [sub, filters] = peers_[0]->reqs().back();
  auto forged = signed_event(1621, {{"a", repo_}}, unix_now() - 10);
  forged.sig[3] ^= 1;  // the id still matches the content: only the signature check can tell
  peers_[0]->handler->on_message(nostr::relay_event(sub, nostr::serialize_event(forged)));
  run();
  advance_time(1s);  // traffic report
  EXPECT_FALSE(store_->contains(forged.id));
  EXPECT_EQ(manager_state().figures.at(relay_).events_invalid, 1u);
}

TEST_F(RelayConnectionTest, WithoutVerifiersTheConnectionChecksSignaturesItself) {
  connect_first_peer(std::vector<verifier_actor>{});
  auto [sub, filters] = peers_[0]->reqs().back();
  auto issue = signed_event(1621, {{"a", repo_}}, unix_now() - 10);
  auto forged = signed_event(1621, {{"a", repo_}}, unix_now() - 9);
  forged.sig[1] ^= 1;
  peers_[0]->handler->on_message(nostr::relay_event(sub, nostr::serialize_event(issue)));
  peers_[0]->handler->on_message(nostr::relay_event(sub, nostr::serialize_event(forged)));
  run();
  EXPECT_TRUE(store_->contains(issue.id));
  EXPECT_FALSE(store_->contains(forged.id));
}

TEST_F(RelayConnectionTest, EoseWaitsForTheSignatureChecksOfTheEventsBeforeIt) {
  auto holding = spawn(test::holding_verifier);
  connect_first_peer(std::vector<verifier_actor>{holding});
  auto [sub, filters] = peers_[0]->reqs().back();
  const auto reqs_before = peers_[0]->reqs().size();
  auto newer = signed_event(1621, {{"a", repo_}}, unix_now() - 50);
  auto older = signed_event(1621, {{"a", repo_}}, unix_now() - 100);
  peers_[0]->handler->on_message(nostr::relay_event(sub, nostr::serialize_event(newer)));
  peers_[0]->handler->on_message(nostr::relay_event(sub, nostr::serialize_event(older)));
  peers_[0]->handler->on_message(nostr::relay_eose(sub));
  run();
  EXPECT_EQ(peers_[0]->reqs().size(), reqs_before) << "EOSE handled before its events";
  EXPECT_FALSE(store_->contains(newer.id));
  caf::anon_send(holding, VerifyEvent{nullptr});
  run();
  EXPECT_TRUE(store_->contains(newer.id));
  EXPECT_TRUE(store_->contains(older.id));
  // The events reached the pager before EOSE: it asks for the history older than the oldest.
  auto reqs = peers_[0]->reqs();
  ASSERT_EQ(reqs.size(), reqs_before + 1);
  EXPECT_EQ(reqs.back().first, sub + "~1");
  for (const auto& filter : reqs.back().second) {
    ASSERT_TRUE(filter.until);
    EXPECT_EQ(*filter.until, older.created_at);
  }
}

TEST_F(RelayConnectionTest, EventsMatchingNoFilterAskedForAreDroppedUnchecked) {
  auto holding = spawn(test::holding_verifier);
  connect_first_peer(std::vector<verifier_actor>{holding});
  std::size_t sent = 0;
  // A hostile peer answers every subscription with valid events nobody asked for.
  for (const auto& [sub, filters] : peers_[0]->reqs())
    for (int i = 0; i < 20; ++i, ++sent)
      peers_[0]->handler->on_message(nostr::relay_event(
          sub, nostr::serialize_event(signed_event(1, {{"t", "spam"}}, unix_now() - i))));
  auto wanted = signed_event(1621, {{"a", repo_}}, unix_now() - 5);
  auto [sub, filters] = peers_[0]->reqs().back();
  peers_[0]->handler->on_message(nostr::relay_event(sub, nostr::serialize_event(wanted)));
  run();
  auto& held = state<test::HoldingVerifierState, verifier_actor::base>(holding).held;
  ASSERT_EQ(held.size(), 1u) << "only the event asked for reaches a signature check";
  EXPECT_EQ(held[0].second->id, wanted.id);
  caf::anon_send(holding, VerifyEvent{nullptr});
  run();
  EXPECT_TRUE(store_->contains(wanted.id));
  advance_time(1s);  // traffic report
  const auto& figures = manager_state().figures.at(relay_);
  EXPECT_EQ(figures.events_unrequested, sent);
  EXPECT_EQ(figures.events_received, sent + 1);
}

}  // namespace
}  // namespace graspd
