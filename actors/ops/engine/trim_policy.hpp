// When the process monitor hands freed heap memory back to the system. glibc keeps what the
// program frees for reuse, so after a large transient allocation (a big REQ answer, a burst of
// connections torn down) the process stays at its peak resident size. malloc_trim(0) returns it,
// but it walks every arena under that arena's lock, so it runs only when the anonymous resident
// memory exceeds the live heap by a margin worth returning (at least `min_excess_bytes` and half
// the live heap), and at most once per `min_interval`. Pure: no CAF, time passed in.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <optional>

#include "runtime/ops/process_stats.hpp"

namespace graspd::actors {

class TrimPolicy {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;
  struct Options {
    std::uint64_t min_excess_bytes = std::uint64_t{64} << 20;
    std::chrono::seconds min_interval{60};
  };

  TrimPolicy() = default;
  explicit TrimPolicy(Options options) : options_(options) {}

  /// True when `stats` show enough freed memory kept and the last trim is long enough ago.
  bool should_trim(const runtime::ProcessStats& stats, TimePoint now) const {
    if (last_ && now - *last_ < options_.min_interval) return false;
    const auto live = stats.heap_in_use_bytes;
    const auto resident = stats.anonymous_memory_bytes;
    return resident > live && resident - live >= std::max(options_.min_excess_bytes, live / 2);
  }
  void trimmed(TimePoint now) { last_ = now; }

 private:
  Options options_;
  std::optional<TimePoint> last_;
};

}  // namespace graspd::actors
