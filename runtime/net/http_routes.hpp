// What graspd answers on plain HTTP, independent of the socket layer (runtime/net/http_server.cpp
// adds the transport: parsing, CORS headers, HEAD, keep-alive, timeouts). Testable without sockets.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace graspd::runtime {

struct HttpRequestInfo {
  std::string_view method{};         ///< "GET", "HEAD", "OPTIONS", ...
  std::string_view target{};         ///< path with optional query string
  std::string_view accept{};         ///< value of the Accept header, may be empty
  std::string_view content_type{};   ///< value of the Content-Type header, may be empty
  std::string_view authorization{};  ///< value of the Authorization header, may be empty
  std::string_view body{};           ///< the request body (at most the server's body limit)
};

struct HttpResponse;

/// Takes a response that was not ready when the request was routed; callable once, from any
/// thread (the transport carries the response back to the connection's own executor).
using HttpRespond = std::function<void(HttpResponse)>;

struct HttpResponse {
  HttpResponse() = default;
  HttpResponse(unsigned status, std::string content_type, std::string body,
               std::vector<std::pair<std::string, std::string>> headers = {})
      : status(status),
        content_type(std::move(content_type)),
        body(std::move(body)),
        headers(std::move(headers)) {}

  unsigned status = 200;
  std::string content_type;
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;  ///< extra headers
  /// Sent instead of `body` when set, without a copy: one rendered page shared by every
  /// connection that is sending it.
  std::shared_ptr<const std::string> shared_body;
  /// When set, the rest is ignored: the transport calls it with where to send the response,
  /// which may come later from another thread. The network thread does not wait for it.
  std::function<void(HttpRespond)> deferred;
};

/// Where the status page goes once there is one; null when none could be rendered.
using PageDelivery = std::function<void(std::shared_ptr<const std::string> html)>;

/// The content behind each route. Functions are called on network threads: thread-safe only.
struct SiteContent {
  /// HTML of GET / (the status page), handed to the delivery now or later from another thread
  /// (runtime/ops/status_page_cache.hpp: rendered off the network threads).
  std::function<void(PageDelivery)> landing_page;
  std::function<std::string()> nip11;    ///< NIP-11 JSON of GET / with nostr+json Accept
  std::function<std::string()> metrics;  ///< /metrics text; empty function = metrics disabled
  /// JSON behind GET /api/<name> (e.g. "sync"); null when nothing is published under `name`.
  std::function<std::shared_ptr<const std::string>(const std::string& name)> api_document;
  /// NIP-05 JSON of GET /.well-known/nostr.json for the `name` asked (nullopt = none); empty
  /// function = not served (runtime/net/nip05.hpp).
  std::function<std::string(const std::optional<std::string>& name)> nip05;
  /// NIP-86 management API (POST / with Content-Type application/nostr+json+rpc): takes the
  /// Authorization header and the body, answers through the HttpRespond, later, from any thread.
  /// Empty: not offered (POST / is 405).
  std::function<void(std::string authorization, std::string body, HttpRespond respond)> management;
  /// The replication view of one hosted repository, GET
  /// /api/repositories/<npub>/<identifier>/replication (the identifier percent-decoded): answers
  /// through the HttpRespond, later, from any thread. Empty: not offered (404).
  std::function<void(std::string npub, std::string identifier, HttpRespond respond)> replication;
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
