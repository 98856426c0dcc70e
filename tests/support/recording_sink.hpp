// A FrameSink for actor tests: records every frame sent to one connection, whether it was closed,
// and how much client text the session reported consumed.
#pragma once

#include <atomic>
#include <cstddef>
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
  /// The frames recorded since the last call.
  std::vector<std::string> take() {
    std::lock_guard lock(mutex);
    return std::exchange(frames, {});
  }

  std::mutex mutex;
  std::vector<std::string> frames;
  std::atomic<bool> closed{false};
  std::atomic<std::size_t> consumed_bytes{0};
};

}  // namespace graspd::test
