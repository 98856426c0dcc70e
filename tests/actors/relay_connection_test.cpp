// Deterministic tests of the relay connection under the test coordinator, driven through the sync
// manager that spawns it: signature checks on the verifiers, events known by id, frames reported
// consumed, EOSE in order behind its events and unrequested events dropped (sync_fixture.hpp).
#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include "messages/nostr/client_message.hpp"
#include "messages/nostr/negentropy.hpp"
#include "messages/unix_clock.hpp"
#include "tests/actors/sync_fixture.hpp"
#include "tests/support/holding_verifier.hpp"

namespace graspd {
namespace {

using namespace std::chrono_literals;
using sync_test::signed_event;

class RelayConnectionTest : public sync_test::SyncFixture {
 protected:
  /// Answers every NEG-OPEN sent so far as a NIP-77 peer holding `theirs` would (one round: the
  /// sets here are small enough for the responder to list its ids at once).
  void answer_neg_opens(const std::vector<nostr::Event>& theirs) {
    namespace neg = nostr::negentropy;
    for (const auto& frame : peers_[0]->frames("NEG-OPEN")) {
      auto msg = nostr::parse_client_message(frame, nostr::ParseLimits{});
      ASSERT_TRUE(msg.ok()) << frame;
      const auto& open = std::get<nostr::ClientNegOpen>(*msg);
      if (!neg_answered_.insert(open.subscription_id).second) continue;
      std::vector<neg::Item> items;
      for (const auto& ev : theirs)
        if (open.filter.matches(ev))
          items.push_back({static_cast<std::uint64_t>(ev.created_at), ev.id});
      neg::Storage storage(std::move(items));
      auto reply = neg::Negentropy::create(storage)->respond(open.message);
      ASSERT_TRUE(reply.ok());
      peers_[0]->handler->on_message(
          nostr::relay_neg_msg(open.subscription_id, neg::message_to_hex(*reply)));
    }
    run();
  }

