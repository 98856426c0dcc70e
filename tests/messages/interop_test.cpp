// Cross-check with nostr-tools (npm, pinned in tests/interop/package-lock.json):
// ids, signatures and npubs computed by graspd must equal what JavaScript
// clients compute, for every tricky character, in both directions.
#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include <filesystem>
#include <fstream>
#include <random>

#include <unistd.h>

#include "messages/nostr/canonical.hpp"
#include "messages/nostr/json.hpp"
#include "messages/nostr/nip19.hpp"
#include "node_interop.hpp"
#include "nostr_test_util.hpp"

namespace graspd::nostr {
namespace {

namespace fs = std::filesystem;

// Runs `node nostr_check.mjs <args>` in tests/interop; returns stdout lines.
std::vector<std::string> run_node(const std::string& args) {
  return testing::run_command("cd '" + testing::interop_dir().string() +
                              "' && node nostr_check.mjs " + args)
      .lines;
}

class NostrToolsInterop : public ::testing::Test {
 protected:
  void SetUp() override { testing::require_node_and_nostr_tools(); }
};

std::vector<Event> tricky_events() {
  std::vector<Event> events;
  std::int64_t created_at = 1700000000;
  for (const auto& text : testing::tricky_strings())
    events.push_back(
        testing::signed_note(text, {{"t", text}, {"x", text, "y" + text}}, 1, created_at++));
  // A few authors, kinds and tag shapes.
  std::mt19937 rng(42);
  for (int i = 0; i < 20; ++i) {
    const auto kind = static_cast<std::uint32_t>(rng() % 65536);
    Tags tags(rng() % 5, Tag{"p", std::to_string(rng())});
    events.push_back(sign_event(testing::unsigned_event("random " + std::to_string(rng()), tags,
                                                        kind, static_cast<std::int64_t>(rng())),
                                testing::test_secret_key(static_cast<std::uint8_t>(i + 1))));
  }
  return events;
}

TEST_F(NostrToolsInterop, IdsSignaturesAndNpubsMatch) {
  const auto events = tricky_events();
  std::string json = "[";
  for (const auto& ev : events) {
    if (json.size() > 1) json += ",\n";
    json += serialize_event(ev);
  }
  json += "]";
  const fs::path file =
      fs::temp_directory_path() / ("graspd_interop_" + std::to_string(::getpid()) + ".json");
  std::ofstream(file, std::ios::binary) << json;
  const auto lines = run_node("check '" + file.string() + "'");
  fs::remove(file);
  ASSERT_EQ(lines.size(), events.size()) << "node produced unexpected output";
  for (std::size_t i = 0; i < events.size(); ++i) {
    rapidjson::Document doc;
    doc.Parse(lines[i].c_str(), lines[i].size());
    ASSERT_FALSE(doc.HasParseError()) << lines[i];
    EXPECT_EQ(doc["id"].GetString(), to_hex(events[i].id))
        << "id differs for content " << canonical_serialization(events[i]);
    EXPECT_TRUE(doc["valid"].GetBool()) << "nostr-tools rejects event " << i;
    EXPECT_EQ(doc["npub"].GetString(), encode_npub(events[i].pubkey));
  }
}

TEST_F(NostrToolsInterop, EventsSignedByNostrToolsVerify) {
  const auto lines = run_node("sign");
  ASSERT_EQ(lines.size(), testing::tricky_strings().size());
  const auto expected = testing::tricky_strings();
  for (std::size_t i = 0; i < lines.size(); ++i) {
    auto ev = parse_event(lines[i], ParseLimits{});
    ASSERT_TRUE(ev.ok()) << ev.error() << " in " << lines[i];
    EXPECT_EQ(ev->content, expected[i]);
    EXPECT_EQ(compute_id(*ev), ev->id) << lines[i];
    EXPECT_EQ(check_event(*ev), EventCheck::ok) << lines[i];
  }
}

}  // namespace
}  // namespace graspd::nostr
