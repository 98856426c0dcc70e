#include "tests/sim/network.hpp"

#include <algorithm>

#include "actors/relay/engine/negentropy_sessions.hpp"
#include "messages/nostr/json.hpp"
#include "messages/nostr/relay_message.hpp"

namespace graspd::sim {

namespace {

constexpr std::int64_t base_latency_ms = 20;

/// The simulated relays' NIP-77 server has no rate, idle or scan bound: the simulation has no wall
/// clock of its own, and what it studies is reconciliation, not abuse (the bounds have their own
/// tests). Every session is seen at one instant.
NegentropyLimits sim_negentropy_limits() {
  NegentropyLimits limits;
  limits.idle_timeout = std::chrono::steady_clock::duration::zero();
  limits.opens_per_second = 0;
  return limits;
}

std::shared_ptr<NegentropyBudget> sim_negentropy_budget() {
  NegentropyBudgetLimits limits;
  limits.max_records = 4 * NegentropyLimits{}.max_sync_events;
  limits.max_records_per_address = limits.max_records;
  limits.scan_records_per_second = 0;
  return std::make_shared<NegentropyBudget>(limits);
}

const std::chrono::steady_clock::time_point sim_negentropy_time{};

}  // namespace

struct SimNetwork::Connection {
  std::uint64_t id = 0;
  std::size_t node = 0;
  std::optional<std::size_t> relay;  // unset: a node's server, or nobody listens there
  std::string host;
  /// Dialled a node that served at the time (cluster mode).
  bool to_server = false;
  std::shared_ptr<runtime::RelayClientHandler> handler;
  bool open = false;
  bool closed = false;
  bool paused = false;
  std::deque<std::string> held;
  /// The relay's NIP-77 sessions on this connection (a relay that speaks it).
  std::unique_ptr<NegentropySessions> negentropy;
  std::int64_t last_to_node = 0;
  std::int64_t last_to_relay = 0;
};

/// The transport handle a RelayConnection holds: every call becomes a network event.
class SimNetwork::Client final : public runtime::RelayClient {
 public:
  Client(SimNetwork& network, std::uint64_t id) : network_(network), id_(id) {}
  void send(std::string text) override { network_.to_relay(id_, std::move(text)); }
  void close() override { network_.close(id_, true, "closed"); }
  void pause_reading() override {
    if (auto it = network_.connections_.find(id_); it != network_.connections_.end())
      it->second->paused = true;
  }
  void resume_reading() override { network_.resume(id_); }
  void consumed(std::size_t) override {}

 private:
  SimNetwork& network_;
  std::uint64_t id_;
};

/// A node's client session writes to its client through this.
class SimNetwork::ServerSink final : public FrameSink {
 public:
  ServerSink(SimNetwork& network, std::uint64_t id) : network_(network), id_(id) {}
  void send(Frame frame) override { network_.to_node(id_, frame.text()); }
  void close(Frame last_frame) override {
    if (last_frame) network_.to_node(id_, last_frame.text());
    network_.at(network_.now_() + base_latency_ms, [network = &network_, id = id_] {
      network->close(id, true, "closed by the node");
    });
  }

