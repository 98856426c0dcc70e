// The simulated network and plain relays: what the nodes' RelayConnections dial instead of sockets
// (the RelayClientFactory seam, actors/sync/relay_connection.hpp). Every delivery is an event on
// one queue ordered by (simulated time, sequence number), so a run is a pure function of its
// schedule. Frames of one connection arrive in the order they were sent in each direction, whatever
// the latency does meanwhile (TCP: reordering happens only between connections).
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "actors/sync/relay_connection.hpp"
#include "messages/nostr/client_message.hpp"
#include "messages/nostr/event.hpp"
#include "messages/nostr/filter.hpp"
#include "messages/relay_messages.hpp"
#include "runtime/net/relay_client.hpp"

namespace graspd::sim {

/// Frames a paused connection may hold before the run counts it as an unbounded queue.
inline constexpr std::size_t kMaxHeldFrames = 100'000;

/// A plain NIP-01 relay in memory: REQ (stored events newest first, per-filter limit, then EOSE,
/// then live events), CLOSE, EVENT (answered OK, not stored: only the schedule publishes), and
/// NIP-77 when `nip77` (graspd's own server side, NegentropySessions, over its events).
struct SimRelay {
  std::string url;
  /// Events by id (unique), each with its JSON.
  std::map<nostr::EventId, std::pair<nostr::Event, std::string>> events;
  /// Open subscriptions: connection id -> subscription id -> filters.
  std::map<std::uint64_t, std::map<std::string, nostr::Filters>> subscriptions;
  std::int64_t refuse_until_ms = 0;
  std::int64_t latency_ms = 20;
  std::int64_t latency_until_ms = 0;
  std::uint64_t limit_cap = 0;
  std::int64_t cap_until_ms = 0;
  std::uint64_t rate_limited_reqs = 0;
  /// What it advertises in NIP-11 `max_subscriptions`: graspd's REQ budget per connection derives
  /// from it, and more open at once on one connection is a violation.
  std::size_t max_subscriptions = 20;
  /// Speaks NIP-77 and says so in NIP-11; else NEG-OPEN gets a NOTICE, as from strfry-less relays.
  bool nip77 = false;
  /// True for a relay at an address the URL guard refuses (its contents are unreachable).
  bool private_address = false;
};

/// A node serving as a relay to the other nodes (cluster mode): the bridge to its client
/// sessions. Frames for the client go through the sink `open` hands over.
class SimServer {
 public:
  virtual ~SimServer() = default;
  virtual void open(std::uint64_t connection, FrameSinkPtr sink) = 0;
  virtual void frame(std::uint64_t connection, std::string text) = 0;
  /// The client went away (not called for a close the server asked for).
  virtual void closed(std::uint64_t connection) = 0;
};

/// Counters a run reports.
struct NetworkCounts {
  std::uint64_t dials = 0;
  std::uint64_t refused_dials = 0;
  std::uint64_t guard_refusals = 0;
  std::uint64_t frames = 0;
  std::uint64_t max_open_subscriptions = 0;
  std::uint64_t max_held_frames = 0;
  /// NEG-OPEN and NEG-MSG frames the NIP-77 relays answered.
  std::uint64_t negentropy_rounds = 0;
  /// Frames between nodes (cluster mode: peer sync), both ways.
  std::uint64_t peer_frames = 0;
};

class SimNetwork {
 public:
  /// `now_ms` reads the simulated time; `trace(node, line)` records what happened to a node.
  SimNetwork(std::function<std::int64_t()> now_ms,
             std::function<void(std::size_t, const std::string&)> trace,
             std::function<void(const std::string&)> violation);

  std::size_t add_relay(std::string url, bool private_address, std::size_t max_subscriptions,
                        bool nip77 = false);
  SimRelay& relay(std::size_t i) { return relays_.at(i); }
  const SimRelay& relay(std::size_t i) const { return relays_.at(i); }
  std::size_t relay_count() const { return relays_.size(); }

  /// Dials of `wss://<host>` reach `server` from now on; null: nobody serves there any more (the
  /// node stopped: its connections break).
  void serve(const std::string& host, SimServer* server);

  /// The factory node `node` gives its sync manager; `own` are its own URLs (never dialled).
  RelayClientFactory factory(std::size_t node, std::set<std::string> own);

  /// Schedule actions.
  void publish(std::size_t relay, const nostr::Event& ev);
  void drop(std::size_t node, std::size_t relay, const std::string& reason);
  void refuse(std::size_t relay, std::int64_t until_ms);
  void garbage(std::size_t node, std::size_t relay, const std::string& frame);
  /// A node stopped: its connections vanish without telling its (dead) actors.
  void forget_node(std::size_t node);
  /// Faults stop: latency, caps and rate limits back to normal.
  void heal();

  /// Runs `fn` at `when_ms` among the deliveries (the simulated git transport and push retries).
  void later(std::int64_t when_ms, std::function<void()> fn) { at(when_ms, std::move(fn)); }

  /// Time of the next pending delivery, if any; runs every delivery due at `now`.
  std::optional<std::int64_t> next_time() const;
  void run_due(std::int64_t now_ms);

  const NetworkCounts& counts() const { return counts_; }

 private:
  struct Connection;
  class Client;
  class ServerSink;
  friend class Client;
  friend class ServerSink;

  void dial(std::uint64_t id);
  void to_relay(std::uint64_t id, std::string text);
  void to_node(std::uint64_t id, std::string text);
  void deliver_to_node(std::uint64_t id, std::string text);
  void on_relay_frame(std::uint64_t id, const std::string& text);
  void answer_req(Connection& c, SimRelay& r, const std::string& sub,
                  const nostr::Filters& filters);
  /// NEG-OPEN, NEG-MSG and NEG-CLOSE; false for any other message.
  bool answer_negentropy(Connection& c, SimRelay& r, nostr::ClientMessage& message);
  void close(std::uint64_t id, bool notify, const std::string& reason);
  void resume(std::uint64_t id);
  std::int64_t latency(const SimRelay& r) const;
  std::int64_t latency(const Connection& c) const;
  /// The node server a connection reached, if it still serves.
  SimServer* server_of(const Connection& c) const;
  void open_server_connection(std::uint64_t id);
  void at(std::int64_t when_ms, std::function<void()> fn);
  std::string label(const Connection& c) const;

  std::function<std::int64_t()> now_;
  std::function<void(std::size_t, const std::string&)> trace_;
  std::function<void(const std::string&)> violation_;
  std::vector<SimRelay> relays_;
  std::map<std::string, SimServer*> servers_;
  std::map<std::uint64_t, std::shared_ptr<Connection>> connections_;
  std::uint64_t next_connection_ = 1;
  std::map<std::pair<std::int64_t, std::uint64_t>, std::function<void()>> queue_;
  std::uint64_t next_seq_ = 0;
  NetworkCounts counts_;
};

}  // namespace graspd::sim
