// The NIP-77 server side of one client connection, as a pure class the
// ClientSession actor owns: one reconciliation per subscription id over a
// sealed snapshot of the store's (created_at, id) records for the NEG-OPEN
// filter, taken at open time (like strfry). Bounded per connection (sessions,
// NEG-OPEN rate, idle time), per address (a share of the records held, a scan
// budget) and per process (records held by every open session together).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <variant>
#include <vector>

#include "messages/nostr/client_message.hpp"
#include "messages/nostr/negentropy.hpp"
#include "messages/relay_messages.hpp"
#include "runtime/net/relay_limits.hpp"

namespace graspd {

struct NegentropyBudgetLimits {
  /// Records every connection's open sessions may hold together.
  std::uint64_t max_records = 4000000;
  /// Records the sessions of all connections from one address may hold together (a share of
  /// `max_records`, NGIT_NEGENTROPY_ADDRESS_SHARE_PERCENT), so one address cannot take the budget.
  std::uint64_t max_records_per_address = 1000000;
  /// Records one address's NEG-OPENs may scan per second (NGIT_NEGENTROPY_ADDRESS_SCAN_RATE;
  /// 0 = unbounded) and the most it may save up (a scan of the largest allowed size).
  double scan_records_per_second = 200000;
  double scan_burst = 1000000;
};

/// What the relay's NIP-77 sessions share: the records held (in total and per client address) and
/// each address's scan budget. Thread-safe: every session actor calls it.
class NegentropyBudget {
 public:
  using Clock = std::chrono::steady_clock;
  enum class Refusal { none, process_full, address_full };

  explicit NegentropyBudget(NegentropyBudgetLimits limits) : limits_(limits) {}
  /// Holds `items` more records for `address`, or says which bound they would pass.
  Refusal try_take(const std::string& address, std::uint64_t items);
  void give_back(const std::string& address, std::uint64_t items);
  /// False while `address` has scanned more than its budget allows by `now`.
  bool may_scan(const std::string& address, Clock::time_point now);
  /// Charges `records` scanned to `address` (the budget may go below zero: the next scans wait).
  void charge_scan(const std::string& address, std::uint64_t records, Clock::time_point now);
  std::uint64_t held() const;
  std::uint64_t held_by(const std::string& address) const;
  /// Addresses remembered (held records or a scan budget not yet refilled).
  std::size_t addresses() const;

 private:
  struct Address {
    std::uint64_t held = 0;
    double scan_tokens = 0;
    Clock::time_point refilled{};
  };
  Address& entry(const std::string& address, Clock::time_point now);
  void refill(Address& a, Clock::time_point now) const;
  bool idle(const Address& a) const;
  void sweep(Clock::time_point now);

  NegentropyBudgetLimits limits_;
  mutable std::mutex mutex_;
  std::unordered_map<std::string, Address> addresses_;
  std::uint64_t held_ = 0;
  std::size_t sweep_at_ = 1024;
};

/// Why a NEG-* message got a NEG-ERR (the metric label).
enum class NegentropyError {
  unknown_subscription,
  too_many_results,
  too_many_sessions,
  busy,
  address_busy,
  rate_limited,
  scan_budget,
  scan_queue,
  idle,
  malformed,
  query_failed,
};
const char* to_string(NegentropyError error);

struct NegentropyLimits {
  /// Records one NEG-OPEN may cover (NGIT_NEGENTROPY_MAX_SYNC_EVENTS).
  std::uint64_t max_sync_events = 1000000;
  /// Open negentropy subscriptions per connection.
  std::size_t max_sessions = 4;
  /// A session with no NEG-MSG for this long is closed with NEG-ERR "closed: ..." (zero: never).
  std::chrono::steady_clock::duration idle_timeout = std::chrono::seconds(60);
  /// NEG-OPENs per second one connection may send, and the burst (rate 0 = unbounded).
  double opens_per_second = 2;
  double open_burst = 20;

