// Waiting for a condition with a deadline, for tests that watch another thread (a transport, a
// child process): the test proceeds as soon as the condition holds and fails when it never does.
#pragma once

#include <algorithm>
#include <chrono>
#include <functional>
#include <thread>

namespace graspd::test {

/// Polls `condition` until it holds or `deadline` passes; returns its last value. The pause
/// between polls grows from 5 ms to 50 ms: a quick condition is seen at once, and a long wait
/// (where each poll may be an HTTP request to the relay under test) does not load what it watches.
inline bool wait_until(const std::function<bool()>& condition,
                       std::chrono::milliseconds deadline = std::chrono::seconds(30)) {
  const auto end = std::chrono::steady_clock::now() + deadline;
  std::chrono::milliseconds pause{5};
  while (std::chrono::steady_clock::now() < end) {
    if (condition()) return true;
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds{50});
  }
  return condition();
}

}  // namespace graspd::test