  std::set<std::string> neg_answered_;
};

TEST_F(RelayConnectionTest, ANip77PeerIsReconciledAgainstOurStoreAndOnlyMissingIdsFetched) {
  auto ours = signed_event(1621, {{"a", repo_}}, unix_now() - 20);
  auto theirs = signed_event(1621, {{"a", repo_}}, unix_now() - 10, 8);
  store_->write_batch(std::vector<nostr::EventPtr>{std::make_shared<const nostr::Event>(ours)});
  start_manager();
  anon_send(manager_, discovery(repo_, {relay_}));
  run();
  runtime::PeerLimits speaks_nip77;
  speaks_nip77.nip77 = true;
  peers_[0]->handler->on_open(speaks_nip77, false);
  run();
  auto& peer = *peers_[0];
  // The live REQs ask for no stored events where we hold some: that history goes by NEG-OPEN.
  // Filters we hold nothing of keep their history on the live REQ (paged, not reconciled).
  for (const auto& [id, filters] : peer.reqs())
    for (const auto& f : filters)
      EXPECT_EQ(f.limit, f.matches(ours) ? std::optional<std::uint64_t>(0) : std::nullopt) << id;
  ASSERT_FALSE(peer.frames("NEG-OPEN").empty());

  answer_neg_opens({ours, theirs});
  auto fetches = peer.reqs();
  std::vector<std::pair<std::string, nostr::Filters>> by_id;
  for (auto& req : fetches)
    if (!req.second.empty() && req.second[0].ids) by_id.push_back(req);
  ASSERT_EQ(by_id.size(), 1u) << "one fetch, for the one subscription whose filter matches";
  ASSERT_TRUE(by_id[0].second[0].ids);
  EXPECT_EQ(*by_id[0].second[0].ids, std::vector<nostr::EventId>{theirs.id});
  peer.handler->on_message(nostr::relay_event(by_id[0].first, nostr::serialize_event(theirs)));
  peer.handler->on_message(nostr::relay_eose(by_id[0].first));
  run();
  EXPECT_TRUE(store_->contains(theirs.id));
  EXPECT_EQ(relay_state(relay_).negentropy, true);
  EXPECT_EQ(std::string(sync::history_method(relay_state(relay_))), "negentropy");
  advance_time(1s);  // traffic report
  auto& figures = manager_state().figures.at(relay_);
  EXPECT_EQ(figures.ids_needed, 1u);
  EXPECT_EQ(figures.id_requests, 1u);
  EXPECT_GE(figures.negentropy_rounds, 1u);
}

TEST_F(RelayConnectionTest, APeerAnsweringNegErrIsPagedByReqAndRemembered) {
  // We hold an issue: its filter is offered by NEG-OPEN (one we held nothing of would be paged).
  auto ours = signed_event(1621, {{"a", repo_}}, unix_now() - 20);
  store_->write_batch(std::vector<nostr::EventPtr>{std::make_shared<const nostr::Event>(ours)});
  start_manager();
  anon_send(manager_, discovery(repo_, {relay_}));
  run();
  peers_[0]->handler->on_open({}, false);  // no NIP-11 list: ask
  run();
  auto& peer = *peers_[0];
  auto opens = peer.frames("NEG-OPEN");
  ASSERT_FALSE(opens.empty());
  for (const auto& frame : opens) {
    auto msg = nostr::parse_client_message(frame, nostr::ParseLimits{});
    ASSERT_TRUE(msg.ok());
    peer.handler->on_message(nostr::relay_neg_err(
        std::get<nostr::ClientNegOpen>(*msg).subscription_id, "error: unsupported message"));
  }
  run();
  EXPECT_EQ(relay_state(relay_).negentropy, false);
  EXPECT_EQ(std::string(sync::history_method(relay_state(relay_))), "req");
  // Every subscription now pages its history beside its live REQ: page 1 of each went out.
  std::size_t pages = 0;
  for (const auto& [id, filters] : peer.reqs()) pages += id.find("~1") != std::string::npos;
  EXPECT_EQ(pages, opens.size());
  answer_all_with_eose(peer);
  EXPECT_TRUE(relay_state(relay_).pending.empty());
  EXPECT_EQ(relay_state(relay_).confirmed.repos.count(repo_), 1u);
}

TEST_F(RelayConnectionTest, APeersAuthChallengeIsAnsweredWithTheRelayKeyOncePerChallenge) {
  auth_key_ = test::secret_key(9);
  connect_first_peer();
  auto& peer = *peers_[0];
  peer.handler->on_message(R"(["AUTH","challenge-1"])");
  peer.handler->on_message(R"(["AUTH","challenge-1"])");
  run();
  auto answers = peer.frames("AUTH");
  ASSERT_EQ(answers.size(), 1u) << "a repeated challenge is not signed again";
  rapidjson::Document frame;
  frame.Parse(answers[0].c_str(), answers[0].size());
  ASSERT_TRUE(frame.IsArray() && frame.Size() == 2u) << answers[0];
  auto response = nostr::parse_event(frame[1], nostr::ParseLimits{});
  ASSERT_TRUE(response.ok()) << answers[0];
  EXPECT_EQ(response->kind, 22242u);
  EXPECT_EQ(response->pubkey, *nostr::pubkey_from_secret(*auth_key_));
  EXPECT_EQ(response->tags, (nostr::Tags{{"relay", relay_}, {"challenge", "challenge-1"}}));
  EXPECT_EQ(nostr::check_event(*response), nostr::EventCheck::ok);
  // The connection's clock (the system's here): a peer checks created_at against its own.
  EXPECT_LE(std::abs(response->created_at - system_unix_now()), 60);
  peer.handler->on_message(R"(["AUTH","challenge-2"])");
  run();
  EXPECT_EQ(peer.frames("AUTH").size(), 2u);
}

TEST_F(RelayConnectionTest, WithoutARelayKeyAChallengeIsIgnoredAndAnAuthRefusalClosesOnlyItsReq) {
  connect_first_peer();
  auto& peer = *peers_[0];
  peer.handler->on_message(R"(["AUTH","challenge-1"])");
  run();
  EXPECT_TRUE(peer.frames("AUTH").empty());
  auto reqs = peer.reqs();
  ASSERT_GE(reqs.size(), 2u);
  peer.handler->on_message(nostr::relay_closed(reqs.front().first, "auth-required: sign in"));
  run();
  EXPECT_FALSE(peer.closed) << "a refused subscription is no reason to hang up";
  // The connection still serves the other subscriptions.
  auto issue = signed_event(1621, {{"a", repo_}}, unix_now() - 10);
  peer.handler->on_message(nostr::relay_event(reqs.back().first, nostr::serialize_event(issue)));
  run();
  EXPECT_TRUE(store_->contains(issue.id));
}

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

TEST_F(RelayConnectionTest, ProtectedEventsFromAPeerAreRefusedAndCounted) {
  connect_first_peer();
  auto [sub, filters] = peers_[0]->reqs().back();
  auto plain = signed_event(1621, {{"a", repo_}}, unix_now() - 10);
  auto guarded = signed_event(1621, {{"a", repo_}, {"-"}}, unix_now() - 9);
  peers_[0]->handler->on_message(nostr::relay_event(sub, nostr::serialize_event(plain)));
  peers_[0]->handler->on_message(nostr::relay_event(sub, nostr::serialize_event(guarded)));
  run();
  EXPECT_TRUE(store_->contains(plain.id));
  EXPECT_FALSE(store_->contains(guarded.id)) << "a peer is never its authenticated author";
  advance_time(1s);  // traffic report
  auto& figures = manager_state().figures.at(relay_);
  EXPECT_EQ(figures.events_stored, 1u);
  EXPECT_EQ(figures.events_protected, 1u);
  EXPECT_EQ(figures.events_invalid, 0u);
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
  doc.Parse(status->c_str(), status->size());
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
