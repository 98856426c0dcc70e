#include "runtime/ops/log.hpp"

#include <gtest/gtest.h>

#include <mutex>
#include <regex>
#include <thread>
#include <vector>

namespace graspd::log {
namespace {

class LogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    set_sink([this](std::string_view line) {
      std::lock_guard lock{mutex_};
      lines_.emplace_back(line);
    });
  }
  void TearDown() override {
    reset_sink();
    set_level(Level::info);
  }
  std::vector<std::string> lines() {
    std::lock_guard lock{mutex_};
    return lines_;
  }

 private:
  std::mutex mutex_;
  std::vector<std::string> lines_;
};

TEST_F(LogTest, LineHasTimestampLevelAndComponent) {
  info("http", "listening on ", "127.0.0.1:", 7334);
  auto captured = lines();
  ASSERT_EQ(captured.size(), 1u);
  EXPECT_TRUE(std::regex_match(
      captured[0], std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z INFO  \[http\] )"
                              R"(listening on 127\.0\.0\.1:7334\n)")))
      << captured[0];
}

TEST_F(LogTest, LevelFiltersLessSevereRecords) {
  set_level(Level::warn);
  debug("a", "hidden");
  info("a", "hidden");
  warn("a", "shown");
  error("a", "shown too");
  auto captured = lines();
  ASSERT_EQ(captured.size(), 2u);
  EXPECT_NE(captured[0].find("WARN  [a] shown"), std::string::npos);
  EXPECT_NE(captured[1].find("ERROR [a] shown too"), std::string::npos);
  EXPECT_FALSE(enabled(Level::info));
  EXPECT_TRUE(enabled(Level::error));
}

TEST_F(LogTest, TraceWhenEnabled) {
  set_level(Level::trace);
  trace("t", "x");
  ASSERT_EQ(lines().size(), 1u);
  EXPECT_NE(lines()[0].find("TRACE [t] x"), std::string::npos);
}

TEST_F(LogTest, NewlinesCannotForgeLines) {
  warn("c", "first\nINFO [fake] second\r");
  auto captured = lines();
  ASSERT_EQ(captured.size(), 1u);
  EXPECT_EQ(captured[0].find('\n'), captured[0].size() - 1);
}

TEST_F(LogTest, ConcurrentWritersKeepLinesWhole) {
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([t] {
      for (int i = 0; i < 200; ++i) info("thread", "writer ", t, " line ", i);
    });
  }
  for (auto& thread : threads) thread.join();
  auto captured = lines();
  ASSERT_EQ(captured.size(), 800u);
  for (const auto& line : captured) {
    EXPECT_TRUE(std::regex_search(line, std::regex(R"(\[thread\] writer \d line \d+\n$)")));
  }
}

TEST(LogLevel, ParseAndName) {
  for (auto name : {"trace", "debug", "info", "warn", "error"}) {
    auto level = parse_level(name);
    ASSERT_TRUE(level) << name;
    EXPECT_EQ(level_name(*level), name);
  }
  EXPECT_FALSE(parse_level("loud"));
  EXPECT_FALSE(parse_level("INFO"));
  EXPECT_FALSE(parse_level(""));
}

}  // namespace
}  // namespace graspd::log
