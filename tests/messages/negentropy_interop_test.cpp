// NIP-77 cross-check with the JavaScript port in nostr-tools: runs
// tests/interop/negentropy_interop.mjs against our line harness
// (negentropy_harness.cpp). The script checks byte identity of every message
// per role, the have/need sets and the frame size limits on seeded random sets.
#include <gtest/gtest.h>

#include <string>

#include "node_interop.hpp"

namespace graspd::nostr {
namespace {

TEST(NegentropyInterop, MatchesNostrToolsOnSeededSets) {
  testing::require_node_and_nostr_tools();
  if (HasFatalFailure()) return;
  const std::string command = "cd '" + testing::interop_dir().string() +
                              "' && node negentropy_interop.mjs '" NEGENTROPY_HARNESS
                              "' 7 " NEGENTROPY_INTEROP_SCALE " 2>&1";
  const auto result = testing::run_command(command);
  std::string output;
  for (const auto& line : result.lines) output += line + '\n';
  EXPECT_EQ(result.exit_code, 0) << output;
  ASSERT_FALSE(result.lines.empty());
  EXPECT_EQ(result.lines.back().rfind("negentropy interop: ", 0), 0u) << output;
  std::cout << output;
}

}  // namespace
}  // namespace graspd::nostr
