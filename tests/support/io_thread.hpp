// An io_context run by one thread of its own, for tests of code that posts to an executor and
// answers there (child processes, loopback sockets). The test thread posts work with run_on() and
// waits for what the handlers record with wait_until().
#pragma once

#include <utility>  // before Asio, see toolchain.md §1

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <chrono>
#include <functional>
#include <future>
#include <optional>
#include <thread>

namespace graspd::test {

class IoThread {
 public:
  /// `before_run` runs on the thread first (e.g. to block signals there as the daemon does).
  explicit IoThread(std::function<void()> before_run = {})
      : thread_([this, before = std::move(before_run)] {
          if (before) before();
          io_.run();
        }) {}
  ~IoThread() { stop(); }
  IoThread(const IoThread&) = delete;
  IoThread& operator=(const IoThread&) = delete;

  boost::asio::io_context& io() { return io_; }
  boost::asio::io_context::executor_type executor() { return io_.get_executor(); }

  /// Runs `work` on `executor` (the io thread) and waits for it; false after `deadline`.
  template <class Executor>
  bool run_on(const Executor& executor, std::function<void()> work,
              std::chrono::milliseconds deadline = std::chrono::seconds(30)) {
    auto done = std::make_shared<std::promise<void>>();
    auto future = done->get_future();
    boost::asio::post(executor, [done, work = std::move(work)] {
      work();
      done->set_value();
    });
    return future.wait_for(deadline) == std::future_status::ready;
  }
  bool run_on(std::function<void()> work) { return run_on(executor(), std::move(work)); }

  /// Lets the thread finish what is queued, then stops it; idempotent.
  void stop() {
    if (!thread_.joinable()) return;
    // Work posted before this runs first; then the guard goes and nothing else keeps it alive.
    run_on([] {});
    work_.reset();
    io_.stop();
    thread_.join();
  }

 private:
  boost::asio::io_context io_{1};
  std::optional<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> work_{
      boost::asio::make_work_guard(io_)};
  std::thread thread_;
};

}  // namespace graspd::test
