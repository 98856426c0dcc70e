#include "actors/ops/failed_replies.hpp"

#include <utility>

#include "runtime/ops/log.hpp"

namespace graspd {

FailedReplies::FailedReplies(std::string_view component, std::string_view request,
                             caf::timespan interval)
    : component_(component), request_(request), interval_(interval) {}

void FailedReplies::report(std::string_view reason, time_point now) {
  ++total_;
  if (last_line_ && now - *last_line_ < interval_) {
    ++unreported_;
    return;
  }
  last_line_ = now;
  const auto earlier = std::exchange(unreported_, 0);
  if (earlier == 0) {
    log::warn(component_, request_, " failed: ", reason);
  } else {
    log::warn(component_, request_, " failed: ", reason, " (and ", earlier,
              " more since the last report)");
  }
}

}  // namespace graspd
