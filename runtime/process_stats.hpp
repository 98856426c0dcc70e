// Point-in-time statistics of this process, read from /proc (Linux).
#pragma once

#include <cstdint>

namespace graspd::runtime {

struct ProcessStats {
  std::uint64_t resident_memory_bytes = 0;
  std::uint64_t open_fds = 0;
};

/// Reads /proc/self/statm and counts /proc/self/fd. Never throws; unreadable values stay 0.
ProcessStats sample_process_stats();

}  // namespace graspd::runtime
