// The ingest regression guard: graspd runs under callgrind, a client publishes a fixed workload
// of issues to one hosted repository through the GRASP-01 policy (the path real clients take),
// and the instructions graspd executes per accepted event must stay within 10 % of the figure
// committed in ingest_instructions.baseline for this build. Instruction counts do not depend on
// the machine's load, so this is a test, not a benchmark; docs/benchmarks.md ("The ingest
// regression guard") says how the figure is taken and when to change it.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "messages/nostr/nip19.hpp"
#include "tests/integration/interop_support.hpp"
#include "tests/integration/relay_test_helpers.hpp"
#include "tests/support/graspd_process.hpp"
#include "tests/support/nostr_builders.hpp"
#include "tests/support/shell.hpp"

#ifndef GRASPD_BUILD_SIGNATURE
#error "GRASPD_BUILD_SIGNATURE names the compiler and build type the committed figures belong to"
#endif

namespace graspd::test {
namespace {

namespace fs = std::filesystem;

constexpr std::uint8_t kOwnerKey = 0x31;
constexpr int kWarmUpEvents = 50;     // first use of every path: lazily built state, page faults
constexpr int kMeasuredEvents = 300;  // the figure is the mean over these
constexpr int kPipelineWindow = 50;   // events in flight, as a real client pipelines them
constexpr double kTolerance = 1.10;

std::optional<std::string> tool_path(const std::string& name) {
  for (const char* dir : {"/usr/bin", "/usr/local/bin"}) {
    auto path = fs::path(dir) / name;
    if (fs::exists(path)) return path.string();
  }
  return std::nullopt;
}

/// The committed figure for this build, from `<signature> <instructions>` lines.
std::optional<double> committed_figure(const fs::path& file) {
  std::ifstream in(file);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    std::string signature;
    double figure = 0;
    if (fields >> signature >> figure && signature == GRASPD_BUILD_SIGNATURE) return figure;
  }
  return std::nullopt;
}

/// Total instructions ("summary:" or "totals:" line) of a callgrind dump.
std::optional<double> dumped_instructions(const fs::path& file) {
  std::ifstream in(file);
  std::string line;
  while (std::getline(in, line)) {
    for (const char* key : {"summary: ", "totals: "})
      if (line.rfind(key, 0) == 0) return std::stod(line.substr(std::string(key).size()));
  }
  return std::nullopt;
}

std::string owner_hex() {
  return nostr::to_hex(*nostr::pubkey_from_secret(secret_key(kOwnerKey)));
}

/// The workload: issues on the one repository, from a handful of authors, ~400 bytes of text.
std::vector<nostr::Event> issues(int count, std::int64_t first_created_at) {
  std::vector<nostr::Event> events;
  const std::string address = "30617:" + owner_hex() + ":guard";
  for (int i = 0; i < count; ++i) {
    std::string body = "Issue " + std::to_string(i) + ": ";
    while (body.size() < 400) body += "the clone of a large repository stalls after the fetch; ";
    events.push_back(signed_event(
        1621, {{"a", address}, {"p", owner_hex()}, {"subject", "Issue " + std::to_string(i)}},
        first_created_at + i, body, static_cast<std::uint8_t>(0x40 + i % 8)));
  }
  return events;
}

/// Sends the events with at most kPipelineWindow unanswered; true when every OK was true.
bool publish_all(TestClient& client, const std::vector<nostr::Event>& events) {
  std::size_t sent = 0, answered = 0;
  while (answered < events.size()) {
    while (sent < events.size() && sent - answered < kPipelineWindow)
      client.send(event_frame(events[sent++]));
    auto ok = client.next_as<nostr::RelayOk>(std::chrono::seconds(120));
    if (!ok || !ok->accepted) {
      ADD_FAILURE() << "event " << answered << ": " << (ok ? ok->message : "no OK in time");
      return false;
    }
    ++answered;
  }
  return true;
}

bool callgrind_command(const std::string& control, const char* flag, pid_t pid) {
  auto result = run_shell(".", control + " " + flag + " " + std::to_string(pid));
  return result.exit_code == 0;
}

TEST(IngestGuard, InstructionsPerAcceptedEventStayWithinTenPercentOfTheCommittedFigure) {
  if (GRASPD_SANITIZED) GTEST_SKIP() << "a sanitizer build does not run under valgrind";
  auto valgrind = tool_path("valgrind");
  auto control = tool_path("callgrind_control");
  if (!valgrind || !control)
    GTEST_SKIP() << "valgrind is not installed (deploy/install-deps.sh installs it)";
  // GRASPD_INGEST_PROFILE_DIR keeps the dump there, for callgrind_annotate (docs/benchmarks.md).
  TempDir temporary{"ingest-guard"};
  const char* kept = std::getenv("GRASPD_INGEST_PROFILE_DIR");
  const fs::path dumps = kept && *kept ? fs::path(kept) : temporary.path();
  const auto dump_prefix = (dumps / ("callgrind.out." + std::to_string(::getpid()))).string();
  GraspdOptions options;
  options.env = {{"NGIT_ACCEPTANCE_POLICY", "grasp01"},
                 {"NGIT_SYNC_ENABLED", "false"},
                 {"NGIT_SYNC_PLUS_ENABLED", "false"},
                 {"NGIT_EVENT_RATE", "10000000"},
                 {"NGIT_EVENT_BURST", "10000000"}};
  options.launcher = {*valgrind, "--tool=callgrind", "--callgrind-out-file=" + dump_prefix};
  GraspdProcess graspd(options);
  ASSERT_TRUE(graspd.start(std::chrono::seconds(120))) << graspd.stderr_text();

  auto client = TestClient::connect(graspd.port());
  ASSERT_TRUE(client);
  const std::string host = "127.0.0.1:" + std::to_string(graspd.port());
  const auto npub = nostr::encode_npub(*nostr::pubkey_from_secret(secret_key(kOwnerKey)));
  auto announcement = signed_event(30617,
                                   {{"d", "guard"},
                                    {"clone", "http://" + host + "/" + npub + "/guard.git"},
                                    {"relays", "ws://" + host}},
                                   1700000000, "", kOwnerKey);
  auto announced = client->publish(announcement);
  ASSERT_TRUE(announced && announced->accepted) << (announced ? announced->message : "no OK");

  auto warm_up = issues(kWarmUpEvents, 1700000100);
  auto measured = issues(kMeasuredEvents, 1700001000);
  ASSERT_TRUE(publish_all(*client, warm_up));
  ASSERT_TRUE(callgrind_command(*control, "-z", graspd.pid()));
  ASSERT_TRUE(publish_all(*client, measured));
  ASSERT_TRUE(callgrind_command(*control, "-d", graspd.pid()));

  std::optional<double> total;
  for (const auto& entry : fs::directory_iterator(dumps))
    if (entry.path().string().starts_with(dump_prefix) && entry.path().string().ends_with(".1"))
      total = dumped_instructions(entry.path());
  ASSERT_TRUE(total) << "no callgrind dump " << dump_prefix << ".1";
  const double per_event = *total / kMeasuredEvents;
  RecordProperty("instructions_per_event", std::to_string(static_cast<long long>(per_event)));
  std::cout << "ingest guard: " << static_cast<long long>(per_event)
            << " instructions per accepted event (" << GRASPD_BUILD_SIGNATURE << ")\n";
  EXPECT_EQ(graspd.stop(std::chrono::seconds(60)), 0) << graspd.stderr_text();

  // Beside this file in the source tree (tests/interop's sibling).
  auto baseline_file = interop_dir().parent_path() / "integration" / "ingest_instructions.baseline";
  auto committed = committed_figure(baseline_file);
  if (!committed)
    GTEST_SKIP() << "no committed figure for " << GRASPD_BUILD_SIGNATURE << " in "
                 << baseline_file.string() << "; measured " << static_cast<long long>(per_event);
  EXPECT_LE(per_event, *committed * kTolerance)
      << "graspd now executes " << static_cast<long long>(per_event)
      << " instructions per accepted event against the committed "
      << static_cast<long long>(*committed) << " (+" << (per_event / *committed - 1) * 100
      << " %); find the cause, or if the rise is wanted, record the new figure and why in "
         "docs/benchmarks.md";
}

}  // namespace
}  // namespace graspd::test
