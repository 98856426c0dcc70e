#include "runtime/net/http_routes.hpp"

#include <gtest/gtest.h>

#include "runtime/net/nip05.hpp"

namespace graspd::runtime {
namespace {

SiteContent content(bool metrics = true) {
  SiteContent site;
  site.landing_page = [](PageDelivery deliver) {
    deliver(std::make_shared<const std::string>("<html>landing</html>"));
  };
  site.nip11 = [] { return std::string(R"({"name":"x"})"); };
  if (metrics) site.metrics = [] { return std::string("m 1\n"); };
  return site;
}

HttpResponse get(std::string_view target, std::string_view accept = "",
                 std::string_view method = "GET", bool metrics = true) {
  return route_request({method, target, accept}, content(metrics));
}

/// The response a deferred route hands over (synchronously here: the test content is ready).
HttpResponse settle(HttpResponse response) {
  if (!response.deferred) return response;
  HttpResponse settled;
  response.deferred([&](HttpResponse ready) { settled = std::move(ready); });
  return settled;
}

TEST(HttpRoutes, LandingPageByDefault) {
  auto routed = get("/");
  ASSERT_TRUE(routed.deferred);  // the page is not rendered on the network thread
  auto response = settle(std::move(routed));
  EXPECT_EQ(response.status, 200u);
  EXPECT_EQ(response.content_type, "text/html; charset=utf-8");
  ASSERT_TRUE(response.shared_body);
  EXPECT_EQ(*response.shared_body, "<html>landing</html>");
}

TEST(HttpRoutes, LandingPageUnavailableIs503) {
  auto site = content();
  site.landing_page = [](PageDelivery deliver) { deliver(nullptr); };
  EXPECT_EQ(settle(route_request({"GET", "/", ""}, site)).status, 503u);
}

TEST(HttpRoutes, Nip11WhenAcceptAsksForIt) {
  auto response = get("/", "text/html, application/nostr+json;q=0.9");
  EXPECT_EQ(response.status, 200u);
  EXPECT_EQ(response.content_type, "application/nostr+json");
  EXPECT_EQ(response.body, R"({"name":"x"})");
  EXPECT_EQ(get("/?x=1", "application/nostr+json").content_type, "application/nostr+json");
}

TEST(HttpRoutes, PostRootWithTheRpcTypeIsTheManagementApiAndOtherPostsStay405) {
  auto site = content();
  EXPECT_EQ(
      route_request({"POST", "/", "", "application/nostr+json+rpc", "Nostr x", "{}"}, site).status,
      405u)
      << "no management API wired";
  std::string seen_authorization, seen_body;
  site.management = [&](std::string authorization, std::string body, HttpRespond respond) {
    seen_authorization = std::move(authorization);
    seen_body = std::move(body);
    respond(HttpResponse{200, "application/nostr+json+rpc", "{\"result\":true}"});
  };
  auto routed = route_request(
      {"POST", "/", "", "Application/Nostr+JSON+RPC; charset=utf-8", "Nostr abc", "{\"a\":1}"},
      site);
  ASSERT_TRUE(routed.deferred);  // the management actor answers, not the network thread
  auto answered = settle(std::move(routed));
  EXPECT_EQ(answered.status, 200u);
  EXPECT_EQ(seen_authorization, "Nostr abc");
  EXPECT_EQ(seen_body, "{\"a\":1}");
  EXPECT_EQ(route_request({"POST", "/", "", "application/json", "", "{}"}, site).status, 405u);
  EXPECT_EQ(route_request({"POST", "/", "", "application/nostr+json+rpcx", "", "{}"}, site).status,
            405u);
  EXPECT_EQ(
      route_request({"POST", "/metrics", "", "application/nostr+json+rpc", "", "{}"}, site).status,
      405u);
}

TEST(HttpRoutes, HealthAndMetrics) {
  EXPECT_EQ(get("/healthz").body, "ok\n");
  auto metrics = get("/metrics");
  EXPECT_EQ(metrics.status, 200u);
  EXPECT_EQ(metrics.body, "m 1\n");
  EXPECT_NE(metrics.content_type.find("version=0.0.4"), std::string::npos);
}

TEST(HttpRoutes, MetricsDisabledIsNotFound) {
  EXPECT_EQ(get("/metrics", "", "GET", false).status, 404u);
}

TEST(HttpRoutes, UnknownPathsAreNotFound) {
  EXPECT_EQ(get("/nope").status, 404u);
  EXPECT_EQ(get("/healthz/x").status, 404u);
  EXPECT_EQ(get("").status, 404u);
}

TEST(HttpRoutes, MethodsOptionsHeadAndOthers) {
  EXPECT_EQ(get("/", "", "OPTIONS").status, 204u);
  EXPECT_EQ(get("/metrics", "", "OPTIONS").status, 204u);
  EXPECT_EQ(get("/healthz", "", "HEAD").status, 200u);
  auto post = get("/", "", "POST");
  EXPECT_EQ(post.status, 405u);
  ASSERT_EQ(post.headers.size(), 1u);
  EXPECT_EQ(post.headers[0].first, "Allow");
}

TEST(HttpRoutes, Nip05AsksTheContentForTheNameDecodedFromTheQuery) {
  auto site = content();
  std::vector<std::optional<std::string>> asked;
  site.nip05 = [&asked](const std::optional<std::string>& name) {
    asked.push_back(name);
    return std::string(R"({"names":{}})");
  };
  auto route = [&site](std::string_view target, std::string_view method = "GET") {
    return route_request({method, target, ""}, site);
  };
  auto response = route("/.well-known/nostr.json?name=_");
  EXPECT_EQ(response.status, 200u);
  EXPECT_EQ(response.content_type, "application/json");
  EXPECT_EQ(response.body, R"({"names":{}})");
  EXPECT_EQ(route("/.well-known/nostr.json").status, 200u);
  EXPECT_EQ(route("/.well-known/nostr.json?x=1&name=").status, 200u);
  EXPECT_EQ(route("/.well-known/nostr.json?x=1&name=B%6Fb+x").status, 200u);
  EXPECT_EQ(route("/.well-known/nostr.json", "HEAD").status, 200u);
  EXPECT_EQ(route("/.well-known/nostr.json", "OPTIONS").status, 204u);
  EXPECT_EQ(route("/.well-known/nostr.json", "POST").status, 405u);
  EXPECT_EQ(asked, (std::vector<std::optional<std::string>>{"_", std::nullopt, std::nullopt,
                                                            "Bob x", std::nullopt}));
  // Not served without a relay key.
  EXPECT_EQ(get("/.well-known/nostr.json?name=_").status, 404u);
}

TEST(HttpRoutes, QueryParameter) {
  EXPECT_EQ(query_parameter("/p?name=_", "name"), "_");
  EXPECT_EQ(query_parameter("/p?a=1&name=x%20y#frag", "name"), "x y");
  EXPECT_EQ(query_parameter("/p?a=1", "name"), std::nullopt);
  EXPECT_EQ(query_parameter("/p", "name"), std::nullopt);
  EXPECT_EQ(query_parameter("/p?name", "name"), "");
  EXPECT_EQ(query_parameter("/p?name=%zz%4", "name"), "%zz%4") << "broken escapes stay as they are";
}

TEST(HttpRoutes, CorsHeaders) {
  bool origin = false;
  for (const auto& [name, value] : cors_headers()) {
    if (name == "Access-Control-Allow-Origin") origin = value == "*";
  }
  EXPECT_TRUE(origin);
  EXPECT_EQ(cors_headers().size(), 3u);
}

}  // namespace
}  // namespace graspd::runtime
