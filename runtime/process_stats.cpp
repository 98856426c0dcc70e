#include "runtime/process_stats.hpp"

#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace graspd::runtime {

namespace {

std::uint64_t resident_bytes() {
  // statm: size resident shared text lib data dt, in pages.
  std::ifstream statm("/proc/self/statm");
  std::uint64_t size_pages = 0;
  std::uint64_t resident_pages = 0;
  if (!(statm >> size_pages >> resident_pages)) return 0;
  auto page_size = ::sysconf(_SC_PAGESIZE);
  return resident_pages * static_cast<std::uint64_t>(page_size > 0 ? page_size : 4096);
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
  return ProcessStats{resident_bytes(), count_open_fds()};
}

}  // namespace graspd::runtime
