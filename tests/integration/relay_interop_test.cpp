// nostr-tools (npm, tests/interop) as a real third-party client of the real
// graspd binary: publish, duplicate, invalid, query, live subscription,
// CLOSE and COUNT. Fails (never skips) when node or node_modules is missing.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>

#include "interop_support.hpp"
#include "relay_test_helpers.hpp"
#include "tests/support/graspd_process.hpp"

namespace graspd::test {
namespace {

namespace fs = std::filesystem;

TEST(RelayInterop, NostrToolsPublishesQueriesSubscribesAndCounts) {
  ASSERT_TRUE(fs::exists(interop_dir() / "node_modules" / "nostr-tools" / "package.json"))
      << interop_dir()
      << "/node_modules: run deploy/install-deps.sh (or `npm ci` in tests/interop)";
  ASSERT_EQ(std::system("node --version > /dev/null 2>&1"), 0) << "node is not on PATH";
  GraspdProcess graspd{relay_options()};
  ASSERT_TRUE(graspd.start()) << graspd.stderr_text();

  int status = -1;
  auto output = run_command("cd '" + interop_dir().string() +
                                "' && timeout 60 node relay_client.mjs " + graspd.relay_url(),
                            status);
  EXPECT_EQ(status, 0) << output;
  EXPECT_EQ(output.find("fail"), std::string::npos) << output;
  EXPECT_NE(output.find("ok COUNT"), std::string::npos) << output;
  EXPECT_EQ(graspd.stop(), 0) << graspd.stderr_text();
}

// permessage-deflate as `ws` (nostr-tools' transport) negotiates it: with and without context
// takeover, with small windows; REQ answers (cached and not) and live events arrive intact.
TEST(RelayInterop, DeflateClientsReceiveEveryEventIntact) {
  ASSERT_TRUE(fs::exists(interop_dir() / "node_modules" / "ws" / "package.json")) << interop_dir();
  GraspdProcess graspd{relay_options()};
  ASSERT_TRUE(graspd.start()) << graspd.stderr_text();

  int status = -1;
  auto output = run_command("cd '" + interop_dir().string() +
                                "' && timeout 60 node deflate_client.mjs " + graspd.relay_url(),
                            status);
  EXPECT_EQ(status, 0) << output;
  EXPECT_EQ(output.find("fail"), std::string::npos) << output;
  EXPECT_NE(output.find("ok deflate, no context takeover: cached REQ"), std::string::npos)
      << output;
  EXPECT_EQ(graspd.stop(), 0) << graspd.stderr_text();
}

}  // namespace
}  // namespace graspd::test
