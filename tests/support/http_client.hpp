// A tiny blocking HTTP/1.1 client over plain sockets for tests (one request per connection).
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace graspd::test {

struct HttpResult {
  int status = 0;                              ///< 0 when no response could be read
  std::map<std::string, std::string> headers;  ///< names lowercased
  std::string body;
  std::string error;  ///< what went wrong when status == 0

  /// Header value or "" (name is case-insensitive).
  std::string header(const std::string& name) const;
};

/// Sends `method target` to 127.0.0.1:port with `Connection: close` and extra headers.
HttpResult http_request(std::uint16_t port, const std::string& method, const std::string& target,
                        const std::vector<std::pair<std::string, std::string>>& headers = {},
                        std::chrono::milliseconds timeout = std::chrono::seconds(5));

inline HttpResult http_get(std::uint16_t port, const std::string& target,
                           const std::vector<std::pair<std::string, std::string>>& headers = {}) {
  return http_request(port, "GET", target, headers);
}

/// Writes `raw` bytes as they are and parses whatever comes back (malformed-request tests).
HttpResult http_raw(std::uint16_t port, const std::string& raw,
                    std::chrono::milliseconds timeout = std::chrono::seconds(5));

/// Parses a complete response read until EOF.
HttpResult parse_http_response(const std::string& text);

/// Runs `promtool check metrics` on `text`; returns its exit code and stores its output.
int promtool_check_metrics(const std::string& text, std::string* output = nullptr);

/// The value of one sample line of the Prometheus text, or -1 when it is absent.
inline double metric_value(const std::string& text, const std::string& sample) {
  auto at = text.find("\n" + sample + " ");
  if (at == std::string::npos) return -1;
  return std::stod(text.substr(at + sample.size() + 2));
}

}  // namespace graspd::test
