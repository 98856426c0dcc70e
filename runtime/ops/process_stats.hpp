// Point-in-time statistics of this process, read from /proc (Linux).
#pragma once

#include <cstdint>

namespace graspd::runtime {

struct ProcessStats {
  std::uint64_t resident_memory_bytes = 0;
  std::uint64_t open_fds = 0;
  /// Resident memory that is neither file-backed nor shared (heap, stacks): the part freeing can
  /// lower. The LMDB map's pages are file-backed and not in it.
  std::uint64_t anonymous_memory_bytes = 0;
  /// Bytes malloc has handed out and not got back: the live heap.
  std::uint64_t heap_in_use_bytes = 0;
};

/// Reads /proc/self/statm, counts /proc/self/fd and asks malloc for its live bytes. Never throws;
/// unreadable values stay 0.
ProcessStats sample_process_stats();

/// Hands the free memory malloc keeps back to the system (glibc `malloc_trim(0)`). Walks every
/// arena under its lock: cheap once in a while, not per request.
void release_free_heap();

}  // namespace graspd::runtime
