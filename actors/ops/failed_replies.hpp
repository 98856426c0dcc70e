// FailedReplies: the log side of "every failed reply is counted or logged". An actor keeps one per
// kind of request in its state and calls it from the error branch of `.then(...)`:
//
//   [self](caf::error& error) { self->state.write_failures.report(self, error); }
//
// The first failure is logged at once as a warning naming the component, the request and CAF's
// reason; later ones at most once per interval, with how many failed since the last line, so a
// peer that is gone cannot flood the log. Time comes from the actor's clock (the test
// coordinator's in tests). Not thread-safe: it belongs to one actor.
#pragma once

#include <caf/actor_clock.hpp>
#include <caf/actor_system.hpp>
#include <caf/error.hpp>
#include <caf/timespan.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace graspd {

class FailedReplies {
 public:
  using time_point = caf::actor_clock::time_point;

  /// `component` is the log component (the actor's name), `request` what was asked
  /// ("store write"); one line per `interval` at most.
  FailedReplies(std::string_view component, std::string_view request,
                caf::timespan interval = std::chrono::minutes(1));

  /// Counts a failure of the request, rendered with the actor's system, at the actor's time.
  template <class Self>
  void report(Self self, const caf::error& error) {
    report(self->system().render(error), self->clock().now());
  }

  /// Counts a failure with reason `reason` at `now`; logs it unless a line went out less than
  /// the interval ago.
  void report(std::string_view reason, time_point now);

  /// Failures reported so far, logged or not.
  std::uint64_t total() const { return total_; }

 private:
  std::string component_;
  std::string request_;
  caf::timespan interval_;
  std::optional<time_point> last_line_;
  std::uint64_t total_ = 0;
  /// Failures since the last line that it did not mention.
  std::uint64_t unreported_ = 0;
};

}  // namespace graspd
