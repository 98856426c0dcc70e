// What graspd answers on plain HTTP, independent of the socket layer (runtime/net/http_server.cpp
// adds the transport: parsing, CORS headers, HEAD, keep-alive, timeouts). Testable without sockets.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace graspd::runtime {

struct HttpRequestInfo {
  std::string_view method;  ///< "GET", "HEAD", "OPTIONS", ...
  std::string_view target;  ///< path with optional query string
  std::string_view accept;  ///< value of the Accept header, may be empty
};

struct HttpResponse {
  unsigned status = 200;
  std::string content_type;
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;  ///< extra headers
};

/// The content behind each route. Functions are called on network threads: thread-safe only.
struct SiteContent {
  std::function<std::string()> landing_page;  ///< HTML of GET / (the status page)
  std::function<std::string()> nip11;         ///< NIP-11 JSON of GET / with nostr+json Accept
  std::function<std::string()> metrics;       ///< /metrics text; empty function = metrics disabled
  /// JSON behind GET /api/<name> (e.g. "sync"); null when nothing is published under `name`.
  std::function<std::shared_ptr<const std::string>(const std::string& name)> api_document;
};

/// Headers every response carries (CORS for browser clients).
const std::vector<std::pair<std::string, std::string>>& cors_headers();

/// Maps a request to its response (without CORS headers; the transport adds those).
HttpResponse route_request(const HttpRequestInfo& request, const SiteContent& content);

/// `text` with the five HTML special characters escaped, for text and attribute values.
std::string html_escape(std::string_view text);

/// `text` with everything but RFC 3986 unreserved characters %-encoded, for one URL path segment.
std::string percent_encode(std::string_view text);

}  // namespace graspd::runtime
