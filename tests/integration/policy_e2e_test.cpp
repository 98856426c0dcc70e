// The GRASP-01 acceptance policy end to end: nostr-tools (tests/interop/
// policy_client.mjs) against the real graspd binary, plus the startup
// refusal of invalid curation lists.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>

#include "tests/support/graspd_process.hpp"
#include "tests/support/http_client.hpp"

namespace graspd::test {
namespace {

namespace fs = std::filesystem;

fs::path interop_dir() {
  const char* source = std::getenv("GRASPD_SOURCE_DIR");
  return fs::path(source ? source : ".") / "tests" / "interop";
}

std::string run_node(const std::string& script, const std::string& argument, int* status) {
  const std::string command =
      "cd '" + interop_dir().string() + "' && timeout 60 node " + script + " " + argument + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) return "popen failed";
  std::string output;
  char buffer[512];
  while (std::fgets(buffer, sizeof buffer, pipe)) output += buffer;
  *status = pclose(pipe);
  return output;
}

TEST(PolicyE2E, NostrToolsSeesEveryRuleThroughTheRealBinary) {
  ASSERT_TRUE(fs::exists(interop_dir() / "node_modules" / "nostr-tools" / "package.json"))
      << "run deploy/install-deps.sh (npm ci in tests/interop)";
  GraspdProcess graspd{GraspdOptions{{{"NGIT_SYNC_ENABLED", "false"}}, {}}};
  ASSERT_TRUE(graspd.start()) << graspd.stderr_text();
  int status = -1;
  auto output = run_node("policy_client.mjs", graspd.relay_url(), &status);
  EXPECT_EQ(status, 0) << output;
  EXPECT_EQ(output.find("fail"), std::string::npos) << output;
  EXPECT_NE(output.find("ok parked maintainer announcement"), std::string::npos) << output;

  auto nip11 = http_get(graspd.port(), "/", {{"Accept", "application/nostr+json"}});
  EXPECT_NE(nip11.body.find("\"GRASP-01\""), std::string::npos) << nip11.body;
  EXPECT_EQ(nip11.body.find("\"GRASP-02\""), std::string::npos) << "sync is disabled";
  EXPECT_NE(nip11.body.find("repo_acceptance_criteria"), std::string::npos);
  auto metrics = http_get(graspd.port(), "/metrics");
  EXPECT_NE(metrics.body.find("graspd_policy_rule_total{rule=\"related_orphan\"}"),
            std::string::npos);
  EXPECT_NE(metrics.body.find("graspd_policy_retry_total{outcome=\"accepted\"} 1"),
            std::string::npos)
      << metrics.body;
  EXPECT_EQ(graspd.stop(), 0) << graspd.stderr_text();
}

TEST(PolicyE2E, PipelinedDependantsAreAcceptedWithoutWaitingForCommits) {
  ASSERT_TRUE(fs::exists(interop_dir() / "node_modules" / "nostr-tools" / "package.json"))
      << "run deploy/install-deps.sh (npm ci in tests/interop)";
  GraspdProcess graspd{GraspdOptions{{{"NGIT_SYNC_ENABLED", "false"},
                                      {"NGIT_EVENT_RATE", "100000"},
                                      {"NGIT_EVENT_BURST", "100000"}},
                                     {}}};
  ASSERT_TRUE(graspd.start()) << graspd.stderr_text();
  int status = -1;
  auto output = run_node("pipelined_client.mjs", graspd.relay_url(), &status);
  EXPECT_EQ(status, 0) << output;
  EXPECT_EQ(output.find("fail"), std::string::npos) << output;
  EXPECT_NE(output.find("ok "), std::string::npos) << output;

  auto metrics = http_get(graspd.port(), "/metrics").body;
  EXPECT_GT(metric_value(metrics, "graspd_policy_retry_total{outcome=\"accepted_on_pending\"}"), 0)
      << metrics;
  EXPECT_LE(metric_value(metrics, "graspd_policy_retry_total{outcome=\"parked\"}"), 0)
      << "nothing pipelined may be parked";
  EXPECT_EQ(graspd.stop(), 0) << graspd.stderr_text();
}

TEST(PolicyE2E, InvalidCurationEntriesStopStartupNamingTheOption) {
  struct Case {
    const char* env;
    const char* value;
  };
  for (auto [env, value] :
       {Case{"NGIT_EVENT_BLACKLIST", "npub1nope"}, Case{"NGIT_REPOSITORY_WHITELIST", "../etc"},
        Case{"NGIT_REPOSITORY_BLACKLIST", "npub1bad/repo"},
        Case{"NGIT_ACCEPTANCE_POLICY", "lenient"}}) {
    auto exit = GraspdProcess::run_to_exit({}, {{env, value}});
    EXPECT_EQ(exit.exit_code, 2) << env;
    EXPECT_NE(exit.stderr_text.find(env), std::string::npos) << exit.stderr_text;
    EXPECT_NE(exit.stderr_text.find(value), std::string::npos) << exit.stderr_text;
  }
}

}  // namespace
}  // namespace graspd::test
