// What every client session of the relay shares (the store, the actors it talks to, the limits,
// the clocks), built once at boot and immutable after.
#pragma once

#include <caf/actor.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "actors/relay/engine/negentropy_sessions.hpp"
#include "messages/interfaces.hpp"
#include "messages/nostr/json.hpp"
#include "messages/relay_url.hpp"
#include "messages/unix_clock.hpp"
#include "runtime/net/relay_limits.hpp"

namespace graspd {

namespace store {
class EventStore;
}
namespace runtime {
class RelayMetrics;
}
class NegentropyScanner;

/// What every session shares; immutable after boot.
struct RelayContext {
  std::shared_ptr<const store::EventStore> store;
  /// Answers StoreWrite with a WriteOutcome after commit.
  store_writer_actor writer;
  fanout_actor fanout;
  /// Optional: without a hook every valid event is accepted.
  acceptance_actor acceptance;
  /// Signature checks off the session's core; empty = the session verifies itself.
  std::vector<verifier_actor> verifiers;
  runtime::RelayLimits limits;
  /// Null in tests that do not look at metrics.
  std::shared_ptr<runtime::RelayMetrics> metrics;
  /// Monotonic time for the EVENT rate bucket and REQ latency; empty = steady_clock (tests pass
  /// the test coordinator's clock).
  std::function<std::chrono::steady_clock::time_point()> monotonic_now;
  std::chrono::steady_clock::time_point now() const {
    return monotonic_now ? monotonic_now() : std::chrono::steady_clock::now();
  }
  /// Records every connection's negentropy sessions hold together; null = unbounded (tests).
  std::shared_ptr<NegentropyBudget> negentropy_budget;
  /// NEG-OPEN store scans off the scheduler threads; null = the session scans itself (tests).
  std::shared_ptr<NegentropyScanner> negentropy_scanner;

  /// NGIT_DOMAIN: what the `relay` tag of a NIP-42 AUTH event must name.
  HostPort service;
  /// Wall-clock seconds for the AUTH created_at window; empty = the system clock.
  UnixClock unix_now;
  /// Makes each connection's AUTH challenge; empty = nostr::make_challenge (tests fix it).
  std::function<std::string()> make_challenge;

  /// Parser bounds derived from `limits`.
  nostr::ParseLimits parse_limits() const;
};

}  // namespace graspd
