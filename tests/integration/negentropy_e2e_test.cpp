// NIP-77 served by the real graspd binary to a real third-party client: nostr-tools' NegentropySync
// (tests/interop/negentropy_client.mjs) reconciles, downloads and uploads, and checks NEG-ERR
// answers. Fails (never skips) when node or node_modules is missing.
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

TEST(NegentropyE2E, NostrToolsSyncsDownAndUpAndGetsNip77Errors) {
  ASSERT_TRUE(fs::exists(interop_dir() / "node_modules" / "nostr-tools" / "package.json"))
      << interop_dir() << "/node_modules: run deploy/install-deps.sh";
  ASSERT_EQ(std::system("node --version > /dev/null 2>&1"), 0) << "node is not on PATH";
  // 220 tagged events end up stored and 40 others: a cap of 250 lets the tag filter through but
  // blocks the whole-store filter.
  const std::string cap = "250";
  GraspdProcess graspd{relay_options({{"NGIT_NEGENTROPY_MAX_SYNC_EVENTS", cap}})};
  ASSERT_TRUE(graspd.start()) << graspd.stderr_text();
  int status = -1;
  auto output =
      run_command("cd '" + interop_dir().string() + "' && timeout 60 node negentropy_client.mjs " +
                      graspd.relay_url() + " " + cap,
                  status);
  EXPECT_EQ(status, 0) << output;
  EXPECT_EQ(output.find("fail"), std::string::npos) << output;
  EXPECT_NE(output.find("ok after down+up nothing differs"), std::string::npos) << output;
  EXPECT_NE(output.find("ok more than the cap"), std::string::npos) << output;
  EXPECT_EQ(graspd.stop(), 0) << graspd.stderr_text();
}

}  // namespace
}  // namespace graspd::test
