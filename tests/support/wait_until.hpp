// Waiting for a condition with a deadline, for tests that watch another thread (a transport, a
// child process): the test proceeds as soon as the condition holds and fails when it never does.
#pragma once

#include <chrono>
#include <functional>
#include <thread>

namespace graspd::test {

/// Polls `condition` every 5 ms until it holds or `deadline` passes; returns its last value.
inline bool wait_until(const std::function<bool()>& condition, std::chrono::milliseconds deadline) {
  auto end = std::chrono::steady_clock::now() + deadline;
  while (std::chrono::steady_clock::now() < end) {
    if (condition()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return condition();
}

}  // namespace graspd::test
