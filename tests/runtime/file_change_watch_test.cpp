// The file watch that tells the store writer about other processes' commits: a write to the
// watched file calls back on the io thread, a burst of writes folds into at most two calls per
// gap, and a quiet file never calls.
#include "runtime/ops/file_change_watch.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <boost/asio/executor_work_guard.hpp>
#include <fstream>
#include <stdexcept>
#include <thread>

#include "tests/support/temp_dir.hpp"
#include "tests/support/wait_until.hpp"

namespace graspd::runtime {
namespace {

using namespace std::chrono_literals;

class FileChangeWatchTest : public ::testing::Test {
 protected:
  FileChangeWatchTest() {
    std::ofstream(file_) << "start";
    io_thread_ = std::thread([this] { io_.run(); });
  }
  ~FileChangeWatchTest() override {
    work_.reset();
    io_.stop();
    io_thread_.join();
  }

  void append(const std::string& text) { std::ofstream(file_, std::ios::app) << text; }

  test::TempDir dir_;
  std::filesystem::path file_ = dir_.path() / "data.mdb";
  boost::asio::io_context io_;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work_ =
      boost::asio::make_work_guard(io_);
  std::thread io_thread_;
  std::atomic<int> calls_{0};
};

TEST_F(FileChangeWatchTest, AWriteCallsBackAndAQuietFileNever) {
  FileChangeWatch watch(io_, file_, 50ms, [this] { ++calls_; });
  append("one");
  EXPECT_TRUE(test::wait_until([this] { return calls_ >= 1; }, 5000ms));
  const int after_write = calls_;
  // Whatever the gap's end folds in has happened well within 20 gaps; then nothing moves.
  test::wait_until([] { return false; }, 1000ms);
  EXPECT_LE(calls_, after_write + 1);
  const int settled = calls_;
  test::wait_until([] { return false; }, 500ms);
  EXPECT_EQ(calls_, settled) << "no write, no call";
}

TEST_F(FileChangeWatchTest, ABurstOfWritesFoldsIntoTheGap) {
  FileChangeWatch watch(io_, file_, 300ms, [this] { ++calls_; });
  for (int i = 0; i < 200; ++i) append("x");
  EXPECT_TRUE(test::wait_until([this] { return calls_ >= 1; }, 5000ms));
  test::wait_until([] { return false; }, 1000ms);
  EXPECT_GE(calls_, 1);
  EXPECT_LE(calls_, 2) << "one call at the first write, at most one when the gap ends";
  append("later");
  EXPECT_TRUE(test::wait_until([this] { return calls_ >= 2; }, 5000ms))
      << "a write after the gap calls again";
}

TEST_F(FileChangeWatchTest, AMissingFileIsRefusedWithItsName) {
  try {
    FileChangeWatch watch(io_, dir_.path() / "absent.mdb", 50ms, [] {});
    FAIL() << "a missing file must be refused";
  } catch (const std::runtime_error& refused) {
    EXPECT_NE(std::string(refused.what()).find("absent.mdb"), std::string::npos) << refused.what();
  }
}

}  // namespace
}  // namespace graspd::runtime
