// The REPLICATION PROBE actor: one per comparison of one relay with our store over one
// repository's filters (docs/replication.md). It dials the relay like the sync does (the same
// transport and URL guard), runs the NIP-77 sessions of a RelayComparison one after the other,
// sends the replication actor a RelayProbeOutcome (figures, or why there are none) and quits. It
// sends no REQ and fetches no event: nothing is downloaded.
#pragma once

#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "actors/sync/engine/relay_comparison.hpp"
#include "actors/sync/relay_connection.hpp"
#include "messages/interfaces.hpp"

namespace graspd {

struct ReplicationProbeConfig {
  /// Opens the connection (boot: on the network threads; tests: scripted peers).
  RelayClientFactory clients;
  /// The sync's client options: private addresses refused unless NGIT_SYNC_ALLOW_PRIVATE_ADDRESSES,
  /// this service's own endpoint never dialled, connect failures not detailed.
  runtime::RelayClientOptions client;
  sync::LocalRecords local_records;
  /// Our records compared per filter at most (NGIT_NEGENTROPY_MAX_SYNC_EVENTS).
  std::size_t max_records = 1'000'000;
  std::size_t max_rounds = nostr::negentropy::default_max_rounds;
  /// The whole comparison, connection included.
  std::chrono::seconds timeout{60};
};

struct ReplicationProbeState {
  static inline const char* name = "replication_probe";

  std::uint64_t probe = 0;
  replication_actor owner;
  std::shared_ptr<runtime::RelayClient> client;
  std::optional<sync::RelayComparison> comparison;
  bool opened = false;
  bool reported = false;
};

/// Compares `relay` (canonical URL) over `filters`; reports to `owner` with number `probe`.
replication_probe_actor::behavior_type replication_probe(
    replication_probe_actor::stateful_pointer<ReplicationProbeState> self,
    ReplicationProbeConfig config, std::string relay, nostr::Filters filters, std::uint64_t probe,
    replication_actor owner);

}  // namespace graspd
