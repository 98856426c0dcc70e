#include <gtest/gtest.h>

#include "messages/nostr/filter.hpp"

namespace graspd::nostr {
namespace {

Event event_with(std::uint32_t kind, std::int64_t created_at, Tags tags = {}) {
  Event ev;
  ev.kind = kind;
  ev.created_at = created_at;
  ev.tags = std::move(tags);
  return ev;
}

TEST(Filter, SinceAndUntilAreInclusive) {
  Filter f;
  f.since = 10;
  f.until = 20;
  EXPECT_TRUE(f.matches(event_with(1, 10)));
  EXPECT_TRUE(f.matches(event_with(1, 20)));
  EXPECT_FALSE(f.matches(event_with(1, 9)));
  EXPECT_FALSE(f.matches(event_with(1, 21)));
}

TEST(Filter, TagConditionsAreCaseSensitiveLetters) {
  Filter f;
  f.tags['E'] = {"root"};
  f.normalize();
  EXPECT_TRUE(f.matches(event_with(1111, 1, {{"E", "root"}})));
  EXPECT_FALSE(f.matches(event_with(1111, 1, {{"e", "root"}})));
}

TEST(Filter, EmptyListIsUnsatisfiable) {
  Filter f;
  f.kinds = std::vector<std::uint32_t>{};
  EXPECT_TRUE(f.is_unsatisfiable());
  EXPECT_FALSE(f.matches(event_with(1, 1)));
}

}  // namespace
}  // namespace graspd::nostr
