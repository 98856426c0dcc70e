#include "messages/nostr/nip34.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace graspd::nostr::nip34 {
namespace {

const std::string owner_hex(64, 'a');

Pubkey owner() {
  Pubkey key;
  key.fill(0xaa);
  return key;
}

Event with(std::uint32_t kind, Tags tags) {
  Event ev;
  ev.kind = kind;
  ev.tags = std::move(tags);
  return ev;
}

TEST(Nip34, RootAndIdentityKinds) {
  for (std::uint32_t k : {1617u, 1618u, 1619u, 1621u}) EXPECT_TRUE(is_root_kind(k)) << k;
  for (std::uint32_t k : {1u, 1620u, 1622u, 30617u, 30618u}) EXPECT_FALSE(is_root_kind(k)) << k;
  for (std::uint32_t k : {0u, 10002u, 10317u}) EXPECT_TRUE(is_identity_kind(k)) << k;
  for (std::uint32_t k : {3u, 10000u, 30617u}) EXPECT_FALSE(is_identity_kind(k)) << k;
}

TEST(Nip34, RootNeedsARootKindAndARepositoryTag) {
  const std::string repo = "30617:" + owner_hex + ":repo";
  EXPECT_TRUE(is_root(with(kind::issue, {{"a", repo}})));
  EXPECT_TRUE(is_root(with(kind::patch, {{"t", "x"}, {"a", "30618:x:y"}, {"a", repo}})));
  EXPECT_FALSE(is_root(with(kind::issue, {})));
  EXPECT_FALSE(is_root(with(kind::issue, {{"a"}, {"A", repo}, {"a", "30618:" + owner_hex}})));
  EXPECT_FALSE(is_root(with(1, {{"a", repo}})));
}

TEST(Nip34, ParsesAddressableAndReplaceableAddresses) {
  auto repo = parse_address("30617:" + owner_hex + ":my:repo");
  ASSERT_TRUE(repo);
  EXPECT_EQ(*repo, (Address{kind::repo_announcement, owner(), "my:repo"}));
  auto relays = parse_address("10002:" + std::string(64, 'A') + ":");
  ASSERT_TRUE(relays);
  EXPECT_EQ(*relays, (Address{kind::relay_list, owner(), ""}));
}

TEST(Nip34, RefusesMalformedAddresses) {
  for (std::string text : std::vector<std::string>{
           "", "x", "::", "30617:" + owner_hex, "30617:zz:repo",
           "30617:" + owner_hex.substr(1) + ":repo", ":" + owner_hex + ":repo",
           "+30617:" + owner_hex + ":repo", "-1:" + owner_hex + ":repo",
           " 30617:" + owner_hex + ":repo", "30617x:" + owner_hex + ":repo",
           // Regular and ephemeral kinds have no address.
           "1:" + owner_hex + ":", "1621:" + owner_hex + ":", "20000:" + owner_hex + ":"})
    EXPECT_FALSE(parse_address(text)) << text;
}

TEST(Nip34, KindPastThirtyTwoBitsIsRefusedNotWrapped) {
  // 4294997913 = 2^32 + 30617.
  EXPECT_FALSE(parse_address("4294997913:" + owner_hex + ":repo"));
  EXPECT_FALSE(parse_address("99999999999:" + owner_hex + ":repo"));
  EXPECT_FALSE(parse_address("4294967296:" + owner_hex + ":"));
  EXPECT_TRUE(parse_address("39999:" + owner_hex + ":"));
}

TEST(Nip34, FormatIsTheInverseOfParse) {
  Address repo{kind::repo_announcement, owner(), "repo"};
  EXPECT_EQ(format_address(repo), "30617:" + owner_hex + ":repo");
  EXPECT_EQ(parse_address(format_address(repo)), repo);
  Event announcement = with(kind::repo_announcement, {{"d", "repo"}});
  announcement.pubkey = owner();
  EXPECT_EQ(format_address(repo), address_of(announcement));
}

TEST(Nip34, TagValuesAreFlattenedOverRepeatedTagsUpToTheBound) {
  Event ev = with(kind::repo_announcement, {{"clone", "https://a", "https://b"},
                                            {"relays", "wss://r"},
                                            {"clone", "https://c"},
                                            {"clone"}});
  EXPECT_EQ(tag_values(ev, tag::clone),
            (std::vector<std::string>{"https://a", "https://b", "https://c"}));
  EXPECT_EQ(tag_values(ev, tag::clone, 2), (std::vector<std::string>{"https://a", "https://b"}));
  EXPECT_EQ(tag_values(ev, tag::relays), std::vector<std::string>{"wss://r"});
  EXPECT_TRUE(tag_values(ev, "web").empty());
}

TEST(Nip34, ListedMaintainersAreTheValidKeysOfEveryMaintainersTag) {
  Event ev = with(kind::repo_announcement,
                  {{"maintainers", owner_hex, "not-a-key"}, {"maintainers", std::string(64, 'b')}});
  Pubkey b;
  b.fill(0xbb);
  EXPECT_EQ(listed_maintainers(ev), (std::vector<Pubkey>{owner(), b}));
}

TEST(Nip34, RefsNostrNamesAreParsedStrictly) {
  EventId id;
  id.fill(0xab);
  const auto name = refs_nostr_ref(id);
  EXPECT_EQ(name, "refs/nostr/" + to_hex(id));
  EXPECT_EQ(refs_nostr_id(name), id);
  EXPECT_FALSE(refs_nostr_id("refs/nostr/" + std::string(64, 'A'))) << "lowercase only";
  EXPECT_FALSE(refs_nostr_id("refs/nostr/" + std::string(63, 'a')));
  EXPECT_FALSE(refs_nostr_id("refs/nostr/" + std::string(65, 'a')));
  EXPECT_FALSE(refs_nostr_id("refs/heads/" + to_hex(id)));
  EXPECT_FALSE(refs_nostr_id("refs/nostr/" + std::string(63, 'a') + "g"));
}

}  // namespace
}  // namespace graspd::nostr::nip34
