// Outbox: one scheduled flush per batch, frames in order (one alone, several as one batch), the
// consumed bytes before the frames, and nothing for an empty flush.
#include "actors/relay/engine/outbox.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

namespace graspd {
namespace {

/// Records each call the outbox makes, in order.
struct CallSink : FrameSink {
  void send(Frame frame) override { calls.push_back("send " + frame.text()); }
  void send_batch(std::vector<Frame> frames) override {
    std::string call = "batch";
    for (const auto& frame : frames) call += " " + frame.text();
    calls.push_back(call);
  }
  void close(Frame) override { calls.push_back("close"); }
  void consumed(std::size_t bytes) override {
    calls.push_back("consumed " + std::to_string(bytes));
  }
  std::vector<std::string> calls;
};

Frame frame(std::string text) {
  return std::make_shared<const std::string>(std::move(text));
}

class OutboxTest : public ::testing::Test {
 protected:
  std::shared_ptr<CallSink> sink_ = std::make_shared<CallSink>();
  int scheduled_ = 0;
  Outbox outbox_{sink_, [this] { ++scheduled_; }};
  using Calls = std::vector<std::string>;
};

TEST_F(OutboxTest, FramesWaitForTheScheduledFlushAndLeaveAsOneBatch) {
  outbox_.send(frame("a"));
  outbox_.send(frame("b"));
  outbox_.send(frame("c"));
  EXPECT_EQ(scheduled_, 1) << "one flush per batch";
  EXPECT_TRUE(sink_->calls.empty());
  EXPECT_EQ(outbox_.size(), 3u);
  outbox_.flush();
  EXPECT_EQ(sink_->calls, Calls{"batch a b c"});
  EXPECT_EQ(outbox_.size(), 0u);
}

TEST_F(OutboxTest, AFrameAloneIsSentAlone) {
  outbox_.send(frame("a"));
  outbox_.flush();
  EXPECT_EQ(sink_->calls, Calls{"send a"});
}

TEST_F(OutboxTest, TheNextFrameAfterAFlushSchedulesAgain) {
  outbox_.send(frame("a"));
  outbox_.flush();
  outbox_.send(frame("b"));
  EXPECT_EQ(scheduled_, 2);
  outbox_.flush();
  EXPECT_EQ(sink_->calls, (Calls{"send a", "send b"}));
}

TEST_F(OutboxTest, ConsumedBytesAddUpAndGoBeforeTheFrames) {
  outbox_.consumed(10);
  EXPECT_EQ(scheduled_, 1) << "a report alone is flushed too";
  outbox_.send(frame("a"));
  outbox_.consumed(5);
  outbox_.send(frame("b"));
  EXPECT_EQ(scheduled_, 1);
  outbox_.flush();
  EXPECT_EQ(sink_->calls, (Calls{"consumed 15", "batch a b"}));
  outbox_.consumed(7);
  outbox_.flush();
  EXPECT_EQ(sink_->calls, (Calls{"consumed 15", "batch a b", "consumed 7"}));
}

TEST_F(OutboxTest, AnEmptyFlushCallsNothing) {
  outbox_.flush();
  outbox_.send(frame("a"));
  outbox_.flush();
  outbox_.flush();  // the scheduled flush after a direct one finds nothing left
  EXPECT_EQ(sink_->calls, Calls{"send a"});
}

}  // namespace
}  // namespace graspd
