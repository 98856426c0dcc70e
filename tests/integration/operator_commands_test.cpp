// The operator commands against the real binary: `graspd check-config` (validation, the effective
// configuration with origins, secrets elided) and `graspd stats` (counts by kind, size on disk).
#include <gtest/gtest.h>

#include <fstream>

#include "store/lmdb/event_store.hpp"
#include "tests/support/graspd_process.hpp"
#include "tests/support/nostr_builders.hpp"
#include "tests/support/temp_dir.hpp"

namespace graspd::test {
namespace {

using Env = std::vector<std::pair<std::string, std::string>>;

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(CheckConfig, PrintsEffectiveConfigurationWithOrigins) {
  TempDir dir("graspd-check");
  auto conf = dir.file("graspd.conf");
  std::ofstream(conf) << "relay_name = \"file relay\"\nlog_level = warn\n";
  auto result = GraspdProcess::run_to_exit(
      {"check-config", "--config", conf, "--log-level", "debug"},
      Env{{"NGIT_MAX_LIMIT", "77"}, {"NGIT_RELAY_DATA_PATH", dir.file("relay")}});
  EXPECT_EQ(result.exit_code, 0) << result.stderr_text;
  EXPECT_TRUE(contains(result.stdout_text,
                       "relay_name = \"file relay\"  # from relay_name (" + conf + ":1)"))
      << result.stdout_text;
  EXPECT_TRUE(contains(result.stdout_text, "log_level = \"debug\"  # from --log-level"));
  EXPECT_TRUE(contains(result.stdout_text, "max_limit = \"77\"  # from NGIT_MAX_LIMIT"));
  EXPECT_TRUE(contains(result.stdout_text, "\nmax_filters = \"20\"\n"));
  EXPECT_TRUE(contains(result.stderr_text, "configuration OK"));
}

TEST(CheckConfig, ErrorNamesTheOptionAndExitsTwo) {
  auto result = GraspdProcess::run_to_exit({"check-config"}, Env{{"NGIT_MAX_LIMIT", "many"}});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_TRUE(contains(result.stderr_text, "graspd check-config: invalid NGIT_MAX_LIMIT \"many\""))
      << result.stderr_text;
  EXPECT_EQ(result.stdout_text, "");
}

TEST(CheckConfig, BadConfigFileLineIsAnError) {
  TempDir dir("graspd-check");
  auto conf = dir.file("graspd.conf");
  std::ofstream(conf) << "# ok\nno_such_key = 1\n";
  auto result = GraspdProcess::run_to_exit({"check-config", "--config", conf});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_TRUE(contains(result.stderr_text, "unknown key \"no_such_key\" in " + conf + ":2"))
      << result.stderr_text;
}

TEST(CheckConfig, WarnsAboutUnknownEnvironmentAndUnusablePath) {
  // A regular file where a directory is needed (root may write anywhere, so not permissions).
  TempDir dir("graspd-check");
  std::ofstream(dir.file("file")) << "x";
  auto relay = dir.file("file") + "/relay";
  auto result = GraspdProcess::run_to_exit(
      {"check-config"}, Env{{"NGIT_BIND_ADRESS", "0.0.0.0:80"}, {"NGIT_RELAY_DATA_PATH", relay}});
  EXPECT_EQ(result.exit_code, 0) << result.stderr_text;
  EXPECT_TRUE(contains(result.stderr_text,
                       "warning: environment variable NGIT_BIND_ADRESS is not a graspd option"))
      << result.stderr_text;
  EXPECT_TRUE(contains(result.stderr_text, "warning: relay_data_path \"" + relay +
                                               "\": " + dir.file("file") + " is not a directory"))
      << result.stderr_text;
}

TEST(CheckConfig, SecretLookingValuesAreElided) {
  // No option holds a secret today; a private key pasted into one must still not be echoed.
  auto nsec = "nsec1" + std::string(58, 'q');
  auto result = GraspdProcess::run_to_exit({"check-config", "--relay-description", nsec});
  EXPECT_EQ(result.exit_code, 0) << result.stderr_text;
  EXPECT_FALSE(contains(result.stdout_text, nsec));
  EXPECT_TRUE(contains(result.stdout_text, "relay_description = \"(elided)\""));
}

TEST(Stats, CountsByKindAndSizeOnDisk) {
  TempDir dir("graspd-stats");
  {
    store::StoreOptions options;
    options.path = dir.file("relay");
    std::filesystem::create_directories(options.path);
    store::EventStore store(options);
    std::vector<nostr::EventPtr> events;
    for (int i = 0; i < 3; ++i)
      events.push_back(std::make_shared<const nostr::Event>(
          signed_event(1, {}, 1700000000 + i, "note " + std::to_string(i), 1)));
    events.push_back(std::make_shared<const nostr::Event>(
        signed_event(30617, {{"d", "repo"}}, 1700000000, "", 2)));
    store.write_batch(events);
  }
  auto result = GraspdProcess::run_to_exit({"stats", "--data", dir.file("relay")});
  EXPECT_EQ(result.exit_code, 0) << result.stderr_text;
  EXPECT_TRUE(contains(result.stdout_text, "events: 4\n")) << result.stdout_text;
  EXPECT_TRUE(contains(result.stdout_text, "  kind 1: 3\n  kind 30617: 1\n"));
  EXPECT_TRUE(contains(result.stdout_text, "size on disk: "));
}

TEST(Stats, MissingStoreIsAClearError) {
  TempDir dir("graspd-stats");
  auto result = GraspdProcess::run_to_exit({"stats", "--data", dir.file("none")});
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_EQ(result.stderr_text, "graspd stats: no store at " + dir.file("none") + "\n");
}

}  // namespace
}  // namespace graspd::test
