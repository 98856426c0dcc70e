// The idle-ping rule of a WebSocket session, apart from its timer and socket so that it can be
// tested on a clock of its own: a peer silent for an interval is pinged; one that sends nothing,
// not even the pong, before the next check is dropped.
#pragma once

#include <chrono>
#include <optional>

namespace graspd::runtime {

class IdlePings {
 public:
  using Clock = std::chrono::steady_clock;

  enum class Step { wait, ping, drop };
  struct Decision {
    Step step;
    Clock::time_point next_check;  // when to call check() again (unused after drop)
  };

  IdlePings(Clock::duration interval, Clock::time_point opened)
      : interval_(interval), last_heard_(opened) {}

  /// The peer sent a frame (a message, a pong or its own ping).
  void heard(Clock::time_point at) {
    if (at > last_heard_) last_heard_ = at;
  }

  /// Decides at `now`, the timer's firing. Whether a ping was answered is judged by what was
  /// heard after it went out, never by the silence measured at the (possibly late) check: a
  /// timer that fires later than the pong's round trip must not drop a peer that answered.
  Decision check(Clock::time_point now) {
    if (ping_sent_at_) {
      if (last_heard_ < *ping_sent_at_) return {Step::drop, now};
      ping_sent_at_.reset();
    }
    if (now - last_heard_ < interval_) return {Step::wait, last_heard_ + interval_};
    ping_sent_at_ = now;
    return {Step::ping, now + interval_};
  }

  Clock::time_point last_heard() const { return last_heard_; }

 private:
  Clock::duration interval_;
  Clock::time_point last_heard_;
  std::optional<Clock::time_point> ping_sent_at_;  // the ping awaiting an answer
};

}  // namespace graspd::runtime
