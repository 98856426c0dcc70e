// Whether a child process still runs, read from /proc, for tests that check a process was killed.
#pragma once

#include <fcntl.h>
#include <sys/types.h>
#include <unistd.h>

#include <string>

namespace graspd::test {

/// True once `pid` is gone or a zombie nobody has reaped yet (it runs no more either way).
inline bool process_ended(pid_t pid) {
  // POSIX reads, not an ifstream: a process reaped between open and read makes /proc answer
  // ESRCH, which libstdc++'s filebuf turns into an exception instead of an empty read.
  auto path = "/proc/" + std::to_string(pid) + "/stat";
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return true;
  char buffer[512];
  auto got = ::read(fd, buffer, sizeof buffer);
  ::close(fd);
  if (got <= 0) return true;
  std::string text(buffer, static_cast<std::size_t>(got));
  auto paren = text.rfind(')');
  return paren != std::string::npos && paren + 2 < text.size() && text[paren + 2] == 'Z';
}

}  // namespace graspd::test
