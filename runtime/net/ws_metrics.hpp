// Relay metrics on the process registry. Every label value comes from the
// fixed enums below, so cardinality never depends on clients.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

namespace prometheus {
class Registry;
template <typename T>
class Family;
class Counter;
class Gauge;
class Histogram;
}  // namespace prometheus

namespace graspd::runtime {

enum class ClientMessageType : std::uint8_t {
  event,
  req,
  close,
  count,
  malformed,
  binary,
  oversize,
  neg_open,
  neg_msg,
  neg_close,
  auth
};
inline constexpr std::size_t client_message_type_count = 11;

enum class EventResult : std::uint8_t {
  stored,
  duplicate,
  replaced,
  ephemeral,
  invalid,
  blocked,
  rate_limited,
  rejected,  // older version, deleted or expired
  error,
  held,  // accepted into purgatory (git hosting), not stored yet
};
inline constexpr std::size_t event_result_count = 10;

/// How a NIP-42 AUTH ended (graspd_relay_auth_total{outcome}).
enum class AuthOutcome : std::uint8_t {
  ok,
  bad_sig,        // id or signature wrong (or not checkable)
  bad_challenge,  // not kind 22242, no challenge sent, or another challenge
  bad_relay,      // the relay tag names another service
  stale,          // created_at more than 10 minutes away
  too_many,       // the connection holds the most keys already
};
inline constexpr std::size_t auth_outcome_count = 6;

/// Why a NIP-70 protected event was refused on the client path
/// (graspd_relay_protected_refused_total{reason}).
enum class ProtectedRefusal : std::uint8_t {
  auth_required,  // the connection is not authenticated
  restricted,     // authenticated, but not as the event's author
};
inline constexpr std::size_t protected_refusal_count = 2;

const char* to_string(ClientMessageType type);
const char* to_string(EventResult result);
const char* to_string(AuthOutcome outcome);
const char* to_string(ProtectedRefusal reason);

class RelayMetrics {
 public:
  explicit RelayMetrics(prometheus::Registry& registry);

  void message(ClientMessageType type);
  void event_received();
  void event_result(EventResult result);
  void connections(std::size_t open);
  void connection_refused();
  void slow_reader_closed();
  void req_latency(double seconds);
  void fanout_latency(double seconds);
  /// NIP-77: sessions opened (+) or closed (-), one answered round over
  /// `items` records (items only on NEG-OPEN), a NEG-ERR by reason (a fixed
  /// set of names chosen by the caller, never client text).
  void negentropy_sessions(long delta);
  void negentropy_round(std::uint64_t items);
  void negentropy_error(const char* reason);
  void auth(AuthOutcome outcome);
  void protected_refused(ProtectedRefusal reason);

 private:
  void register_negentropy(prometheus::Registry& registry);
  void register_auth(prometheus::Registry& registry);

  std::array<prometheus::Counter*, client_message_type_count> messages_{};
  std::array<prometheus::Counter*, event_result_count> results_{};
  std::array<prometheus::Counter*, auth_outcome_count> auth_{};
  std::array<prometheus::Counter*, protected_refusal_count> protected_refused_{};
  prometheus::Counter* events_received_ = nullptr;
  prometheus::Gauge* connections_ = nullptr;
  prometheus::Counter* refused_ = nullptr;
  prometheus::Counter* slow_readers_ = nullptr;
  prometheus::Histogram* req_latency_ = nullptr;
  prometheus::Histogram* fanout_latency_ = nullptr;
  prometheus::Gauge* negentropy_sessions_ = nullptr;
  prometheus::Counter* negentropy_rounds_ = nullptr;
  prometheus::Counter* negentropy_items_ = nullptr;
  prometheus::Family<prometheus::Counter>* negentropy_errors_ = nullptr;
};

}  // namespace graspd::runtime
