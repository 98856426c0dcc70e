// The GRASP-03 inventory rules (sync::PlusInventory): accepted roots, descendants with root
// provenance through id and address references, and exactly who is eligible.
#include "actors/plus/engine/plus_inventory.hpp"

#include <gtest/gtest.h>

#include "messages/nostr/event.hpp"

namespace graspd::sync {
namespace {

nostr::Pubkey key(std::uint8_t byte) {
  nostr::Pubkey k{};
  k.fill(byte);
  return k;
}

/// An unsigned event with a chosen id (the inventory trusts what the store accepted).
nostr::Event event(std::uint8_t id, std::uint32_t kind, std::uint8_t author, nostr::Tags tags,
                   std::int64_t created_at = 100) {
  nostr::Event ev;
  ev.id.fill(id);
  ev.pubkey = key(author);
  ev.kind = kind;
  ev.tags = std::move(tags);
  ev.created_at = created_at;
  return ev;
}

std::string hex(std::uint8_t id) {
  return nostr::to_hex(key(id));
}

std::string repo_of(std::uint8_t owner, const std::string& d = "demo") {
  return "30617:" + hex(owner) + ":" + d;
}

nostr::EventId id(std::uint8_t byte) {
  return key(byte);
}

class PlusInventoryTest : public ::testing::Test {
 protected:
  PlusInventory inventory;
  // Owner 1 announces with maintainer 2; issue 0x10 by 3; reply 0x11 by 4; reply to the reply
  // 0x12 by 5 naming only its parent.
  void accepted_thread() {
    inventory.add(event(0x01, 30617, 1, {{"d", "demo"}, {"maintainers", hex(2)}}));
    inventory.add(event(0x10, 1621, 3, {{"a", repo_of(1)}}));
    inventory.add(event(0x11, 1111, 4, {{"E", hex(0x10)}, {"e", hex(0x10)}}));
    inventory.add(event(0x12, 1, 5, {{"e", hex(0x11)}}));
  }
};

TEST_F(PlusInventoryTest, EligibleAuthorsAreOwnersMaintainersRootAndDescendantAuthors) {
  accepted_thread();
  auto snap = inventory.snapshot();
  EXPECT_EQ(snap.eligible, (std::set<nostr::Pubkey>{key(1), key(2), key(3), key(4), key(5)}));
  EXPECT_EQ(snap.roots_by_author.at(key(3)), std::set<EventId>{id(0x10)});
  EXPECT_FALSE(snap.roots_by_author.count(key(4)));
  // The indirect reply (naming only its parent) carries the root's provenance.
  EXPECT_EQ(snap.threads_by_participant.at(key(5)), std::set<EventId>{id(0x10)});
  EXPECT_EQ(snap.repos_by_member.at(key(2)), std::set<std::string>{repo_of(1)});
  EXPECT_EQ(snap.roots_by_repo.at(repo_of(1)), std::set<EventId>{id(0x10)});
  EXPECT_EQ(snap.descendants, 2u);
}

TEST_F(PlusInventoryTest, AStrangersReplyToANonAcceptedThreadMakesNoOneEligible) {
  // A root tagging a repository nobody announced here, and a stranger's reply to it.
  inventory.add(event(0x20, 1621, 6, {{"a", repo_of(9)}}));
  inventory.add(event(0x21, 1, 7, {{"e", hex(0x20)}}));
  // A reply to an event that is no thread node at all.
  inventory.add(event(0x22, 1, 8, {{"e", hex(0x77)}}));
  // Identity events of strangers.
  inventory.add(event(0x23, 10002, 7, {{"r", "wss://x.example"}}));
  auto snap = inventory.snapshot();
  EXPECT_TRUE(snap.eligible.empty());
  EXPECT_TRUE(snap.relay_lists.empty());
  EXPECT_TRUE(snap.threads_by_participant.empty());
}

TEST_F(PlusInventoryTest, StateOnlyCandidatesStayInertUntilTheirRepositoryIsFull) {
  inventory.add(event(0x20, 1621, 6, {{"a", repo_of(9)}}));
  inventory.add(event(0x21, 1, 7, {{"e", hex(0x20)}}));
  EXPECT_TRUE(inventory.snapshot().eligible.empty());
  // The announcement arrives: the candidate becomes active without rescanning anything.
  inventory.set_full(repo_of(9), false);
  inventory.add(event(0x02, 30617, 9, {{"d", "demo"}}));
  EXPECT_EQ(inventory.snapshot().eligible, std::set<nostr::Pubkey>{})
      << "a repository that is not Full activates nothing";
  inventory.set_full(repo_of(9), true);
  EXPECT_EQ(inventory.snapshot().eligible, (std::set<nostr::Pubkey>{key(9), key(6), key(7)}));
}

TEST_F(PlusInventoryTest, AddressReferencesCarryProvenance) {
  accepted_thread();
  // An addressable descendant (a NIP-22-style long-form reply) and a reply naming its address.
  inventory.add(event(0x30, 30023, 6, {{"d", "note"}, {"e", hex(0x10)}}));
  inventory.add(event(0x31, 7, 7, {{"a", "30023:" + hex(6) + ":note"}}));
  auto snap = inventory.snapshot();
  EXPECT_EQ(snap.threads_by_participant.at(key(7)), std::set<EventId>{id(0x10)});
}

TEST_F(PlusInventoryTest, LatestRelayListWinsAndOnlyEligibleAuthorsAreInTheSnapshot) {
  accepted_thread();
  inventory.add(event(0x40, 10002, 4, {{"r", "wss://old.example"}}, 100));
  inventory.add(event(0x41, 10002, 4, {{"r", "wss://new.example", "write"}}, 200));
  inventory.add(event(0x42, 10002, 4, {{"r", "wss://older.example"}}, 50));
  inventory.add(event(0x43, 0, 4, {}));
  auto snap = inventory.snapshot();
  ASSERT_TRUE(snap.relay_lists.count(key(4)));
  const auto& list = snap.relay_lists.at(key(4));
  ASSERT_EQ(list.entries.size(), 1u);
  EXPECT_EQ(list.entries[0].url, "wss://new.example");
  EXPECT_EQ(list.entries[0].marker, RelayMarker::write);
  EXPECT_EQ(snap.profiles, std::set<nostr::Pubkey>{key(4)});
}

TEST_F(PlusInventoryTest, TheDescendantScanIsBounded) {
  PlusInventory small(3);  // the root and two descendants
  small.add(event(0x01, 30617, 1, {{"d", "demo"}}));
  small.add(event(0x10, 1621, 3, {{"a", repo_of(1)}}));
  for (std::uint8_t i = 0; i < 5; ++i) small.add(event(0x50 + i, 1, 10 + i, {{"e", hex(0x10)}}));
  auto snap = small.snapshot();
  EXPECT_EQ(snap.descendants, 2u);
  EXPECT_EQ(snap.descendants_dropped, 3u);
}

TEST_F(PlusInventoryTest, FrontierNamesNewNodesForTheStartupScan) {
  accepted_thread();
  auto frontier = inventory.take_frontier();
  EXPECT_EQ(frontier.ids, (std::vector<EventId>{id(0x10), id(0x11), id(0x12)}));
  EXPECT_TRUE(inventory.take_frontier().empty());
}

TEST_F(PlusInventoryTest, AHeldRepositoryIsKnownInertUntilFullAndForgottenWhenDropped) {
  inventory.set_full(repo_of(1), false);  // held in purgatory: StateOnly
  accepted_thread();
  auto held = inventory.snapshot();
  EXPECT_TRUE(held.eligible.empty()) << "neither its members nor its thread's authors";
  EXPECT_TRUE(held.roots_by_repo.empty());
  EXPECT_TRUE(inventory.set_full(repo_of(1), true));  // promoted: no rescan
  EXPECT_EQ(inventory.snapshot().eligible.size(), 5u);
  inventory.set_full(repo_of(1), false);
  EXPECT_TRUE(inventory.remove_repository(repo_of(1)));
  EXPECT_FALSE(inventory.set_full(repo_of(1), true)) << "its mark went with it";
  EXPECT_TRUE(inventory.snapshot().eligible.empty()) << "its roots stay, inert";
  EXPECT_FALSE(inventory.remove_repository(repo_of(1)));
}

}  // namespace
}  // namespace graspd::sync
