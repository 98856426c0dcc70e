// The NIP-77 server side of one client connection, as a pure class the
// ClientSession actor owns: one reconciliation per subscription id over a
// sealed snapshot of the store's (created_at, id) records for the NEG-OPEN
// filter, taken at open time (like strfry). Bounded per connection (sessions)
// and per process (records held by every open session together).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "messages/nostr/client_message.hpp"
#include "messages/nostr/negentropy.hpp"

namespace graspd {

/// Records held by every connection's open negentropy sessions together.
class NegentropyBudget {
 public:
  explicit NegentropyBudget(std::uint64_t max_items) : max_(max_items) {}
  bool try_take(std::uint64_t items);
  void give_back(std::uint64_t items) { held_.fetch_sub(items); }
  std::uint64_t held() const { return held_.load(); }

 private:
  std::uint64_t max_;
  std::atomic<std::uint64_t> held_{0};
};

/// Why a NEG-* message got a NEG-ERR (the metric label).
enum class NegentropyError {
  unknown_subscription,
  too_many_results,
  too_many_sessions,
  busy,
  malformed,
  query_failed,
};
const char* to_string(NegentropyError error);

struct NegentropyLimits {
  /// Records one NEG-OPEN may cover (NGIT_NEGENTROPY_MAX_SYNC_EVENTS).
  std::uint64_t max_sync_events = 1000000;
  /// Open negentropy subscriptions per connection.
  std::size_t max_sessions = 4;
};

class NegentropySessions {
 public:
  /// The records matching a filter, or nullopt when more than `max` match
  /// (`EventStore::negentropy_items`).
  using RecordSource = std::function<std::optional<std::vector<nostr::negentropy::Item>>(
      const nostr::Filter&, std::uint64_t max)>;

  /// The frame to send and, when it is a NEG-ERR, why.
  struct Answer {
    std::string frame;
    std::optional<NegentropyError> error;
    /// Records the answer's session covers (0 for errors and NEG-MSG rounds).
    std::uint64_t items = 0;
  };

  NegentropySessions(NegentropyLimits limits, std::shared_ptr<NegentropyBudget> budget);
  ~NegentropySessions();
  NegentropySessions(const NegentropySessions&) = delete;
  NegentropySessions& operator=(const NegentropySessions&) = delete;

  /// NEG-OPEN: replaces an open session of the same id, snapshots the records
  /// and answers the initial message.
  Answer open(nostr::ClientNegOpen& msg, const RecordSource& records);
  /// NEG-MSG: the next round of an open session.
  Answer message(const nostr::ClientNegMsg& msg);
  /// NEG-CLOSE (no answer); unknown ids are ignored.
  void close(const std::string& subscription_id);
  /// The connection ended.
  void clear();
  std::size_t open_sessions() const { return sessions_.size(); }

 private:
  Answer respond(const std::string& subscription_id, std::string_view message);
  Answer refuse(const std::string& subscription_id, NegentropyError error, std::string reason,
                std::optional<std::uint64_t> limit = std::nullopt);

  NegentropyLimits limits_;
  std::shared_ptr<NegentropyBudget> budget_;
  std::map<std::string, std::unique_ptr<const nostr::negentropy::Storage>> sessions_;
};

}  // namespace graspd
