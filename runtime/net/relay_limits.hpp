// The relay's per-connection limits (configured, advertised in NIP-11
// `limitation`) and the EVENT rate limiter. No Beast, no CAF: plain values.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>

namespace graspd::runtime {

struct RelayLimits {
  std::size_t max_message_bytes = 1048576;
  std::size_t max_event_bytes = 524288;
  std::size_t max_subscriptions = 50;
  std::size_t max_filters = 20;
  std::uint64_t max_limit = 5000;
  std::uint64_t default_limit = 500;
  std::size_t max_subid_length = 64;
  std::size_t max_event_tags = 10000;
  std::size_t max_content_length = 524288;
  std::size_t max_connections = 0;  // 0 = unlimited
  std::size_t max_connections_per_ip = 0;
  /// Sustained EVENTs per second per connection and the burst allowed above it.
  double events_per_second = 1000;
  double event_burst = 5000;
  std::size_t max_outbound_bytes = 16u << 20;
  /// A REQ's stored answer leaves in chunks of about this many bytes (at most a quarter of
  /// `max_outbound_bytes`); the next chunk is loaded once the connection's outbound queue is down
  /// to that size again, so a huge answer is never held whole (not a configuration option: it only
  /// shapes how the answer is paced).
  std::size_t answer_chunk_bytes = 1u << 20;
  std::chrono::seconds idle_ping_interval{60};
  /// Signature checks one connection may have out on the shared verifier actors at once; past it
  /// the session verifies its events itself, so a flooding client delays the others' checks by at
  /// most this many (not a configuration option: it only shapes scheduling).
  std::size_t verifications_per_session = 256;
  /// Index entries one COUNT may examine; past it the answer is marked approximate. Bounds the
  /// time a COUNT over a huge match set holds a scheduler thread.
  std::uint64_t max_count_examined = 200000;
  /// Filter values (ids, authors, kinds, tag values) one connection's open subscriptions may hold
  /// in the fan-out's index together: REQs past it are CLOSED.
  std::size_t max_subscription_values = 100000;
  /// NIP-77: records one NEG-OPEN may cover (more: NEG-ERR "blocked: too many query results"),
  /// and negentropy subscriptions one connection may hold open at once.
  std::uint64_t negentropy_max_sync_events = 1000000;
  std::size_t negentropy_max_sessions = 4;
  /// A NIP-77 session with no NEG-MSG for this long is closed (zero: never).
  std::chrono::seconds negentropy_idle_timeout{60};
  /// NEG-OPENs per second one connection may send (0: unbounded), and the burst.
  double negentropy_opens_per_second = 2;
  double negentropy_open_burst = 20;
};

/// Classic token bucket; time is passed in so tests control it.
class TokenBucket {
 public:
  using Clock = std::chrono::steady_clock;
  TokenBucket(double rate_per_second, double burst)
      : rate_(rate_per_second), burst_(burst), tokens_(burst) {}

  /// Takes one token if available.
  bool try_take(Clock::time_point now) {
    refill(now);
    if (tokens_ < 1.0) return false;
    tokens_ -= 1.0;
    return true;
  }
  double tokens() const { return tokens_; }

 private:
  void refill(Clock::time_point now) {
    if (!started_) {
      started_ = true;
      last_ = now;
      return;
    }
    std::chrono::duration<double> elapsed = now - last_;
    last_ = now;
    if (elapsed.count() > 0) tokens_ = std::min(burst_, tokens_ + elapsed.count() * rate_);
  }

  double rate_;
  double burst_;
  double tokens_;
  bool started_ = false;
  Clock::time_point last_{};
};

}  // namespace graspd::runtime
