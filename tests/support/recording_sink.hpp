// A FrameSink for actor tests: records every frame sent to one connection, whether it was closed,
// how much client text the session reported consumed, and can hold back drain requests.
#pragma once

#include <atomic>
#include <cstddef>
#include <functional>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "messages/relay_messages.hpp"

namespace graspd::test {

struct RecordingSink : FrameSink {
  void send(Frame frame) override {
    std::lock_guard lock(mutex);
    frames.push_back(frame.text());
  }
  void close(Frame) override { closed = true; }
  void consumed(std::size_t bytes) override { consumed_bytes += bytes; }
  /// Answered at once, as by a client that reads everything, unless `hold_drains` is set: then
  /// the request waits for release_drain(), as behind a client that has not read yet.
  void when_drained(std::size_t, std::function<void()> ready) override {
    {
      std::lock_guard lock(mutex);
      if (hold_drains) {
        drain = std::move(ready);
        return;
      }
    }
    ready();
  }
  /// Answers the waiting drain request; false when none waits.
  bool release_drain() {
    std::function<void()> ready;
    {
      std::lock_guard lock(mutex);
      ready = std::exchange(drain, nullptr);
    }
    if (!ready) return false;
    ready();
    return true;
  }
  /// The frames recorded since the last call.
  std::vector<std::string> take() {
    std::lock_guard lock(mutex);
    return std::exchange(frames, {});
  }

  std::mutex mutex;
  std::vector<std::string> frames;
  std::atomic<bool> closed{false};
  std::atomic<std::size_t> consumed_bytes{0};
  bool hold_drains = false;
  std::function<void()> drain;
};

}  // namespace graspd::test
