// The Grafana dashboard (deploy/grafana/graspd.json) and the alert rules
// (deploy/prometheus/alerts.yml) query only metrics that a running graspd exposes on /metrics, so
// neither can silently break when a metric is renamed. Families without samples are not
// serialized: the test first makes graspd do a little of everything the board shows.
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "tests/integration/relay_test_helpers.hpp"
#include "tests/support/http_client.hpp"
#include "tests/support/wait_until.hpp"

namespace graspd::test {
namespace {

using namespace std::chrono_literals;

std::string source_file(const std::string& relative) {
  const char* source = std::getenv("GRASPD_SOURCE_DIR");
  std::ifstream file(std::string(source ? source : ".") + "/" + relative);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

/// Every graspd_* metric family named in `text` (histogram series mapped to their family).
std::set<std::string> queried_families(const std::string& text) {
  static const std::regex name("graspd_[a-z0-9_]+");
  static const std::regex series_suffix("_(bucket|sum|count)$");
  std::set<std::string> families;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), name); it != std::sregex_iterator();
       ++it)
    families.insert(std::regex_replace(it->str(), series_suffix, ""));
  return families;
}

/// The families /metrics serializes ("# TYPE <name> <type>" lines).
std::set<std::string> exposed_families(const std::string& metrics) {
  static const std::regex type_line("^# TYPE ([a-z0-9_]+) ", std::regex::multiline);
  std::set<std::string> families;
  for (auto it = std::sregex_iterator(metrics.begin(), metrics.end(), type_line);
       it != std::sregex_iterator(); ++it)
    families.insert((*it)[1].str());
  return families;
}

/// The families the dashboard and the alert rules query.
std::set<std::string> queried_by_dashboard_and_alerts() {
  auto dashboard = source_file("deploy/grafana/graspd.json");
  auto alerts = source_file("deploy/prometheus/alerts.yml");
  EXPECT_FALSE(dashboard.empty());
  EXPECT_FALSE(alerts.empty());
  auto queried = queried_families(dashboard + alerts);
  EXPECT_GE(queried.size(), 15u) << "the extraction found the queries";
  return queried;
}

/// The queried families `port`'s /metrics does not show.
std::set<std::string> not_exposed(const std::set<std::string>& queried, std::uint16_t port) {
  auto exposed = exposed_families(http_get(port, "/metrics").body);
  std::set<std::string> missing;
  for (const auto& family : queried)
    if (!exposed.count(family)) missing.insert(family);
  return missing;
}

TEST(DashboardMetrics, EveryQueriedMetricIsExposed) {
  auto queried = queried_by_dashboard_and_alerts();

  GraspdProcess peer(relay_options());
  ASSERT_TRUE(peer.start()) << peer.stderr_text();
  // The default (GRASP-01) policy, so decisions are counted; sync with the peer; purgatory on, as
  // by default, for its panel.
  GraspdProcess relay({.env = {{"NGIT_SYNC_BOOTSTRAP_RELAY_URL", peer.relay_url()}},
                       .args = {},
                       .purgatory = true});
  ASSERT_TRUE(relay.start()) << relay.stderr_text();
  auto client = TestClient::connect(relay.port());
  ASSERT_TRUE(client);
  ASSERT_TRUE(client->publish(make_event(1, "not about a repository")));

  std::set<std::string> missing;
  // The status history samples the store gauges when it starts; sync counts its first dial.
  wait_until(
      [&] {
        missing = not_exposed(queried, relay.port());
        return missing.empty();
      },
      10s);
  for (const auto& family : missing) ADD_FAILURE() << family << " is queried but not exposed";
}

TEST(DashboardMetrics, EveryQueriedMetricIsExposedWithItsFeaturesOffAndNoTraffic) {
  // A panel or an alert reading "no data" from a running graspd would be indistinguishable from a
  // graspd that is down: every series exists at zero from the start.
  auto queried = queried_by_dashboard_and_alerts();
  GraspdProcess relay({.env = {{"NGIT_SYNC_ENABLED", "false"}}, .args = {}, .purgatory = false});
  ASSERT_TRUE(relay.start()) << relay.stderr_text();
  std::set<std::string> missing;
  // The status history samples the store gauges when it starts.
  wait_until(
      [&] {
        missing = not_exposed(queried, relay.port());
        return missing.empty();
      },
      10s);
  for (const auto& family : missing) ADD_FAILURE() << family << " is queried but not exposed";
}

}  // namespace
}  // namespace graspd::test
