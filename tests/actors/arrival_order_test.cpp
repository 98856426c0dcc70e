#include "actors/relay/engine/arrival_order.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace graspd {
namespace {

using Order = ArrivalOrder<std::string>;

std::vector<std::string> drained(Order& order) {
  std::vector<std::string> out;
  order.drain([&](std::string&& value) { out.push_back(std::move(value)); });
  return out;
}

TEST(ArrivalOrderTest, TicketsAreNumberedInArrivalOrder) {
  Order order;
  EXPECT_EQ(order.reserve(), 0u);
  EXPECT_EQ(order.reserve(), 1u);
  EXPECT_EQ(order.reserve(), 2u);
  EXPECT_EQ(order.size(), 3u);
  EXPECT_EQ(order.in_flight(), 3u);
}

TEST(ArrivalOrderTest, CompletedOutOfOrderDrainsInArrivalOrder) {
  Order order;
  auto a = order.reserve();
  auto b = order.reserve();
  auto c = order.reserve();
  order.complete(c, "c");
  order.complete(b, "b");
  EXPECT_TRUE(drained(order).empty()) << "the first ticket is still out";
  EXPECT_EQ(order.in_flight(), 1u);
  order.complete(a, "a");
  EXPECT_EQ(drained(order), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_TRUE(order.empty());
  EXPECT_EQ(order.in_flight(), 0u);
}

TEST(ArrivalOrderTest, DrainStopsAtTheFirstGap) {
  Order order;
  auto a = order.reserve();
  auto b = order.reserve();
  auto c = order.reserve();
  auto d = order.reserve();
  order.complete(a, "a");
  order.complete(c, "c");
  order.complete(d, "d");
  EXPECT_EQ(drained(order), std::vector<std::string>{"a"});
  EXPECT_EQ(order.size(), 3u);
  EXPECT_EQ(order.front(), b);
  order.complete(b, "b");
  EXPECT_EQ(drained(order), (std::vector<std::string>{"b", "c", "d"}));
}

TEST(ArrivalOrderTest, TicketsKeepCountingAfterTheQueueEmpties) {
  Order order;
  order.complete(order.reserve(), "a");
  EXPECT_EQ(drained(order), std::vector<std::string>{"a"});
  auto b = order.reserve();
  EXPECT_EQ(b, 1u);
  order.complete(b, "b");
  EXPECT_EQ(drained(order), std::vector<std::string>{"b"});
}

TEST(ArrivalOrderTest, MisuseIsRefused) {
  Order order;
  EXPECT_THROW(order.complete(0, "never reserved"), std::logic_error);
  auto a = order.reserve();
  auto b = order.reserve();
  order.complete(b, "b");
  EXPECT_THROW(order.complete(b, "again"), std::logic_error);
  order.complete(a, "a");
  EXPECT_EQ(drained(order), (std::vector<std::string>{"a", "b"}));
  EXPECT_THROW(order.complete(a, "after drain"), std::logic_error);
}

TEST(ArrivalOrderTest, MoveOnlyValues) {
  ArrivalOrder<std::unique_ptr<int>> order;
  auto a = order.reserve();
  auto b = order.reserve();
  order.complete(b, std::make_unique<int>(2));
  order.complete(a, std::make_unique<int>(1));
  std::vector<int> out;
  order.drain([&](std::unique_ptr<int>&& value) { out.push_back(*value); });
  EXPECT_EQ(out, (std::vector<int>{1, 2}));
}

TEST(ArrivalOrderTest, TheDrainFunctionMayReserveCompleteAndDrainAgain) {
  // The relay connection's drained steps may queue more work; the order must survive that.
  ArrivalOrder<int> order;
  auto a = order.reserve();
  auto b = order.reserve();
  std::vector<int> out;
  std::function<void(int&&)> take = [&](int&& value) {
    out.push_back(value);
    if (value == 1) {
      order.complete(order.reserve(), 3);
      order.drain(take);
    }
  };
  order.complete(b, 2);
  order.complete(a, 1);
  order.drain(take);
  EXPECT_EQ(out, (std::vector<int>{1, 2, 3}));
  EXPECT_TRUE(order.empty());
}

TEST(ArrivalOrderTest, RandomInterleavingsMatchASimpleModel) {
  // The model: a value may leave only when every value that arrived before it has left, and it
  // leaves as soon as that holds and a drain runs.
  std::mt19937 random{20240611};
  for (int round = 0; round < 200; ++round) {
    ArrivalOrder<std::uint64_t> order;
    std::vector<std::uint64_t> out_tickets;  // reserved, not completed
    std::vector<bool> completed;             // by ticket
    std::uint64_t next_expected = 0;         // ticket the next drained value must carry
    std::size_t reserved = 0;
    std::size_t steps = 50 + random() % 150;
    for (std::size_t step = 0; step < steps || !out_tickets.empty(); ++step) {
      auto choice = random() % 3;
      if (step < steps && (choice == 0 || out_tickets.empty())) {
        auto ticket = order.reserve();
        ASSERT_EQ(ticket, reserved);
        ++reserved;
        completed.push_back(false);
        out_tickets.push_back(ticket);
      } else if (choice == 1 && !out_tickets.empty()) {
        auto at = random() % out_tickets.size();
        auto ticket = out_tickets[at];
        out_tickets.erase(out_tickets.begin() + static_cast<std::ptrdiff_t>(at));
        order.complete(ticket, ticket);
        completed[ticket] = true;
      } else {
        order.drain([&](std::uint64_t&& ticket) {
          ASSERT_EQ(ticket, next_expected);
          ++next_expected;
        });
        // Everything up to the first incomplete ticket left; nothing from it on.
        std::uint64_t gap = next_expected;
        while (gap < reserved && completed[gap]) ++gap;
        ASSERT_EQ(next_expected, gap) << "round " << round << " step " << step;
      }
      ASSERT_EQ(order.in_flight(), out_tickets.size());
      ASSERT_EQ(order.size(), reserved - next_expected);
      ASSERT_EQ(order.front(), next_expected);
    }
    order.drain([&](std::uint64_t&& ticket) { ASSERT_EQ(ticket, next_expected++); });
    EXPECT_EQ(next_expected, reserved);
    EXPECT_TRUE(order.empty());
  }
}

}  // namespace
}  // namespace graspd
