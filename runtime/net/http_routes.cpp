#include "runtime/net/http_routes.hpp"

#include <cctype>
#include <functional>
#include <memory>

#include "messages/relay_url.hpp"
#include "runtime/net/nip05.hpp"

namespace graspd::runtime {

namespace {

constexpr std::string_view nostr_json = "application/nostr+json";
constexpr std::string_view nip05_path = "/.well-known/nostr.json";

HttpResponse text_response(unsigned status, std::string body) {
  return HttpResponse{status, "text/plain; charset=utf-8", std::move(body), {}};
}

std::string_view path_of(std::string_view target) {
  return target.substr(0, target.find_first_of("?#"));
}

HttpResponse method_not_allowed() {
  auto response = text_response(405, "method not allowed\n");
  response.headers.emplace_back("Allow", "GET, HEAD, OPTIONS");
  return response;
}

/// GET / for browsers: the status page, whenever it is ready (the request is not served from the
/// network thread's own work).
HttpResponse landing_page(const std::function<void(PageDelivery)>& page) {
  HttpResponse response;
  response.deferred = [page](HttpRespond respond) {
    page([respond = std::move(respond)](std::shared_ptr<const std::string> html) {
      if (!html) return respond(text_response(503, "status page unavailable, retry later\n"));
      HttpResponse ready{200, "text/html; charset=utf-8", {}};
      ready.shared_body = std::move(html);
      // Rendered from live figures (at most a few seconds old): a browser must not keep a copy.
      ready.headers.emplace_back("Cache-Control", "no-cache");
      respond(std::move(ready));
    });
  };
  return response;
}

/// GET /.well-known/nostr.json: always 200 (an unknown name is an empty `names`), never a redirect
/// (NIP-05 forbids following one); the transport adds `Access-Control-Allow-Origin: *`.
HttpResponse nip05_response(
    std::string_view target,
    const std::function<std::string(const std::optional<std::string>&)>& nip05) {
  auto name = query_parameter(target, "name");
  if (name && name->empty()) name.reset();
  return HttpResponse{200, "application/json", nip05(name), {}};
}

/// Whether a request is a NIP-86 management call: POST / with the nostr+json+rpc media type
/// (parameters such as "; charset=utf-8" allowed).
bool is_management_call(const HttpRequestInfo& request, std::string_view path) {
  constexpr std::string_view rpc = "application/nostr+json+rpc";
  auto type = request.content_type.substr(0, request.content_type.find(';'));
  while (!type.empty() && type.back() == ' ') type.remove_suffix(1);
  if (path != "/" || request.method != "POST" || type.size() != rpc.size()) return false;
  for (std::size_t i = 0; i < rpc.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(type[i])) != rpc[i]) return false;
  return true;
}

/// The management actor answers (after its store writes): the network thread does not wait.
HttpResponse management_call(const HttpRequestInfo& request, const SiteContent& content) {
  HttpResponse response;
  response.deferred = [management = content.management,
                       authorization = std::string(request.authorization),
                       body = std::string(request.body)](HttpRespond respond) mutable {
    management(std::move(authorization), std::move(body), std::move(respond));
  };
  return response;
}

/// npub and identifier of /api/repositories/<npub>/<identifier>/replication; nullopt for any
/// other path (or an identifier that is not a single, well-escaped path segment).
std::optional<std::pair<std::string, std::string>> replication_path(std::string_view path) {
  constexpr std::string_view prefix = "/api/repositories/";
  constexpr std::string_view suffix = "/replication";
  if (path.size() <= prefix.size() + suffix.size() || path.rfind(prefix, 0) != 0 ||
      path.substr(path.size() - suffix.size()) != suffix)
    return std::nullopt;
  auto middle = path.substr(prefix.size(), path.size() - prefix.size() - suffix.size());
  auto slash = middle.find('/');
  if (slash == std::string_view::npos || slash == 0) return std::nullopt;
  auto identifier = percent_decode(middle.substr(slash + 1));
  if (!identifier || identifier->empty() || identifier->find('/') != std::string::npos)
    return std::nullopt;
  return std::make_pair(std::string(middle.substr(0, slash)), std::move(*identifier));
}

HttpResponse replication_request(std::pair<std::string, std::string> repository,
                                 const SiteContent& content) {
  HttpResponse response;
  response.deferred = [replication = content.replication,
                       repository = std::move(repository)](HttpRespond respond) mutable {
    replication(std::move(repository.first), std::move(repository.second), std::move(respond));
  };
  return response;
}

}  // namespace

std::string html_escape(std::string_view text) {
  std::string escaped;
  for (char c : text) {
    switch (c) {
      case '&':
        escaped += "&amp;";
        break;
      case '<':
        escaped += "&lt;";
        break;
      case '>':
        escaped += "&gt;";
        break;
      case '"':
        escaped += "&quot;";
        break;
      case '\'':
        escaped += "&#39;";
        break;
      default:
        escaped += c;
    }
  }
  return escaped;
}

std::string percent_encode(std::string_view text) {
  static constexpr char digits[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += digits[c >> 4];
      out += digits[c & 15];
    }
  }
  return out;
}

const std::vector<std::pair<std::string, std::string>>& cors_headers() {
  static const std::vector<std::pair<std::string, std::string>> headers{
      {"Access-Control-Allow-Origin", "*"},
      {"Access-Control-Allow-Headers",
       "Authorization, Content-Type, Git-Protocol, Accept, Content-Encoding, X-Requested-With"},
      {"Access-Control-Allow-Methods", "GET, HEAD, POST, OPTIONS"},
  };
  return headers;
}

HttpResponse route_request(const HttpRequestInfo& request, const SiteContent& content) {
  auto path = path_of(request.target);
  if (auto repository = content.replication ? replication_path(path) : std::nullopt) {
    if (request.method == "OPTIONS") return HttpResponse{204, {}, {}, {}};
    if (request.method != "GET" && request.method != "HEAD") return method_not_allowed();
    return replication_request(std::move(*repository), content);
  }
  std::shared_ptr<const std::string> api;
  if (path.rfind("/api/", 0) == 0 && content.api_document)
    api = content.api_document(std::string(path.substr(5)));
  bool known = path == "/" || path == "/healthz" || (path == "/metrics" && content.metrics) ||
               (path == nip05_path && content.nip05) || api;
  if (!known) return text_response(404, "not found\n");
  if (request.method == "OPTIONS") return HttpResponse{204, {}, {}, {}};
  if (content.management && is_management_call(request, path))
    return management_call(request, content);
  if (request.method != "GET" && request.method != "HEAD") return method_not_allowed();

  if (path == "/healthz") return text_response(200, "ok\n");
  if (api) return HttpResponse{200, "application/json", *api, {}};
  if (path == nip05_path) return nip05_response(request.target, content.nip05);
  if (path == "/metrics") {
    return HttpResponse{200, "text/plain; version=0.0.4; charset=utf-8", content.metrics(), {}};
  }
  if (request.accept.find(nostr_json) != std::string_view::npos) {
    return HttpResponse{200, std::string(nostr_json), content.nip11(), {}};
  }
  if (!content.landing_page) return text_response(503, "status page unavailable\n");
  return landing_page(content.landing_page);
}

}  // namespace graspd::runtime
