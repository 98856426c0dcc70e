// The MANAGEMENT actor: the NIP-86 relay management API behind `POST /` with Content-Type
// application/nostr+json+rpc. Each call's NIP-98 token is checked (messages/nostr/nip98: kind,
// signature, 60 s window, method, URL, payload) and its signer must be the operator or an admin;
// the actor owns the replay cache (a token is good once). A change goes to the acceptance actor
// first (applied at once to the client and sync paths), then to the store writer (persisted, a
// banned event deleted), then the lists show it. Every call is logged and counted.
#pragma once

#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <set>

#include "actors/ops/engine/management_lists.hpp"
#include "messages/interfaces.hpp"
#include "messages/nostr/nip86.hpp"
#include "messages/nostr/nip98.hpp"

namespace prometheus {
class Registry;
}

namespace graspd::actors {

struct ManagementConfig {
  /// The URLs a token's `u` may name (https:// and wss:// of NGIT_DOMAIN) and the other checks.
  nostr::nip98::HttpAuthRules auth;
  /// NGIT_OWNER_NPUB and NGIT_ADMIN_NPUBS: who may call.
  std::set<nostr::Pubkey> admins;
  ops::ConfiguredLists lists;
  /// The runtime entries read from the store at start-up.
  std::vector<ModerationEntry> stored;
  /// Seconds since the epoch; unset = the system clock.
  std::function<std::int64_t()> unix_now;
  /// How long a token id is remembered, and how many at most.
  std::int64_t replay_window_seconds = 120;
  std::size_t replay_max_tokens = 4096;
};

/// How a call ended (graspd_admin_calls_total{outcome}).
enum class CallOutcome : std::uint8_t { ok, error, invalid, unauthorized };
inline constexpr std::size_t call_outcome_count = 4;
const char* to_string(CallOutcome outcome);

struct ManagementMetrics;

struct ManagementState {
  static inline const char* name = "management";

  ManagementConfig config;
  std::unique_ptr<ops::ManagementLists> lists;
  std::unique_ptr<nostr::nip98::ReplayGuard> replay;
  acceptance_actor acceptance;
  store_writer_actor writer;
  /// Calls by method and outcome, for tests and the metric.
  std::array<std::array<std::uint64_t, call_outcome_count>, nostr::nip86::method_count> calls{};
  std::shared_ptr<ManagementMetrics> metrics;
};

/// `acceptance` is invalid under NGIT_ACCEPTANCE_POLICY=open (config.lists.bans_available false).
/// `registry` may be null (tests).
management_actor::behavior_type management(management_actor::stateful_pointer<ManagementState> self,
                                           ManagementConfig config, acceptance_actor acceptance,
                                           store_writer_actor writer,
                                           std::shared_ptr<prometheus::Registry> registry);

}  // namespace graspd::actors
