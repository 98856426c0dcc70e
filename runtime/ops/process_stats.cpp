#include "runtime/ops/process_stats.hpp"

#include <malloc.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace graspd::runtime {

namespace {

/// Resident and anonymous resident bytes from statm (size resident shared text lib data dt, in
/// pages; `shared` counts the file-backed and shared resident pages).
void read_statm(ProcessStats& stats) {
  std::ifstream statm("/proc/self/statm");
  std::uint64_t size_pages = 0;
  std::uint64_t resident_pages = 0;
  std::uint64_t shared_pages = 0;
  if (!(statm >> size_pages >> resident_pages >> shared_pages)) return;
  auto page_size = ::sysconf(_SC_PAGESIZE);
  const auto page = static_cast<std::uint64_t>(page_size > 0 ? page_size : 4096);
  stats.resident_memory_bytes = resident_pages * page;
  stats.anonymous_memory_bytes =
      resident_pages > shared_pages ? (resident_pages - shared_pages) * page : 0;
}

std::uint64_t heap_in_use() {
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
  const auto info = ::mallinfo2();
  // Chunks handed out from the arenas plus the ones malloc mapped on their own.
  return info.uordblks + info.hblkhd;
#else
  return 0;
#endif
}

std::uint64_t count_open_fds() {
  std::error_code error;
  std::uint64_t count = 0;
  for (std::filesystem::directory_iterator it("/proc/self/fd", error), end; !error && it != end;
       it.increment(error)) {
    ++count;
  }
  // The directory iterator holds one descriptor of its own while counting.
  return count > 0 ? count - 1 : 0;
}

}  // namespace

ProcessStats sample_process_stats() {
  ProcessStats stats;
  read_statm(stats);
  stats.open_fds = count_open_fds();
  stats.heap_in_use_bytes = heap_in_use();
  return stats;
}

void release_free_heap() {
#if defined(__GLIBC__)
  ::malloc_trim(0);
#endif
}

}  // namespace graspd::runtime
