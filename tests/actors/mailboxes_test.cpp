// GRASP-03 target hygiene and the four-relay bound (sync::select_mailboxes), against hostile
// relay lists.
#include "actors/plus/engine/mailboxes.hpp"

#include <gtest/gtest.h>

namespace graspd::sync {
namespace {

RelayList list_of(std::vector<RelayListEntry> entries) {
  RelayList list;
  list.entries = std::move(entries);
  return list;
}

HygieneConfig public_instance() {
  HygieneConfig config;
  config.own_relays = {"wss://grasp.example"};
  return config;
}

TEST(Mailboxes, TheGuardRefusesWhatThePeerMustNotMakeUsDial) {
  const auto config = public_instance();
  for (const char* bad :
       {"https://relay.example", "wss://user:pw@relay.example", "ws://127.0.0.1:7000",
        "wss://10.1.2.3", "wss://192.168.0.1", "wss://[::1]:443", "wss://localhost:7000",
        "wss://169.254.1.1", "wss://0.0.0.0", "wss://grasp.example/", "wss://relay.example/?x=1",
        "not a url"})
    EXPECT_FALSE(hygienic_relay(bad, config)) << bad;
  const std::string long_url = "wss://relay.example/" + std::string(600, 'a');
  EXPECT_FALSE(hygienic_relay(long_url, config));
  EXPECT_EQ(hygienic_relay("WSS://Relay.Example:443/", config), "wss://relay.example");
  EXPECT_EQ(hygienic_relay("wss://8.8.8.8", config), "wss://8.8.8.8");
  // Tests and private deployments allow private addresses; never ourselves.
  auto allowing = config;
  allowing.allow_private_addresses = true;
  EXPECT_EQ(hygienic_relay("ws://127.0.0.1:7000", allowing), "ws://127.0.0.1:7000");
  EXPECT_FALSE(hygienic_relay("wss://grasp.example", allowing));
}

TEST(Mailboxes, AHostileListOf500EntriesYieldsAtMostFourRelaysPerPurpose) {
  std::vector<RelayListEntry> entries;
  for (int i = 0; i < 100; ++i) entries.push_back({"ws://10.0.0." + std::to_string(i), {}});
  for (int i = 0; i < 100; ++i) entries.push_back({"wss://u:p@x" + std::to_string(i) + ".ex", {}});
  // Variants of one relay take one slot.
  entries.push_back({"wss://one.example", RelayMarker::unmarked});
  entries.push_back({"wss://ONE.example:443/", RelayMarker::unmarked});
  for (int i = 0; i < 298; ++i)
    entries.push_back({"wss://r" + std::to_string(i) + ".example",
                       i % 2 ? RelayMarker::read : RelayMarker::write});
  ASSERT_EQ(entries.size(), 500u);
  auto selected = select_mailboxes(list_of(entries), public_instance());
  EXPECT_EQ(selected.refused, 200u);
  EXPECT_EQ(selected.inboxes, (std::vector<std::string>{"wss://one.example", "wss://r1.example",
                                                        "wss://r3.example", "wss://r5.example"}));
  EXPECT_EQ(selected.outboxes, (std::vector<std::string>{"wss://one.example", "wss://r0.example",
                                                         "wss://r2.example", "wss://r4.example"}));
  EXPECT_EQ(selected.history, selected.outboxes) << "write/unmarked first";
}

TEST(Mailboxes, HistoryMailboxesPreferWriteThenFillWithRead) {
  auto selected = select_mailboxes(list_of({{"wss://read1.example", RelayMarker::read},
                                            {"wss://write1.example", RelayMarker::write},
                                            {"wss://read2.example", RelayMarker::read},
                                            {"wss://both.example", RelayMarker::unmarked},
                                            {"wss://read3.example", RelayMarker::read}}),
                                   public_instance());
  EXPECT_EQ(selected.history,
            (std::vector<std::string>{"wss://write1.example", "wss://both.example",
                                      "wss://read1.example", "wss://read2.example"}));
  EXPECT_EQ(selected.inboxes,
            (std::vector<std::string>{"wss://read1.example", "wss://read2.example",
                                      "wss://both.example", "wss://read3.example"}));
  EXPECT_EQ(selected.outboxes,
            (std::vector<std::string>{"wss://write1.example", "wss://both.example"}));
}

}  // namespace
}  // namespace graspd::sync
