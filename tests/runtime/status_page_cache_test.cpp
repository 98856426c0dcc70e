// The status page cache: one rendering per interval however many ask, requests that arrive
// during a rendering share it, nothing rendered before it is asked for, failures answered null.
#include "runtime/ops/status_page_cache.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "tests/support/wait_until.hpp"

namespace graspd::runtime {
namespace {

using namespace std::chrono_literals;

/// A clock the test moves by hand.
struct ManualClock {
  std::atomic<std::int64_t> ms{0};
  std::chrono::steady_clock::time_point now() const {
    return std::chrono::steady_clock::time_point(std::chrono::milliseconds(ms.load()));
  }
};

/// Collects what the deliveries hand over, from whichever thread.
struct Pages {
  std::mutex mutex;
  std::vector<std::string> got;
  StatusPageCache::Delivery delivery() {
    return [this](std::shared_ptr<const std::string> page) {
      std::lock_guard lock(mutex);
      got.push_back(page ? *page : "<null>");
    };
  }
  std::size_t size() {
    std::lock_guard lock(mutex);
    return got.size();
  }
};

TEST(StatusPageCache, RendersOnlyWhenAskedAndOncePerInterval) {
  ManualClock clock;
  std::atomic<int> n{0};
  StatusPageCache cache([&] { return "page " + std::to_string(++n); }, 5000ms,
                        [&] { return clock.now(); });
  EXPECT_EQ(cache.renders(), 0u);
  Pages pages;
  cache.get(pages.delivery());
  ASSERT_TRUE(test::wait_until([&] { return pages.size() == 1; }));
  for (int i = 0; i < 100; ++i) cache.get(pages.delivery());  // fresh: answered at once
  EXPECT_EQ(pages.size(), 101u);
  EXPECT_EQ(cache.renders(), 1u);
  clock.ms = 4999;
  cache.get(pages.delivery());
  EXPECT_EQ(cache.renders(), 1u);
  clock.ms = 5000;
  cache.get(pages.delivery());
  ASSERT_TRUE(test::wait_until([&] { return pages.size() == 103; }));
  EXPECT_EQ(cache.renders(), 2u);
  std::lock_guard lock(pages.mutex);
  EXPECT_EQ(pages.got.front(), "page 1");
  EXPECT_EQ(pages.got.back(), "page 2");
}

TEST(StatusPageCache, ConcurrentRequestsShareOneRendering) {
  std::mutex gate;
  std::condition_variable opened;
  bool open = false;
  std::atomic<bool> rendering{false};
  StatusPageCache cache(
      [&] {
        rendering = true;
        std::unique_lock lock(gate);
        opened.wait(lock, [&] { return open; });
        return std::string("shared");
      },
      60000ms);
  Pages pages;
  cache.get(pages.delivery());
  ASSERT_TRUE(test::wait_until([&] { return rendering.load(); }));
  std::vector<std::thread> askers;
  for (int i = 0; i < 8; ++i)
    askers.emplace_back([&] {
      for (int j = 0; j < 25; ++j) cache.get(pages.delivery());  // returns without waiting
    });
  for (auto& t : askers) t.join();
  EXPECT_EQ(pages.size(), 0u) << "nobody is answered before the page exists";
  {
    std::lock_guard lock(gate);
    open = true;
  }
  opened.notify_all();
  ASSERT_TRUE(test::wait_until([&] { return pages.size() == 201; }));
  EXPECT_EQ(cache.renders(), 1u);
  std::lock_guard lock(pages.mutex);
  for (const auto& page : pages.got) EXPECT_EQ(page, "shared");
}

TEST(StatusPageCache, AFailedRenderingAnswersNullAndIsRetriedNextInterval) {
  ManualClock clock;
  std::atomic<int> n{0};
  StatusPageCache cache(
      [&]() -> std::string {
        if (++n == 1) throw std::runtime_error("store gone");
        return "ok";
      },
      1000ms, [&] { return clock.now(); });
  Pages pages;
  cache.get(pages.delivery());
  ASSERT_TRUE(test::wait_until([&] { return pages.size() == 1; }));
  cache.get(pages.delivery());  // within the interval: the failure stands
  clock.ms = 1000;
  cache.get(pages.delivery());
  ASSERT_TRUE(test::wait_until([&] { return pages.size() == 3; }));
  std::lock_guard lock(pages.mutex);
  EXPECT_EQ(pages.got[0], "<null>");
  EXPECT_EQ(pages.got[1], "<null>");
  EXPECT_EQ(pages.got[2], "ok");
}

TEST(StatusPageCache, RequestsWaitingAtDestructionGetNull) {
  Pages pages;
  std::atomic<bool> started{false};
  {
    StatusPageCache cache(
        [&] {
          started = true;
          std::this_thread::sleep_for(50ms);  // a rendering in progress at destruction
          return std::string("late");
        },
        1000ms);
    cache.get(pages.delivery());
    ASSERT_TRUE(test::wait_until([&] { return started.load(); }));
  }
  // The rendering in progress finished and served its requester before the thread stopped.
  EXPECT_EQ(pages.size(), 1u);
}

}  // namespace
}  // namespace graspd::runtime
