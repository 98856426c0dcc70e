// Raw TCP connections to graspd on loopback, for tests that must hold a request half-sent or speak
// from another loopback address (127.0.0.2 is an attacker's).
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <string>

namespace graspd::test {

/// A connection to graspd on loopback from `from`, or -1.
inline int connect_from(std::uint16_t port, const char* from = "127.0.0.1") {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in local{};
  local.sin_family = AF_INET;
  ::inet_pton(AF_INET, from, &local.sin_addr);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&local), sizeof local) != 0) return ::close(fd), -1;
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(port);
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0)
    return ::close(fd), -1;
  return fd;
}

inline bool send_all(int fd, const std::string& data) {
  return ::write(fd, data.data(), data.size()) == static_cast<ssize_t>(data.size());
}

}  // namespace graspd::test
