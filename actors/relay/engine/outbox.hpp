// Outbox: what one client session hands to its transport. The frames the session produces while it
// works through the messages already in its mailbox (the OKs of one store commit, a REQ's stored
// events) collect here and reach the transport in one hand-off, in order, together with the client
// text reported consumed meanwhile (inbound back-pressure). The first frame or report after a flush
// asks for the next flush through `schedule_flush`; the session sends itself ws_flush, which runs
// behind the messages already waiting. CAF-free, so the batching is tested alone.
#pragma once

#include <cstddef>
#include <functional>
#include <vector>

#include "messages/relay_messages.hpp"

namespace graspd {

class Outbox {
 public:
  Outbox() = default;
  Outbox(FrameSinkPtr sink, std::function<void()> schedule_flush);

  void send(Frame frame);
  /// `bytes` of the client's text are handled; reported to the sink with the next flush.
  void consumed(std::size_t bytes);
  /// Hands everything collected to the sink: the consumed bytes first, then the frames (one alone,
  /// several as one batch). Called for the scheduled flush, and directly when a frame must be on
  /// its way now (EOSE before the fan-out may send live events to the sink itself).
  void flush();

  /// Frames waiting for the next flush.
  std::size_t size() const { return frames_.size(); }

 private:
  void schedule();

  FrameSinkPtr sink_;
  std::function<void()> schedule_flush_;
  std::vector<Frame> frames_;
  bool flush_scheduled_ = false;
  std::size_t consumed_unreported_ = 0;
};

}  // namespace graspd