  /// The NGIT_NEGENTROPY_* options of a connection's limits.
  static NegentropyLimits of(const runtime::RelayLimits& limits);
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

  using Clock = std::chrono::steady_clock;

  /// `address` is the client's (what the budget shares out per address).
  NegentropySessions(NegentropyLimits limits, std::shared_ptr<NegentropyBudget> budget,
                     std::string address = {});
  ~NegentropySessions();
  NegentropySessions(const NegentropySessions&) = delete;
  NegentropySessions& operator=(const NegentropySessions&) = delete;

  /// NEG-OPEN: replaces an open session of the same id, snapshots the records
  /// and answers the initial message (begin_open, the scan, finish_open in one go).
  Answer open(nostr::ClientNegOpen& msg, const RecordSource& records, Clock::time_point now);

  /// What a scan found: the records, nullopt when more than the bound match, or `failed`.
  using Scan = NegentropyScan;
  /// A NEG-OPEN whose scan runs elsewhere (off the session's scheduler thread): the filter and
  /// the bound to scan with, and the ticket finish_open takes back.
  struct PendingScan {
    std::uint64_t ticket = 0;
    nostr::Filter filter;
    std::uint64_t max = 0;
  };
  /// The first half of NEG-OPEN: replaces a session (or pending open) of the same id and runs
  /// the checks before any record is read. A refusal is the answer; otherwise the scan to run.
  /// A pending open counts as a session of the connection until it finishes.
  std::variant<Answer, PendingScan> begin_open(const nostr::ClientNegOpen& msg,
                                               Clock::time_point now);
  /// The second half: the scan of `ticket` ended. nullopt when the open was replaced or closed
  /// meanwhile (its scan is still charged to the address: it was read).
  std::optional<Answer> finish_open(const std::string& subscription_id, std::uint64_t ticket,
                                    Scan scan, Clock::time_point now);
  /// A pending open that will not be scanned (the scan queue refused it): its NEG-ERR.
  std::optional<Answer> abandon_open(const std::string& subscription_id, std::uint64_t ticket,
                                     NegentropyError error, std::string reason);
  std::size_t pending_opens() const { return pending_.size(); }
  /// NEG-MSG: the next round of an open session.
  Answer message(const nostr::ClientNegMsg& msg, Clock::time_point now);
  /// NEG-CLOSE (no answer); unknown ids are ignored.
  void close(const std::string& subscription_id);
  /// Closes every session idle past the timeout at `now`: one NEG-ERR "closed:" each.
  std::vector<Answer> expire(Clock::time_point now);
  /// When the next session would become idle past the timeout (nullopt: none open or no timeout).
  std::optional<Clock::time_point> next_expiry() const;
  /// The connection ended.
  void clear();
  std::size_t open_sessions() const { return sessions_.size(); }

 private:
  struct Session {
    std::unique_ptr<const nostr::negentropy::Storage> storage;
    Clock::time_point last_active;
  };

  /// A NEG-OPEN waiting for its scan: its initial message, answered once the records are in.
  struct Pending {
    std::uint64_t ticket = 0;
    std::string message;
  };

  std::optional<Answer> admit(const std::string& subscription_id, Clock::time_point now);
  Answer snapshot(const std::string& subscription_id, const std::string& message, Scan scan,
                  Clock::time_point now);
  Answer respond(const std::string& subscription_id, std::string_view message);
  Answer refuse(const std::string& subscription_id, NegentropyError error, std::string reason,
                std::optional<std::uint64_t> limit = std::nullopt);

  NegentropyLimits limits_;
  std::shared_ptr<NegentropyBudget> budget_;
  std::string address_;
  runtime::TokenBucket opens_;
  std::map<std::string, Session> sessions_;
  std::map<std::string, Pending> pending_;
  std::uint64_t next_ticket_ = 1;
};

}  // namespace graspd
