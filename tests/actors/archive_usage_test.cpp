// GRASP-05 storage caps (actors/git/engine/archive_usage.*): a new archive needs room in the
// count and the total bytes; an archive at its own cap, or any when the total is reached, gets no
// more fetches; one already here is never refused again.
#include "actors/git/engine/archive_usage.hpp"

#include <gtest/gtest.h>

namespace graspd::git {
namespace {

nostr::nip34::RepositoryRef repository(std::uint8_t owner, const std::string& d) {
  nostr::nip34::RepositoryRef out;
  out.owner[0] = owner;
  out.identifier = d;
  return out;
}

TEST(ArchiveUsage, ANewArchiveNeedsRoomInTheCountAndTheTotal) {
  ArchiveUsage usage({2, 1000, 0});
  EXPECT_EQ(usage.refusal_of_new(repository(1, "a")), "");
  usage.set(repository(1, "a"), 100);
  usage.set(repository(2, "b"), 100);
  auto refusal = usage.refusal_of_new(repository(3, "c"));
  EXPECT_EQ(refusal, "blocked: archive full: this server archives at most 2 repositories");
  EXPECT_EQ(usage.refusal_of_new(repository(1, "a")), "") << "one here is not new";
  usage.remove(repository(2, "b"));
  EXPECT_EQ(usage.refusal_of_new(repository(3, "c")), "");
  usage.set(repository(1, "a"), 1000);  // measured again: the total is reached
  EXPECT_EQ(usage.total_bytes(), 1000u);
  EXPECT_EQ(usage.refusal_of_new(repository(3, "c")).rfind("blocked: archive full:", 0), 0u);
}

TEST(ArchiveUsage, AnArchiveAtItsOwnCapOrAtTheTotalGetsNoMoreFetches) {
  ArchiveUsage usage({0, 1000, 300});
  usage.set(repository(1, "big"), 300);
  usage.set(repository(2, "small"), 10);
  EXPECT_FALSE(usage.may_grow(repository(1, "big")));
  EXPECT_TRUE(usage.may_grow(repository(2, "small")));
  EXPECT_TRUE(usage.may_grow(repository(9, "hosted"))) << "not an archive: no cap";
  EXPECT_EQ(usage.full(), std::set<nostr::nip34::RepositoryRef>{repository(1, "big")});
  usage.set(repository(3, "third"), 690);
  EXPECT_EQ(usage.full().size(), 3u) << "the total is reached: no archive grows";
  ArchiveUsage uncapped({0, 0, 0});
  uncapped.set(repository(1, "a"), 1ull << 40);
  EXPECT_TRUE(uncapped.may_grow(repository(1, "a")));
  EXPECT_EQ(uncapped.refusal_of_new(repository(2, "b")), "");
}

}  // namespace
}  // namespace graspd::git
