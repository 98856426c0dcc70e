#include "tests/support/http_client.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

namespace graspd::test {

namespace {

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

std::string trim(const std::string& text) {
  auto begin = text.find_first_not_of(" \t\r");
  if (begin == std::string::npos) return {};
  auto end = text.find_last_not_of(" \t\r");
  return text.substr(begin, end - begin + 1);
}

/// Connects to 127.0.0.1:port, writes `request`, reads until EOF or timeout.
HttpResult exchange(std::uint16_t port, const std::string& request,
                    std::chrono::milliseconds timeout) {
  HttpResult result;
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) {
    result.error = std::string("socket: ") + std::strerror(errno);
    return result;
  }
  timeval tv{static_cast<time_t>(timeout.count() / 1000),
             static_cast<suseconds_t>((timeout.count() % 1000) * 1000)};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(port);
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    result.error = std::string("connect: ") + std::strerror(errno);
    ::close(fd);
    return result;
  }
  std::size_t sent = 0;
  while (sent < request.size()) {
    auto n = ::send(fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) break;  // the server may answer (e.g. 413) before reading everything
    sent += static_cast<std::size_t>(n);
  }
  std::string response;
  std::array<char, 8192> buffer{};
  while (true) {
    auto n = ::recv(fd, buffer.data(), buffer.size(), 0);
    if (n <= 0) break;
    response.append(buffer.data(), static_cast<std::size_t>(n));
  }
  ::close(fd);
  if (response.empty()) {
    result.error = "no response";
    return result;
  }
  return parse_http_response(response);
}

}  // namespace

std::string HttpResult::header(const std::string& name) const {
  auto it = headers.find(lower(name));
  return it == headers.end() ? std::string() : it->second;
}

HttpResult parse_http_response(const std::string& text) {
  HttpResult result;
  auto header_end = text.find("\r\n\r\n");
  if (header_end == std::string::npos) {
    result.error = "incomplete response";
    return result;
  }
  std::istringstream head(text.substr(0, header_end));
  std::string line;
  std::getline(head, line);
  std::istringstream status_line(line);
  std::string http_version;
  status_line >> http_version >> result.status;
  while (std::getline(head, line)) {
    auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    result.headers[lower(trim(line.substr(0, colon)))] = trim(line.substr(colon + 1));
  }
  result.body = text.substr(header_end + 4);
  return result;
}

HttpResult http_request(std::uint16_t port, const std::string& method, const std::string& target,
                        const std::vector<std::pair<std::string, std::string>>& headers,
                        std::chrono::milliseconds timeout) {
  std::string request = method + " " + target +
                        " HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port) +
                        "\r\nConnection: close\r\n";
  for (const auto& [name, value] : headers) request += name + ": " + value + "\r\n";
  request += "\r\n";
  return exchange(port, request, timeout);
}

HttpResult http_raw(std::uint16_t port, const std::string& raw, std::chrono::milliseconds timeout) {
  return exchange(port, raw, timeout);
}

int promtool_check_metrics(const std::string& text, std::string* output) {
  char path[] = "/tmp/graspd-metrics-XXXXXX";
  int fd = ::mkstemp(path);
  if (fd < 0) return -1;
  ::close(fd);
  std::ofstream(path) << text;
  std::string command = std::string("promtool check metrics < ") + path + " 2>&1";
  FILE* pipe = ::popen(command.c_str(), "r");
  if (!pipe) return -1;
  std::string captured;
  std::array<char, 512> buffer{};
  while (auto n = std::fread(buffer.data(), 1, buffer.size(), pipe))
    captured.append(buffer.data(), n);
  int status = ::pclose(pipe);
  ::unlink(path);
  if (output) *output = captured;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace graspd::test
