// The RELAY PROFILE publisher (docs/identity.md "Publishing"): at start, stores the relay's signed
// kind 0 and 10002 locally through the store writer (not through the acceptance policy: the relay
// key is no repository author), then dials each user-index relay in turn, one connection at a
// time: a REQ for the relay key's kinds 0 and 10002, and after EOSE (or CLOSED) an EVENT for each
// of ours the relay holds none of, or another version of (content or tags). It waits for the OKs,
// hangs up and goes on; a relay that fails or stays silent past the deadline is left for the next
// start. Quits after the last relay (at once with none: boot spawns it only with some, see
// runtime/boot/wire_identity.cpp). Never blocks: the transport reports through a bridge.
#pragma once

#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "actors/ops/engine/relay_profile.hpp"
#include "actors/ops/failed_replies.hpp"
#include "actors/sync/relay_connection.hpp"  // RelayClientFactory
#include "messages/interfaces.hpp"
#include "messages/nostr/json.hpp"
#include "runtime/net/relay_client.hpp"

namespace graspd {

struct RelayProfileConfig {
  /// The relay's kind 0 and 10002, signed with the relay key.
  std::vector<nostr::Event> events;
  /// NGIT_SYNC_PLUS_USER_INDEX_RELAYS, in order; empty = none dialled.
  std::vector<std::string> index_relays;
  runtime::RelayClientOptions client;
  nostr::ParseLimits limits;
  /// How long one relay may take, from the dial to the last OK.
  std::chrono::seconds relay_deadline{60};
};

struct RelayProfileState {
  static inline const char* name = "relay_profile";

  RelayProfileConfig config;
  RelayClientFactory clients;
  /// The relay being talked to: its index in config.index_relays.
  std::size_t current = 0;
  /// Counts connections, so a deadline of an earlier one is told apart.
  std::uint64_t sequence = 0;
  std::shared_ptr<runtime::RelayClient> client;
  std::optional<ops::ProfileExchange> exchange;
  /// Our events sent to the current relay whose OK has not come.
  std::vector<nostr::EventId> awaiting_ok;
  bool asked = false;    ///< the REQ went out
  bool settled = false;  ///< nothing more to do with the current relay: hang up
  /// Local store writes not answered yet: the actor quits once they are and every relay is done.
  std::size_t pending_writes = 0;
  FailedReplies write_failures{"relay_profile", "store write"};
};

using RelayProfileSelf = relay_profile_actor::stateful_pointer<RelayProfileState>;

relay_profile_actor::behavior_type relay_profile_publisher(RelayProfileSelf self,
                                                           RelayProfileConfig config,
                                                           store_writer_actor writer,
                                                           RelayClientFactory clients);

}  // namespace graspd