 private:
  SimNetwork& network_;
  std::uint64_t id_;
};

SimNetwork::SimNetwork(std::function<std::int64_t()> now_ms,
                       std::function<void(std::size_t, const std::string&)> trace,
                       std::function<void(const std::string&)> violation)
    : now_(std::move(now_ms)), trace_(std::move(trace)), violation_(std::move(violation)) {}

std::size_t SimNetwork::add_relay(std::string url, bool private_address,
                                  std::size_t max_subscriptions, bool nip77) {
  SimRelay relay;
  relay.max_subscriptions = max_subscriptions;
  relay.nip77 = nip77;
  relay.url = std::move(url);
  relay.private_address = private_address;
  relays_.push_back(std::move(relay));
  return relays_.size() - 1;
}

RelayClientFactory SimNetwork::factory(std::size_t node, std::set<std::string> own) {
  return [this, node, own = std::move(own)](const ParsedUrl& url,
                                            const runtime::RelayClientOptions& options,
                                            std::shared_ptr<runtime::RelayClientHandler> handler) {
    auto c = std::make_shared<Connection>();
    c->id = next_connection_++;
    c->node = node;
    c->host = url.host;
    c->handler = std::move(handler);
    connections_[c->id] = c;
    ++counts_.dials;
    trace_(node, "dial " + url.scheme + "://" + url.host);
    if (own.count(url.host))
      violation_("node " + std::to_string(node) + " dialled its own URL " + url.host);
    for (std::size_t i = 0; i < relays_.size(); ++i) {
      if (parse_url(relays_[i].url)->host != url.host) continue;
      if (relays_[i].private_address && !options.allow_private_addresses) {
        // What the real transport's URL guard does; dialling it is fine, reaching it is not.
        ++counts_.guard_refusals;
        continue;
      }
      // Only announcements name the private relay: no node may trust it.
      if (relays_[i].private_address)
        violation_("node " + std::to_string(node) + " dialled " + relays_[i].url +
                   " with private addresses allowed (the URL guard is off for an untrusted URL)");
      c->relay = i;
    }
    c->to_server = !c->relay && servers_.count(url.host) > 0;
    dial(c->id);
    return std::make_shared<Client>(*this, c->id);
  };
}

void SimNetwork::dial(std::uint64_t id) {
  auto& c = *connections_.at(id);
  const auto now = now_();
  if (c.to_server) {
    at(now + base_latency_ms, [this, id] { open_server_connection(id); });
    return;
  }
  if (!c.relay || relays_[*c.relay].refuse_until_ms > now) {
    ++counts_.refused_dials;
    at(now + base_latency_ms, [this, id] { close(id, true, "cannot connect"); });
    return;
  }
  at(now + latency(relays_[*c.relay]), [this, id] {
    auto& conn = *connections_.at(id);
    if (conn.closed) return;
    if (relays_[*conn.relay].refuse_until_ms > now_()) return close(id, true, "cannot connect");
    conn.open = true;
    trace_(conn.node, "open " + label(conn));
    runtime::PeerLimits limits;
    limits.max_subscriptions = relays_[*conn.relay].max_subscriptions;
    limits.nip77 = relays_[*conn.relay].nip77;
    if (*limits.nip77)
      conn.negentropy =
          std::make_unique<NegentropySessions>(sim_negentropy_limits(), sim_negentropy_budget());
    conn.handler->on_open(limits, false);
  });
}

void SimNetwork::open_server_connection(std::uint64_t id) {
  auto& c = *connections_.at(id);
  if (c.closed) return;
  auto* server = server_of(c);
  if (!server) return close(id, true, "cannot connect");
  c.open = true;
  trace_(c.node, "open " + label(c));
  // What a graspd node's NIP-11 says: NIP-77, and the default subscription budget.
  runtime::PeerLimits limits;
  limits.nip77 = true;
  limits.max_subscriptions = 50;
  c.handler->on_open(limits, false);
  server->open(id, std::make_shared<ServerSink>(*this, id));
}

void SimNetwork::to_relay(std::uint64_t id, std::string text) {
  auto& c = *connections_.at(id);
  if (!c.open) return;
  trace_(c.node, "-> " + label(c) + " " + text.substr(0, 100));
  auto when = std::max(now_() + latency(c), c.last_to_relay);
  c.last_to_relay = when;
  at(when, [this, id, text = std::move(text)]() mutable {
    auto& conn = *connections_.at(id);
    if (!conn.open) return;
    if (!conn.to_server) return on_relay_frame(id, text);
    ++counts_.peer_frames;
    if (auto* server = server_of(conn)) server->frame(id, std::move(text));
  });
}

void SimNetwork::to_node(std::uint64_t id, std::string text) {
  auto& c = *connections_.at(id);
  if (!c.open) return;
  ++counts_.frames;
  if (c.to_server) ++counts_.peer_frames;
  auto when = std::max(now_() + latency(c), c.last_to_node);
  c.last_to_node = when;
  at(when, [this, id, text = std::move(text)]() mutable { deliver_to_node(id, std::move(text)); });
}

void SimNetwork::deliver_to_node(std::uint64_t id, std::string text) {
  auto& c = *connections_.at(id);
  if (!c.open) return;
  if (c.paused) {
    c.held.push_back(std::move(text));
    counts_.max_held_frames = std::max<std::uint64_t>(counts_.max_held_frames, c.held.size());
    if (c.held.size() > kMaxHeldFrames)
      violation_("node " + std::to_string(c.node) + " holds more than " +
                 std::to_string(kMaxHeldFrames) + " frames of " + label(c));
    return;
  }
  trace_(c.node, "<- " + label(c) + " " + text.substr(0, 100));
  c.handler->on_message(std::move(text));
}

void SimNetwork::resume(std::uint64_t id) {
  auto it = connections_.find(id);
  if (it == connections_.end()) return;
  auto& c = *it->second;
  c.paused = false;
  while (!c.held.empty() && !c.paused && c.open) {
    auto text = std::move(c.held.front());
    c.held.pop_front();
    trace_(c.node, "<- " + label(c) + " " + text.substr(0, 100));
    c.handler->on_message(std::move(text));
  }
}

void SimNetwork::on_relay_frame(std::uint64_t id, const std::string& text) {
  auto& c = *connections_.at(id);
  auto& r = relays_[*c.relay];
  auto parsed = nostr::parse_client_message(text, nostr::ParseLimits{});
  if (!parsed) return to_node(id, nostr::relay_notice(parsed.error().message));
  if (auto* req = std::get_if<nostr::ClientReq>(&*parsed)) {
    if (r.rate_limited_reqs > 0) {
      --r.rate_limited_reqs;
      return to_node(id, nostr::relay_closed(req->subscription_id, "rate-limited: slow down"));
    }
    auto& subs = r.subscriptions[id];
    subs[req->subscription_id] = req->filters;
    counts_.max_open_subscriptions =
        std::max<std::uint64_t>(counts_.max_open_subscriptions, subs.size());
    if (subs.size() > r.max_subscriptions)
      violation_("node " + std::to_string(c.node) + " holds " + std::to_string(subs.size()) +
                 " subscriptions on " + r.url + ", more than the " +
                 std::to_string(r.max_subscriptions) + " it advertises");
    return answer_req(c, r, req->subscription_id, req->filters);
  }
  if (auto* close_msg = std::get_if<nostr::ClientClose>(&*parsed)) {
    r.subscriptions[id].erase(close_msg->subscription_id);
    return;
  }
  if (auto* event = std::get_if<nostr::ClientEvent>(&*parsed))
    return to_node(id, nostr::relay_ok(event->event.id, true, ""));
  if (auto* count = std::get_if<nostr::ClientCount>(&*parsed))
    return to_node(id, nostr::relay_closed(count->subscription_id, "unsupported: COUNT"));
  if (!answer_negentropy(c, r, *parsed)) to_node(id, nostr::relay_notice("unsupported: NIP-77"));
}

bool SimNetwork::answer_negentropy(Connection& c, SimRelay& r, nostr::ClientMessage& message) {
  if (!c.negentropy) return false;
  auto records = [&r](const nostr::Filter& filter,
                      std::uint64_t max) -> std::optional<std::vector<nostr::negentropy::Item>> {
    std::vector<nostr::negentropy::Item> items;
    for (const auto& [id, entry] : r.events)
      if (filter.matches(entry.first))
        items.push_back({static_cast<std::uint64_t>(entry.first.created_at), id});
    if (items.size() > max) return std::nullopt;
    std::sort(items.begin(), items.end());
    return items;
  };
  if (auto* open = std::get_if<nostr::ClientNegOpen>(&message)) {
    ++counts_.negentropy_rounds;
    to_node(c.id, c.negentropy->open(*open, records, sim_negentropy_time).frame);
  } else if (auto* msg = std::get_if<nostr::ClientNegMsg>(&message)) {
    ++counts_.negentropy_rounds;
    to_node(c.id, c.negentropy->message(*msg, sim_negentropy_time).frame);
  } else if (auto* close_msg = std::get_if<nostr::ClientNegClose>(&message)) {
    c.negentropy->close(close_msg->subscription_id);
  } else {
    return false;
  }
  return true;
}

void SimNetwork::answer_req(Connection& c, SimRelay& r, const std::string& sub,
                            const nostr::Filters& filters) {
  const bool capped = r.limit_cap && r.cap_until_ms > now_();
  std::set<nostr::EventId> chosen;
  std::vector<const std::pair<nostr::Event, std::string>*> out;
  for (const auto& filter : filters) {
    std::vector<const std::pair<nostr::Event, std::string>*> matching;
    for (const auto& [id, entry] : r.events)
      if (filter.matches(entry.first)) matching.push_back(&entry);
    std::stable_sort(matching.begin(), matching.end(),
                     [](auto* a, auto* b) { return a->first.created_at > b->first.created_at; });
    auto limit = filter.limit.value_or(matching.size());
    if (capped) limit = std::min<std::uint64_t>(limit, r.limit_cap);
    for (std::size_t i = 0; i < matching.size() && i < limit; ++i)
      if (chosen.insert(matching[i]->first.id).second) out.push_back(matching[i]);
  }
  std::stable_sort(out.begin(), out.end(),
                   [](auto* a, auto* b) { return a->first.created_at > b->first.created_at; });
  for (auto* entry : out) to_node(c.id, nostr::relay_event(sub, entry->second));
  to_node(c.id, nostr::relay_eose(sub));
}

void SimNetwork::publish(std::size_t relay, const nostr::Event& ev) {
  auto& r = relays_.at(relay);
  auto json = nostr::serialize_event(ev);
  if (!r.events.emplace(ev.id, std::make_pair(ev, json)).second) return;
  for (const auto& [id, subs] : r.subscriptions)
    for (const auto& [sub, filters] : subs)
      if (nostr::matches_any(filters, ev)) to_node(id, nostr::relay_event(sub, json));
}

void SimNetwork::drop(std::size_t node, std::size_t relay, const std::string& reason) {
  std::vector<std::uint64_t> ids;
  for (const auto& [id, c] : connections_)
    if (c->node == node && c->relay == relay && !c->closed) ids.push_back(id);
  for (auto id : ids) close(id, true, reason);
}

void SimNetwork::refuse(std::size_t relay, std::int64_t until_ms) {
  relays_.at(relay).refuse_until_ms = until_ms;
  std::vector<std::uint64_t> ids;
  for (const auto& [id, c] : connections_)
    if (c->relay == relay && !c->closed) ids.push_back(id);
  for (auto id : ids) close(id, true, "connection reset");
}

void SimNetwork::garbage(std::size_t node, std::size_t relay, const std::string& frame) {
  for (const auto& [id, c] : connections_)
    if (c->node == node && c->relay == relay && c->open) to_node(id, frame);
}

void SimNetwork::forget_node(std::size_t node) {
  std::vector<std::uint64_t> ids;
  for (const auto& [id, c] : connections_)
    if (c->node == node && !c->closed) ids.push_back(id);
  for (auto id : ids) close(id, false, "node stopped");
}

void SimNetwork::serve(const std::string& host, SimServer* server) {
  if (server) {
    servers_[host] = server;
    return;
  }
  servers_.erase(host);
  std::vector<std::uint64_t> ids;
  for (const auto& [id, c] : connections_)
    if (c->to_server && c->host == host && !c->closed) ids.push_back(id);
  for (auto id : ids) close(id, true, "connection reset (the node stopped)");
}

void SimNetwork::heal() {
  for (auto& r : relays_) {
    r.refuse_until_ms = 0;
    r.latency_until_ms = 0;
    r.cap_until_ms = 0;
    r.rate_limited_reqs = 0;
  }
}

void SimNetwork::close(std::uint64_t id, bool notify, const std::string& reason) {
  auto& c = *connections_.at(id);
  if (c.closed) return;
  c.closed = true;
  const bool was_open = c.open;
  c.open = false;
  c.held.clear();
  if (c.relay) relays_[*c.relay].subscriptions.erase(id);
  if (auto* server = server_of(c); server && was_open) server->closed(id);
  trace_(c.node, "close " + label(c) + " (" + reason + ")");
  if (notify)
    at(now_(), [handler = c.handler, was_open, reason] { handler->on_close(was_open, reason); });
  // The handler is the only reference back to the actor; a closed connection keeps none.
  c.handler = notify ? c.handler : nullptr;
}

std::int64_t SimNetwork::latency(const SimRelay& r) const {
  return r.latency_until_ms > now_() ? r.latency_ms : base_latency_ms;
}

std::int64_t SimNetwork::latency(const Connection& c) const {
  return c.relay ? latency(relays_[*c.relay]) : base_latency_ms;
}

SimServer* SimNetwork::server_of(const Connection& c) const {
  if (!c.to_server) return nullptr;
  auto it = servers_.find(c.host);
  return it == servers_.end() ? nullptr : it->second;
}

void SimNetwork::at(std::int64_t when_ms, std::function<void()> fn) {
  queue_.emplace(std::make_pair(when_ms, next_seq_++), std::move(fn));
}

std::optional<std::int64_t> SimNetwork::next_time() const {
  if (queue_.empty()) return std::nullopt;
  return queue_.begin()->first.first;
}

void SimNetwork::run_due(std::int64_t now_ms) {
  while (!queue_.empty() && queue_.begin()->first.first <= now_ms) {
    auto fn = std::move(queue_.begin()->second);
    queue_.erase(queue_.begin());
    fn();
  }
}

std::string SimNetwork::label(const Connection& c) const {
  return "c" + std::to_string(c.id) + ":" + c.host;
}

}  // namespace graspd::sim
