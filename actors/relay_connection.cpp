#include "actors/relay_connection.hpp"

#include <caf/actor_cast.hpp>
#include <caf/send.hpp>
#include <caf/typed_event_based_actor.hpp>

#include <algorithm>
#include <cctype>

#include "messages/nostr/canonical.hpp"
#include "messages/nostr/relay_message.hpp"
#include "messages/nostr/verify.hpp"

namespace graspd {

namespace {

using Self = relay_connection_actor::stateful_pointer<RelayConnectionState>;

/// Transport -> actor bridge: runs on the io thread and only sends messages.
class Bridge final : public runtime::RelayClientHandler {
 public:
  explicit Bridge(relay_connection_actor target) : target_(std::move(target)) {}
  void on_open(runtime::PeerLimits peer) override {
    caf::anon_send(target_, atom::relay_open::value, peer.max_message_bytes, peer.max_filters);
  }
  void on_message(std::string&& text) override {
    caf::anon_send(target_, atom::relay_msg::value, std::move(text));
  }
  void on_close(bool was_open, std::string reason) override {
    caf::anon_send(target_, atom::relay_gone::value, was_open, std::move(reason));
  }

 private:
  relay_connection_actor target_;
};

void send_frames(Self self, const std::vector<std::string>& frames) {
  if (!self->state.client) return;
  for (const auto& frame : frames) self->state.client->send(frame);
}

void event_settled(Self self) {
  auto& st = self->state;
  --st.in_flight;
  if (st.paused && st.in_flight <= st.config.max_in_flight / 2) {
    st.paused = false;
    st.client->resume_reading();
  }
}

void count_outcome(Self self, WriteOutcome outcome) {
  if (outcome == WriteOutcome::stored || outcome == WriteOutcome::replaced_older)
    ++self->state.traffic.events_stored;
}

void store_event(Self self, nostr::EventPtr ev) {
  self->request(self->state.writer, caf::infinite, StoreWrite{ev, {}})
      .then(
          [=](WriteOutcome outcome) {
            count_outcome(self, outcome);
            event_settled(self);
          },
          [=](caf::error&) { event_settled(self); });
}

/// Counts an event as in flight (verification, acceptance, store); past the bound the transport
/// stops reading until half of them settled.
void admit(Self self) {
  auto& st = self->state;
  if (++st.in_flight >= st.config.max_in_flight && !st.paused && st.client) {
    st.paused = true;
    st.client->pause_reading();
  }
}

void ingest_admitted(Self self, nostr::EventPtr ev) {
  auto& st = self->state;
  if (!st.acceptance) return store_event(self, std::move(ev));
  // The acceptance actor stores what it accepts and answers after the commit.
  self->request(st.acceptance, caf::infinite, AcceptanceQuery{ev, "relay:" + st.relay})
      .then(
          [=](AcceptanceVerdict verdict) {
            if (verdict.accepted) count_outcome(self, verdict.outcome);
            event_settled(self);
          },
          [=](caf::error&) { event_settled(self); });
}

/// Runs `step` at its place in the arrival order: after the frames before it whose checks are out.
void in_order(Self self, RelayConnectionState::Arrivals::Ticket ticket,
              std::function<void()> step) {
  auto& arrivals = self->state.arrivals;
  arrivals.complete(ticket, std::move(step));
  arrivals.drain([](std::function<void()>&& run) { run(); });
}

void in_order(Self self, std::function<void()> step) {
  in_order(self, self->state.arrivals.reserve(), std::move(step));
}

/// An admitted event whose signature check is done, at its place in the arrival order.
void on_verified(Self self, const std::string& subscription, const nostr::EventPtr& ev,
                 bool valid) {
  auto& st = self->state;
  if (!valid) {
    ++st.traffic.events_invalid;
    return event_settled(self);
  }
  st.pager.on_event(subscription, *ev);
  ingest_admitted(self, ev);
}

void verify(Self self, std::string subscription, nostr::EventPtr ev) {
  admit(self);
  auto ticket = self->state.arrivals.reserve();
  // on_event recomputed the id already (the already-stored shortcut needs it).
  self->state.verifiers.check(self, VerifyEvent{ev, /*id_checked=*/true},
                              [self, ticket, subscription, ev](VerifierPool::Answer check) {
                                bool valid = check == nostr::EventCheck::ok;
                                in_order(self, ticket, [self, subscription, ev, valid] {
                                  on_verified(self, subscription, ev, valid);
                                });
                              });
}

void on_event(Self self, nostr::RelayEvent& msg, std::size_t frame_bytes) {
  auto& st = self->state;
  if (!st.pager.owner_of(msg.subscription_id)) return;  // late event of a closed subscription
  ++st.traffic.events_received;
  if (frame_bytes > st.config.limits.max_event_bytes + 256 ||
      nostr::compute_id(msg.event) != msg.event.id) {
    ++st.traffic.events_invalid;
    return;
  }
  auto ev = std::make_shared<const nostr::Event>(std::move(msg.event));
  auto subscription = std::move(msg.subscription_id);
  // The id covers everything the pager and the store look at, and the stored copy was verified: an
  // event already stored needs no signature check (the costly part), no acceptance and no write.
  if (st.config.already_stored && st.config.already_stored(ev->id)) {
    ++st.traffic.events_known;
    return in_order(self,
                    [self, subscription, ev] { self->state.pager.on_event(subscription, *ev); });
  }
  verify(self, std::move(subscription), std::move(ev));
}

void apply_step(Self self, const sync::HistoryPager::Step& step) {
  send_frames(self, step.frames);
  if (step.page_requested) ++self->state.traffic.pages;
  if (step.completed)
    self->send(self->state.manager, RelaySubscriptionDone{self->state.relay, *step.completed});
}

void on_closed(Self self, const nostr::RelayClosed& msg) {
  auto& st = self->state;
  auto owner = st.pager.owner_of(msg.subscription_id);
  if (!owner) return;
  const bool rate_limited = signals_rate_limit(msg.message);
  const bool main_subscription = *owner == msg.subscription_id;
  apply_step(self, st.pager.on_closed(msg.subscription_id));
  if (main_subscription)
    self->send(st.manager,
               RelaySubscriptionClosed{st.relay, msg.subscription_id, rate_limited, msg.message});
  else if (rate_limited)
    self->send(st.manager, RelayRateLimited{st.relay});
}

void on_frame(Self self, std::string& text) {
  auto& st = self->state;
  st.traffic.bytes_received += text.size();
  auto parsed = nostr::parse_relay_message(text, st.config.limits);
  if (!parsed) {
    if (text.rfind("[\"EVENT\"", 0) == 0) ++st.traffic.events_invalid;
    return;
  }
  std::visit(
      [&](auto& msg) {
        using T = std::decay_t<decltype(msg)>;
        if constexpr (std::is_same_v<T, nostr::RelayEvent>) {
          on_event(self, msg, text.size());
        } else if constexpr (std::is_same_v<T, nostr::RelayEose>) {
          // Behind the events before it: their checks may still be out.
          in_order(self, [self, id = std::move(msg.subscription_id)] {
            apply_step(self, self->state.pager.on_eose(id));
          });
        } else if constexpr (std::is_same_v<T, nostr::RelayClosed>) {
          in_order(self, [self, closed = std::move(msg)] { on_closed(self, closed); });
        } else if constexpr (std::is_same_v<T, nostr::RelayNotice> ||
                             std::is_same_v<T, nostr::RelayOk>) {
          if (signals_rate_limit(msg.message)) self->send(st.manager, RelayRateLimited{st.relay});
        }
      },
      *parsed);
}

void report_traffic(Self self) {
  auto& st = self->state;
  if (st.traffic.empty()) return;
  st.traffic.relay = st.relay;
  self->send(st.manager, st.traffic);
  st.traffic = RelayTraffic{};
}

}  // namespace

bool signals_rate_limit(std::string_view message) {
  if (message.rfind("rate-limited:", 0) == 0) return true;
  std::string lower(message.substr(0, 200));
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return lower.find("rate limit") != std::string::npos ||
         lower.find("rate-limit") != std::string::npos ||
         lower.find("too many requests") != std::string::npos ||
         lower.find("slow down") != std::string::npos;
}

RelayClientFactory network_relay_clients(boost::asio::io_context& io,
                                         std::shared_ptr<runtime::RelayClientRegistry> registry) {
  return [&io, registry](const ParsedUrl& url, const runtime::RelayClientOptions& options,
                         std::shared_ptr<runtime::RelayClientHandler> handler) {
    return registry->start(io, url, options, std::move(handler));
  };
}

relay_connection_actor::behavior_type relay_connection(
    Self self, std::string relay, RelayConnectionConfig config, sync_manager_actor manager,
    acceptance_actor acceptance, store_writer_actor writer, RelayClientFactory clients) {
  auto& st = self->state;
  st.relay = relay;
  st.config = config;
  st.manager = std::move(manager);
  st.acceptance = std::move(acceptance);
  st.writer = std::move(writer);
  st.verifiers = VerifierPool(config.verifiers, config.max_in_flight);
  auto url = parse_url(relay);
  auto bridge = std::make_shared<Bridge>(relay_connection_actor{self});
  if (url) {
    st.client = clients(*url, config.client, bridge);
  } else {
    bridge->on_close(false, "not a relay URL");
  }
  self->delayed_send(self, config.traffic_report_interval, atom::tick::value);
  return {
      [=](SyncSubscribe& sub) {
        send_frames(self, self->state.pager.open(sub.subscription_id, std::move(sub.filters)));
      },
      [=](SyncUnsubscribe& sub) {
        send_frames(self, self->state.pager.close(sub.subscription_id));
      },
      [=](atom::shutdown) {
        if (self->state.client) self->state.client->close();
        self->state.client.reset();
        self->quit();
      },
      [=](atom::relay_open, std::size_t max_message_bytes, std::size_t max_filters) {
        self->state.open = true;
        self->send(self->state.manager, RelayUp{self->state.relay, max_message_bytes, max_filters});
      },
      [=](atom::relay_msg, std::string& text) { on_frame(self, text); },
      [=](atom::relay_gone, bool was_open, std::string& reason) {
        report_traffic(self);
        self->send(self->state.manager, RelayDown{self->state.relay, was_open, reason});
        self->state.client.reset();
        self->quit();
      },
      [=](atom::tick) {
        report_traffic(self);
        self->delayed_send(self, self->state.config.traffic_report_interval, atom::tick::value);
      },
  };
}

}  // namespace graspd
