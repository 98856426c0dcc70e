// Wall-clock time in seconds since the epoch, as every component that stores or compares Nostr
// timestamps reads it. Each such component takes a UnixClock (tests pass a controllable one);
// or_system_clock gives the one default.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>

namespace graspd {

using UnixClock = std::function<std::int64_t()>;

/// Seconds since the epoch now, from the system clock.
inline std::int64_t system_unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

/// `clock`, or the system clock when it is unset.
inline UnixClock or_system_clock(UnixClock clock) {
  return clock ? std::move(clock) : UnixClock(system_unix_now);
}

}  // namespace graspd
