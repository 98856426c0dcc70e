// Invalid configuration stops graspd with exit code 2 and one stderr line naming the option.
#include <gtest/gtest.h>

#include <fstream>

#include "tests/support/graspd_process.hpp"

namespace graspd::test {
namespace {

using Env = std::vector<std::pair<std::string, std::string>>;

void expect_config_error(const GraspdExit& result, const std::string& line) {
  EXPECT_EQ(result.exit_code, 2) << result.stderr_text;
  EXPECT_EQ(result.stderr_text, "graspd: " + line + "\n");
}

TEST(DaemonConfig, BindAddressNonsense) {
  expect_config_error(GraspdProcess::run_to_exit({}, Env{{"NGIT_BIND_ADDRESS", "nonsense"}}),
                      "invalid NGIT_BIND_ADDRESS \"nonsense\": expected host:port");
}

TEST(DaemonConfig, UnknownLogLevel) {
  expect_config_error(
      GraspdProcess::run_to_exit({}, Env{{"NGIT_LOG_LEVEL", "loud"}}),
      "invalid NGIT_LOG_LEVEL \"loud\": expected one of trace, debug, info, warn, error");
}

TEST(DaemonConfig, BootstrapRelayWithoutHost) {
  expect_config_error(
      GraspdProcess::run_to_exit({}, Env{{"NGIT_SYNC_BOOTSTRAP_RELAY_URL", "ws://:9"}}),
      "invalid NGIT_SYNC_BOOTSTRAP_RELAY_URL \"ws://:9\": expected a ws:// or wss:// URL");
}

TEST(DaemonConfig, UnreadableConfigFile) {
  auto result = GraspdProcess::run_to_exit({"--config", "/nonexistent"});
  expect_config_error(result,
                      "invalid --config \"/nonexistent\": expected a readable config file "
                      "(No such file or directory)");
}

TEST(DaemonConfig, BadNumber) {
  expect_config_error(GraspdProcess::run_to_exit({"--max-event-bytes", "lots"}),
                      "invalid --max-event-bytes \"lots\": expected an integer from 256 to "
                      "1073741824");
}

TEST(DaemonConfig, BadValueInConfigFile) {
  auto path = std::string(::testing::TempDir()) + "graspd-bad.conf";
  std::ofstream(path) << "# test\nmetrics_enabled = sometimes\n";
  expect_config_error(
      GraspdProcess::run_to_exit({"--config", path}),
      "invalid metrics_enabled (" + path + ":2) \"sometimes\": expected true or false");
  std::remove(path.c_str());
}

TEST(DaemonConfig, UnknownFlag) {
  expect_config_error(GraspdProcess::run_to_exit({"--frobnicate"}),
                      "unknown option \"--frobnicate\" (see graspd --help)");
}

TEST(DaemonConfig, HelpListsOptionsAndExitsZero) {
  auto result = GraspdProcess::run_to_exit({"--help"});
  EXPECT_EQ(result.exit_code, 0);
  EXPECT_NE(result.stdout_text.find("NGIT_BIND_ADDRESS"), std::string::npos);
  EXPECT_NE(result.stdout_text.find("--sync-plus-retry-secs"), std::string::npos);
}

TEST(DaemonConfig, VersionExitsZero) {
  auto result = GraspdProcess::run_to_exit({"--version"});
  EXPECT_EQ(result.exit_code, 0);
  EXPECT_EQ(result.stdout_text.rfind("graspd ", 0), 0u) << result.stdout_text;
}

}  // namespace
}  // namespace graspd::test
