// Another git host on the loopback interface: the repositories under one directory served over
// Smart HTTP by `git http-backend` run as a CGI program, one request per connection, one at a time
// on a thread of its own. It is the "other clone URL" of the tests of git data fetches
// (runtime/git/git_fetcher.*, git_state_sync.*): independent of graspd's own git hosting, and it
// records the requests it saw, so a test can tell that nothing was fetched.
#pragma once

#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdint>
#include <filesystem>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace graspd::test {

class GitBackendServer {
 public:
  /// Serves the repositories under `root` (GIT_PROJECT_ROOT, every one exported) at
  /// http://127.0.0.1:<port()>/<path relative to root>.
  explicit GitBackendServer(std::filesystem::path root) : root_(std::move(root)) {
    listener_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof address;
    if (listener_ < 0 || ::bind(listener_, reinterpret_cast<sockaddr*>(&address), length) != 0 ||
        ::listen(listener_, 16) != 0 ||
        ::getsockname(listener_, reinterpret_cast<sockaddr*>(&address), &length) != 0 ||
        ::pipe2(wake_, O_CLOEXEC) != 0)
      throw std::runtime_error("GitBackendServer: cannot listen on 127.0.0.1");
    port_ = ntohs(address.sin_port);
    thread_ = std::thread([this] { serve(); });
  }
  ~GitBackendServer() {
    [[maybe_unused]] auto woken = ::write(wake_[1], "x", 1);
    thread_.join();
    ::close(listener_);
    ::close(wake_[0]);
    ::close(wake_[1]);
  }
  GitBackendServer(const GitBackendServer&) = delete;
  GitBackendServer& operator=(const GitBackendServer&) = delete;

  std::uint16_t port() const { return port_; }
  /// The clone URL of `relative` (a path under the root, e.g. "source.git").
  std::string url(const std::string& relative) const {
    return "http://127.0.0.1:" + std::to_string(port_) + "/" + relative;
  }
  /// The request lines seen so far, e.g. "GET /source.git/info/refs?service=git-upload-pack".
  std::vector<std::string> requests() const {
    std::lock_guard lock{mutex_};
    return requests_;
  }
  /// How many requests named `path_part` in their target.
  std::size_t requests_for(const std::string& path_part) const {
    auto seen = requests();
    return static_cast<std::size_t>(std::count_if(seen.begin(), seen.end(), [&](auto& line) {
      return line.find(path_part) != std::string::npos;
    }));
  }

 private:
  struct Request {
    std::string method, path, query, body;
    std::vector<std::pair<std::string, std::string>> headers;  // names lowercased
    std::string header(const std::string& name) const {
      for (const auto& [key, value] : headers)
        if (key == name) return value;
      return "";
    }
  };

