// The NEG-OPEN scanner (NegentropyScanner): scans take turns per client address, the queues are
// bounded per address and in all, stop() drops what waits, and with threads the scans run off the
// caller's thread.
#include "actors/relay/negentropy_scanner.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <string>
#include <thread>
#include <vector>

namespace graspd {
namespace {

namespace neg = nostr::negentropy;

/// A source answering with `limit` records, whatever the filter.
NegentropyScanner::Source counting_source() {
  return [](const nostr::Filter& filter, std::uint64_t) {
    std::vector<neg::Item> items(filter.limit.value_or(0));
    return std::optional(items);
  };
}

nostr::Filter tagged(std::uint64_t n) {
  nostr::Filter filter;
  filter.limit = n;  // the test source answers n records: it tells the scans apart
  return filter;
}

NegentropyScannerLimits manual(std::size_t per_address, std::size_t total = 1024) {
  return {.threads = 0, .max_queued_per_address = per_address, .max_queued = total};
}

TEST(NegentropyScanner, WaitingScansTakeTurnsPerAddress) {
  NegentropyScanner scanner(manual(16), counting_source());
  std::vector<std::uint64_t> order;
  auto record = [&](const NegentropyScan& scan) {
    order.push_back(scan.items ? static_cast<std::uint64_t>(scan.items->size()) : 0);
  };
  // The attacker queues five scans before the victim's one.
  for (std::uint64_t i = 1; i <= 5; ++i)
    ASSERT_EQ(scanner.submit("attacker", tagged(i), 100, record), NegentropyScanner::Refusal::none);
  ASSERT_EQ(scanner.submit("victim", tagged(100), 100, record), NegentropyScanner::Refusal::none);
  EXPECT_EQ(scanner.queued(), 6u);
  while (scanner.run_one()) {
  }
  EXPECT_EQ(order, (std::vector<std::uint64_t>{1, 100, 2, 3, 4, 5}))
      << "the victim's scan comes second, not sixth";
  EXPECT_EQ(scanner.queued(), 0u);
}

TEST(NegentropyScanner, QueuesAreBoundedPerAddressAndInAll) {
  NegentropyScanner scanner(manual(2, 3), counting_source());
  auto ignore = [](NegentropyScan) {};
  EXPECT_EQ(scanner.submit("a", tagged(1), 10, ignore), NegentropyScanner::Refusal::none);
  EXPECT_EQ(scanner.submit("a", tagged(1), 10, ignore), NegentropyScanner::Refusal::none);
  EXPECT_EQ(scanner.submit("a", tagged(1), 10, ignore), NegentropyScanner::Refusal::address_full);
  EXPECT_EQ(scanner.queued_by("a"), 2u);
  EXPECT_EQ(scanner.submit("b", tagged(1), 10, ignore), NegentropyScanner::Refusal::none);
  EXPECT_EQ(scanner.submit("c", tagged(1), 10, ignore), NegentropyScanner::Refusal::full);
  scanner.run_one();
  EXPECT_EQ(scanner.submit("c", tagged(1), 10, ignore), NegentropyScanner::Refusal::none)
      << "a slot freed";
}

TEST(NegentropyScanner, AFailingScanIsReportedAndStopDropsTheRest) {
  NegentropyScanner scanner(
      manual(16), [](const nostr::Filter&, std::uint64_t) -> std::optional<std::vector<neg::Item>> {
        throw std::runtime_error("store gone");
      });
  int failed = 0, called = 0;
  scanner.submit("a", tagged(1), 10, [&](NegentropyScan scan) { failed += scan.failed; });
  scanner.submit("a", tagged(1), 10, [&](NegentropyScan) { ++called; });
  ASSERT_TRUE(scanner.run_one());
  EXPECT_EQ(failed, 1);
  scanner.stop();
  EXPECT_FALSE(scanner.run_one());
  EXPECT_EQ(called, 0) << "a dropped scan is never answered";
  EXPECT_EQ(scanner.submit("a", tagged(1), 10, [](NegentropyScan) {}),
            NegentropyScanner::Refusal::stopped);
}

TEST(NegentropyScanner, ScansRunOnTheScannersThreads) {
  NegentropyScanner scanner({.threads = 2, .max_queued_per_address = 16, .max_queued = 64},
                            counting_source());
  std::promise<std::thread::id> ran;
  auto done = ran.get_future();
  ASSERT_EQ(scanner.submit("a", tagged(3), 10,
                           [&](const NegentropyScan& scan) {
                             EXPECT_EQ(scan.items ? scan.items->size() : 0u, 3u);
                             ran.set_value(std::this_thread::get_id());
                           }),
            NegentropyScanner::Refusal::none);
  ASSERT_EQ(done.wait_for(std::chrono::seconds(30)), std::future_status::ready);
  EXPECT_NE(done.get(), std::this_thread::get_id());
  scanner.stop();
}

}  // namespace
}  // namespace graspd
