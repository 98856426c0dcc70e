// nostr-tools (npm, tests/interop) as a real third-party client of the real
// graspd binary: publish, duplicate, invalid, query, live subscription,
// CLOSE and COUNT. Fails (never skips) when node or node_modules is missing.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>

#include "relay_test_helpers.hpp"
#include "tests/support/graspd_process.hpp"

namespace graspd::test {
namespace {

namespace fs = std::filesystem;

fs::path interop_dir() {
  if (const char* source = std::getenv("GRASPD_SOURCE_DIR"))
    return fs::path(source) / "tests" / "interop";
  return fs::path(__FILE__).parent_path().parent_path() / "interop";  // CMake passes absolute paths
}

struct PcloseDeleter {
  void operator()(FILE* f) const { pclose(f); }
};

TEST(RelayInterop, NostrToolsPublishesQueriesSubscribesAndCounts) {
  ASSERT_TRUE(fs::exists(interop_dir() / "node_modules" / "nostr-tools" / "package.json"))
      << interop_dir()
      << "/node_modules: run deploy/install-deps.sh (or `npm ci` in tests/interop)";
  ASSERT_EQ(std::system("node --version > /dev/null 2>&1"), 0) << "node is not on PATH";
  GraspdProcess graspd{relay_options()};
  ASSERT_TRUE(graspd.start()) << graspd.stderr_text();

  const std::string command = "cd '" + interop_dir().string() +
                              "' && timeout 60 node relay_client.mjs " + graspd.relay_url() +
                              " 2>&1";
  std::unique_ptr<FILE, PcloseDeleter> pipe(popen(command.c_str(), "r"));
  ASSERT_TRUE(pipe);
  std::string output;
  char buffer[512];
  while (std::fgets(buffer, sizeof buffer, pipe.get())) output += buffer;
  int status = pclose(pipe.release());
  EXPECT_EQ(status, 0) << output;
  EXPECT_EQ(output.find("fail"), std::string::npos) << output;
  EXPECT_NE(output.find("ok COUNT"), std::string::npos) << output;
  EXPECT_EQ(graspd.stop(), 0) << graspd.stderr_text();
}

}  // namespace
}  // namespace graspd::test