  void serve() {
    while (true) {
      pollfd fds[2] = {{listener_, POLLIN, 0}, {wake_[0], POLLIN, 0}};
      if (::poll(fds, 2, -1) < 0) continue;
      if (fds[1].revents) return;
      int fd = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) continue;
      timeval timeout{10, 0};
      ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
      ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout);
      Request request;
      if (read_request(fd, request)) answer(fd, request);
      ::close(fd);
    }
  }

  /// Reads more bytes into `buffer`; false at EOF, an error or the receive timeout. A socket with
  /// a timeout fails with EINTR when the process is stopped and continued: that is retried.
  static bool read_more(int fd, std::string& buffer) {
    char chunk[16 * 1024];
    ssize_t n;
    do n = ::recv(fd, chunk, sizeof chunk, 0);
    while (n < 0 && errno == EINTR);
    if (n <= 0) return false;
    buffer.append(chunk, static_cast<std::size_t>(n));
    return true;
  }

  bool read_request(int fd, Request& request) {
    std::string buffer;
    std::size_t end;
    while ((end = buffer.find("\r\n\r\n")) == std::string::npos)
      if (!read_more(fd, buffer)) return false;
    auto head = buffer.substr(0, end);
    buffer.erase(0, end + 4);
    auto line_end = head.find("\r\n");
    auto request_line = head.substr(0, line_end);
    {
      std::lock_guard lock{mutex_};
      requests_.push_back(request_line.substr(0, request_line.rfind(' ')));
    }
    auto space = request_line.find(' ');
    request.method = request_line.substr(0, space);
    auto target = request_line.substr(space + 1, request_line.rfind(' ') - space - 1);
    auto question = target.find('?');
    request.path = target.substr(0, question);
    if (question != std::string::npos) request.query = target.substr(question + 1);
    for (auto at = line_end; at != std::string::npos && at + 2 < head.size();) {
      auto next = head.find("\r\n", at + 2);
      auto line =
          head.substr(at + 2, next == std::string::npos ? std::string::npos : next - at - 2);
      auto colon = line.find(':');
      if (colon != std::string::npos) {
        auto name = line.substr(0, colon);
        std::transform(name.begin(), name.end(), name.begin(),
                       [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
        auto value = line.substr(colon + 1);
        value.erase(0, value.find_first_not_of(' '));
        request.headers.emplace_back(name, value);
      }
      at = next;
    }
    if (request.header("transfer-encoding") == "chunked") return read_chunked(fd, buffer, request);
    auto length = request.header("content-length");
    std::size_t wanted = length.empty() ? 0 : std::stoul(length);
    while (buffer.size() < wanted)
      if (!read_more(fd, buffer)) return false;
    request.body = buffer.substr(0, wanted);
    return true;
  }

  static bool read_chunked(int fd, std::string& buffer, Request& request) {
    while (true) {
      std::size_t eol;
      while ((eol = buffer.find("\r\n")) == std::string::npos)
        if (!read_more(fd, buffer)) return false;
      auto size = std::stoul(buffer.substr(0, eol), nullptr, 16);
      while (buffer.size() < eol + 2 + size + 2)
        if (!read_more(fd, buffer)) return false;
      request.body += buffer.substr(eol + 2, size);
      buffer.erase(0, eol + 2 + size + 2);
      if (size == 0) return true;  // trailers are not expected from git
    }
  }

  /// Runs `git http-backend` for `request` and sends back what it printed as an HTTP answer.
  void answer(int fd, const Request& request) {
    std::vector<std::string> env{"PATH=/usr/bin:/bin",
                                 "HOME=" + root_.string(),
                                 "GIT_CONFIG_NOSYSTEM=1",
                                 "GIT_PROJECT_ROOT=" + root_.string(),
                                 "GIT_HTTP_EXPORT_ALL=1",
                                 "REMOTE_ADDR=127.0.0.1",
                                 "REQUEST_METHOD=" + request.method,
                                 "PATH_INFO=" + request.path,
                                 "QUERY_STRING=" + request.query,
                                 "CONTENT_TYPE=" + request.header("content-type"),
                                 "CONTENT_LENGTH=" + std::to_string(request.body.size())};
    if (auto encoding = request.header("content-encoding"); !encoding.empty())
      env.push_back("HTTP_CONTENT_ENCODING=" + encoding);
    if (auto protocol = request.header("git-protocol"); !protocol.empty())
      env.push_back("GIT_PROTOCOL=" + protocol);
    auto output = run_backend(env, request.body);
    auto split = output.find("\r\n\r\n");
    std::size_t separator = 4;
    if (split == std::string::npos) {
      split = output.find("\n\n");
      separator = 2;
    }
    if (split == std::string::npos) return send_all(fd, "HTTP/1.1 500 Bad CGI\r\n\r\n");
    std::string status = "200 OK", headers;
    std::string head = output.substr(0, split);
    for (std::size_t at = 0; at < head.size();) {
      auto next = head.find('\n', at);
      auto line = head.substr(at, next == std::string::npos ? std::string::npos : next - at);
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (line.rfind("Status: ", 0) == 0)
        status = line.substr(8);
      else if (!line.empty())
        headers += line + "\r\n";
      at = next == std::string::npos ? head.size() : next + 1;
    }
    auto body = output.substr(split + separator);
    send_all(fd, "HTTP/1.1 " + status + "\r\n" + headers + "Content-Length: " +
                     std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body);
  }

  /// `git http-backend` with `env`, `body` on its stdin (from an unlinked temp file); its stdout.
  static std::string run_backend(const std::vector<std::string>& env, const std::string& body) {
    char name[] = "/tmp/graspd-cgi-body-XXXXXX";
    int input = ::mkostemp(name, O_CLOEXEC);
    if (input < 0) return "";
    ::unlink(name);
    bool written = ::write(input, body.data(), body.size()) == static_cast<ssize_t>(body.size());
    int out[2];
    if (!written || ::lseek(input, 0, SEEK_SET) != 0 || ::pipe2(out, O_CLOEXEC) != 0) {
      ::close(input);
      return "";
    }
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, input, 0);
    posix_spawn_file_actions_adddup2(&actions, out[1], 1);
    // Its complaints (a missing repository, `not our ref`) reach the client in the answer.
    posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
    std::vector<char*> argv{const_cast<char*>("git"), const_cast<char*>("http-backend"), nullptr};
    std::vector<char*> envp;
    for (const auto& e : env) envp.push_back(const_cast<char*>(e.c_str()));
    envp.push_back(nullptr);
    pid_t pid = -1;
    int rc = ::posix_spawnp(&pid, "git", &actions, nullptr, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&actions);
    ::close(input);
    ::close(out[1]);
    std::string output;
    if (rc == 0) {
      char chunk[16 * 1024];
      ssize_t n;
      while ((n = ::read(out[0], chunk, sizeof chunk)) > 0 || (n < 0 && errno == EINTR))
        if (n > 0) output.append(chunk, static_cast<std::size_t>(n));
      int status = 0;
      ::waitpid(pid, &status, 0);
    }
    ::close(out[0]);
    return output;
  }

  static void send_all(int fd, const std::string& text) {
    for (std::size_t sent = 0; sent < text.size();) {
      auto n = ::send(fd, text.data() + sent, text.size() - sent, MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return;
      sent += static_cast<std::size_t>(n);
    }
  }

  std::filesystem::path root_;
  int listener_ = -1;
  int wake_[2] = {-1, -1};
  std::uint16_t port_ = 0;
  mutable std::mutex mutex_;
  std::vector<std::string> requests_;
  std::thread thread_;
};

}  // namespace graspd::test
