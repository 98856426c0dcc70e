// graspd's NIP-77 server against a real strfry's `strfry sync` client (spec nip77-negentropy.md
// §10): the two relays hold overlapping sets of events that all share one created_at (so every
// bound needs an id prefix); `strfry sync --dir both` must leave both with the union, and a second
// run must find nothing to do. strfry is not a Debian package: the test finds it through
// GRASPD_STRFRY (or `strfry` on PATH) and skips, saying so, where it is absent.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <string>

#include "interop_support.hpp"
#include "relay_test_helpers.hpp"
#include "sync_test_support.hpp"
#include "tests/store/store_test_util.hpp"
#include "tests/support/graspd_process.hpp"

namespace graspd::test {
namespace {

namespace fs = std::filesystem;

std::optional<std::string> strfry_binary() {
  if (const char* path = std::getenv("GRASPD_STRFRY"); path && fs::exists(path)) return path;
  int status = -1;
  auto found = run_command("command -v strfry", status);
  if (status != 0 || found.empty()) return std::nullopt;
  return found.substr(0, found.find('\n'));
}

class StrfryInterop : public ::testing::Test {
 protected:
  void SetUp() override {
    auto binary = strfry_binary();
    if (!binary) GTEST_SKIP() << "strfry not found: set GRASPD_STRFRY=/path/to/strfry to run";
    strfry_ = *binary;
    fs::create_directories(dir_.path() / "db");
    std::ofstream(dir_.path() / "strfry.conf")
        << "db = \"" << (dir_.path() / "db").string() << "/\"\n"
        << "events { rejectEventsOlderThanSeconds = 946080000 }\n"
        << "relay { bind = \"127.0.0.1\"\n port = 1\n nofiles = 0 }\n";
  }

  std::string strfry(const std::string& args, int& status) {
    return run_command(
        "'" + strfry_ + "' --config='" + (dir_.path() / "strfry.conf").string() + "' " + args,
        status);
  }

  std::size_t strfry_count() {
    int status = -1;
    auto out = strfry("export", status);
    std::size_t lines = 0;
    for (char c : out) lines += c == '\n';
    // export prints events one per line on stdout and its log lines on stderr (merged here).
    std::size_t events = 0;
    std::size_t start = 0;
    for (std::size_t i = 0; i < lines; ++i) {
      auto end = out.find('\n', start);
      events += out.compare(start, 2, "{\"") == 0;
      start = end + 1;
    }
    return events;
  }

  store::test::TempDir dir_;
  std::string strfry_;
};

TEST_F(StrfryInterop, StrfrySyncBothWaysLeavesBothRelaysWithTheUnion) {
  GraspdProcess graspd{relay_options()};
  ASSERT_TRUE(graspd.start()) << graspd.stderr_text();
  const std::int64_t t = std::time(nullptr) - 1000;
  std::vector<nostr::Event> all, graspd_side, strfry_side;
  for (int i = 0; i < 3000; ++i) {
    all.push_back(make_event(1, "s" + std::to_string(i), {{"t", "strfry-interop"}}, t));
    if (i % 10 != 1) graspd_side.push_back(all.back());
    if (i % 10 != 0) strfry_side.push_back(all.back());
  }
  auto client = TestClient::connect(graspd.port());
  ASSERT_TRUE(client);
  for (const auto& ev : graspd_side) client->send(event_frame(ev));
  for (std::size_t i = 0; i < graspd_side.size(); ++i)
    ASSERT_TRUE(client->next_as<nostr::RelayOk>()) << "OK " << i;
  {
    std::ofstream jsonl(dir_.path() / "events.jsonl");
    for (const auto& ev : strfry_side) jsonl << nostr::serialize_event(ev) << "\n";
  }
  int status = -1;
  auto imported = strfry("import < '" + (dir_.path() / "events.jsonl").string() + "'", status);
  ASSERT_EQ(status, 0) << imported;
  ASSERT_EQ(strfry_count(), strfry_side.size());

  const std::string sync =
      "sync " + graspd.relay_url() + " --filter '{\"#t\":[\"strfry-interop\"]}'";
  auto first = strfry(sync + " --dir both", status);
  EXPECT_EQ(status, 0) << first;
  // strfry holds 300 events graspd lacks and lacks 300 graspd holds.
  EXPECT_NE(first.find("Have 300 need 300"), std::string::npos) << first;
  EXPECT_EQ(stored_count(graspd.port(), all), all.size()) << first;
  EXPECT_EQ(strfry_count(), all.size()) << first;
  auto second = strfry(sync + " --dir both", status);
  EXPECT_EQ(status, 0) << second;
  EXPECT_NE(second.find("Have 0 need 0"), std::string::npos) << second;
  EXPECT_EQ(graspd.stop(), 0) << graspd.stderr_text();
}

}  // namespace
}  // namespace graspd::test
