// Deterministic tests of the relay profile publisher against scripted user-index relays: the
// relay's kind 0 and 10002 are stored locally, each relay is asked what it holds and given only
// what it lacks or holds in another version, one relay after the other; a silent relay is left at
// the deadline; with no relay nothing is dialled (docs/identity.md "Publishing").
#include <gtest/gtest.h>

#include "actors/ops/relay_profile_publisher.hpp"
#include "messages/nostr/client_message.hpp"
#include "messages/nostr/relay_message.hpp"
#include "tests/actors/sync_fixture.hpp"

namespace graspd {
namespace {

using namespace std::chrono_literals;
using sync_test::ScriptedPeer;

class RelayProfileTest : public sync_test::SyncFixture {
 protected:
  RelayProfileTest() {
    ops::RelayProfileContent content{"relay", "about it", "relay.example", "wss://relay.example"};
    for (auto& ev : ops::relay_profile_events(content, 1'700'000'000))
      ours_.push_back(nostr::sign_event(std::move(ev), test::secret_key(5)));
  }

  relay_profile_actor start(std::vector<std::string> relays) {
    RelayProfileConfig config;
    config.events = ours_;
    config.index_relays = std::move(relays);
    auto factory = [this](const ParsedUrl& url, const runtime::RelayClientOptions&,
                          std::shared_ptr<runtime::RelayClientHandler> handler) {
      auto peer = std::make_shared<ScriptedPeer>();
      peer->handler = std::move(handler);
      dialled_.push_back(url.host);
      peers_.push_back(peer);
      return peer;
    };
    auto publisher = spawn(relay_profile_publisher, std::move(config), writer_, factory);
    run();
    return publisher;
  }

  /// Whether `publisher` has quit (the functor runs at once when it already has).
  bool quit(const relay_profile_actor& publisher) {
    auto gone = std::make_shared<bool>(false);
    publisher->attach_functor([gone] { *gone = true; });
    run();
    return *gone;
  }

  /// The ids of the events `peer` was sent.
  static std::vector<nostr::EventId> published(const ScriptedPeer& peer) {
    std::vector<nostr::EventId> ids;
    for (const auto& frame : peer.frames("EVENT")) {
      auto msg = nostr::parse_client_message(frame, nostr::ParseLimits{});
      EXPECT_TRUE(msg.ok()) << frame;
      ids.push_back(std::get<nostr::ClientEvent>(*msg).event.id);
    }
    return ids;
  }

  /// The relay lists `held`, then EOSE, for the publisher's subscription.
  void relay_holds(ScriptedPeer& peer, const std::vector<nostr::Event>& held) {
    peer.handler->on_open({}, false);
    run();
    auto reqs = peer.reqs();
    ASSERT_EQ(reqs.size(), 1u);
    const auto& filter = reqs[0].second.at(0);
    ASSERT_TRUE(filter.authors && filter.kinds);
    EXPECT_EQ(*filter.authors, std::vector<nostr::Pubkey>{ours_[0].pubkey});
    EXPECT_EQ(*filter.kinds, (std::vector<std::uint32_t>{0, 10002}));
    for (const auto& ev : held)
      peer.handler->on_message(nostr::relay_event(reqs[0].first, nostr::serialize_event(ev)));
    peer.handler->on_message(nostr::relay_eose(reqs[0].first));
    run();
  }

  std::vector<nostr::Event> ours_;
  std::vector<std::string> dialled_;
};

TEST_F(RelayProfileTest, WithoutIndexRelaysBothAreStoredLocallyNothingIsDialledAndItQuits) {
  auto publisher = start({});
  EXPECT_TRUE(dialled_.empty());
  EXPECT_TRUE(store_->contains(ours_[0].id));
  EXPECT_TRUE(store_->contains(ours_[1].id));
  EXPECT_TRUE(quit(publisher));
}

TEST_F(RelayProfileTest, EachRelayGetsWhatItLacksOrHoldsInAnotherVersionOneAfterTheOther) {
  start({"wss://index-one.example", "wss://index-two.example"});
  ASSERT_EQ(dialled_, std::vector<std::string>{"index-one.example"}) << "one relay at a time";
  // The first holds our kind 0 as is, and an older 10002 naming another relay.
  auto other_relays = nostr::sign_event(
      [&] {
        nostr::Event ev;
        ev.kind = 10002;
        ev.created_at = 1'600'000'000;
        ev.tags = {{"r", "wss://elsewhere.example"}};
        return ev;
      }(),
      test::secret_key(5));
  relay_holds(*peers_[0], {ours_[0], other_relays});
  EXPECT_EQ(published(*peers_[0]), std::vector<nostr::EventId>{ours_[1].id});
  EXPECT_FALSE(peers_[0]->closed) << "waits for the OK";
  peers_[0]->handler->on_message(nostr::relay_ok(ours_[1].id, true, ""));
  run();
  EXPECT_TRUE(peers_[0]->closed);
  peers_[0]->handler->on_close(true, "closed");
  run();
  ASSERT_EQ(dialled_.size(), 2u);
  EXPECT_EQ(dialled_[1], "index-two.example");
  // The second refuses to list (auth-required): both are sent.
  peers_[1]->handler->on_open({}, false);
  run();
  auto req = peers_[1]->reqs().at(0).first;
  peers_[1]->handler->on_message(nostr::relay_closed(req, "auth-required: who are you"));
  run();
  EXPECT_EQ(published(*peers_[1]), (std::vector<nostr::EventId>{ours_[0].id, ours_[1].id}));
}

TEST_F(RelayProfileTest, ARelayHoldingBothAsTheyAreIsLeftAlone) {
  start({"wss://index-one.example"});
  relay_holds(*peers_[0], {ours_[0], ours_[1]});
  EXPECT_TRUE(published(*peers_[0]).empty());
  EXPECT_TRUE(peers_[0]->closed);
}

TEST_F(RelayProfileTest, AForgedCopyDoesNotCount) {
  start({"wss://index-one.example"});
  // Copies as ours, but not signed by the relay key: as if the relay held nothing.
  auto bad_signature = ours_[0];
  bad_signature.sig[0] ^= 1;
  auto other_author = test::signed_event(10002, ours_[1].tags, ours_[1].created_at, "", 6);
  relay_holds(*peers_[0], {bad_signature, other_author});
  EXPECT_EQ(published(*peers_[0]).size(), 2u);
}

TEST_F(RelayProfileTest, ASilentRelayIsLeftAtTheDeadlineAndTheNextOneDialled) {
  auto publisher = start({"wss://silent.example", "wss://index-two.example"});
  peers_[0]->handler->on_open({}, false);
  run();
  advance_time(59s);
  EXPECT_FALSE(peers_[0]->closed);
  advance_time(1s);
  EXPECT_TRUE(peers_[0]->closed);
  peers_[0]->handler->on_close(true, "closed by us");
  run();
  ASSERT_EQ(dialled_.size(), 2u);
  // A refused dial goes straight on: the last relay done, the publisher quits.
  peers_[1]->handler->on_close(false, "connection refused");
  run();
  EXPECT_EQ(dialled_.size(), 2u);
  EXPECT_TRUE(quit(publisher));
}

}  // namespace
}  // namespace graspd
