#include "actors/sync/relay_connection.hpp"
#include "messages/unix_clock.hpp"

#include <caf/actor_cast.hpp>
#include <caf/send.hpp>
#include <caf/typed_event_based_actor.hpp>

#include <algorithm>
#include <cctype>

#include "actors/sync/relay_bridge.hpp"
#include "messages/nostr/canonical.hpp"
#include "messages/nostr/nip42.hpp"
#include "messages/nostr/nip42_client.hpp"
#include "messages/nostr/relay_message.hpp"
#include "messages/nostr/verify.hpp"
#include "runtime/ops/log.hpp"

namespace graspd {

namespace {

using RelayConnectionSelf = relay_connection_actor::stateful_pointer<RelayConnectionState>;

/// Consumed bytes are reported to the transport at least this many at a time (and on every tick).
constexpr std::size_t consumed_report_bytes = 256 * 1024;

/// True when `wire_id` belongs to an open subscription (paged or reconciled).
bool owns(const RelayConnectionState& st, const std::string& wire_id) {
  return st.pager.owner_of(wire_id) || st.negentropy.owner_of(wire_id);
}

void send_frames(RelayConnectionSelf self, const std::vector<std::string>& frames) {
  if (!self->state.client) return;
  for (const auto& frame : frames) self->state.client->send(frame);
}

/// Hands the consumed bytes gathered so far back to the transport.
void report_consumed(RelayConnectionSelf self) {
  auto& st = self->state;
  if (st.unreported_consumed == 0) return;
  if (st.client) st.client->consumed(st.unreported_consumed);
  st.unreported_consumed = 0;
}

/// A frame of `bytes` is handled: nothing of it is left here but what other bounds cover. The
/// transport stops reading past its inbound bound until frames are reported, whatever they were;
/// reporting in batches spares a strand hand-off per frame, and the batch stays well below half
/// the bound (where reading resumes), so a stopped transport always restarts.
void consumed(RelayConnectionSelf self, std::size_t bytes) {
  auto& st = self->state;
  st.unreported_consumed += bytes;
  const auto batch = std::min(consumed_report_bytes, st.config.client.unconsumed_bound() / 8);
  if (st.unreported_consumed >= batch) report_consumed(self);
}

void event_settled(RelayConnectionSelf self, std::size_t frame_bytes) {
  auto& st = self->state;
  consumed(self, frame_bytes);
  --st.in_flight;
  if (st.paused && st.in_flight <= st.config.max_in_flight / 2) {
    st.paused = false;
    st.client->resume_reading();
  }
}

void count_outcome(RelayConnectionSelf self, WriteOutcome outcome) {
  if (wrote(outcome)) ++self->state.traffic.events_stored;
}

void store_event(RelayConnectionSelf self, nostr::EventPtr ev, std::size_t frame_bytes) {
  self->request(self->state.writer, caf::infinite, StoreWrite{ev, {}})
      .then(
          [=](WriteOutcome outcome) {
            count_outcome(self, outcome);
            event_settled(self, frame_bytes);
          },
          [=](caf::error& error) {
            self->state.write_failures.report(self, error);
            event_settled(self, frame_bytes);
          });
}

/// Counts an event as in flight (verification, acceptance, store); past the bound the transport
/// stops reading until half of them settled.
void admit(RelayConnectionSelf self) {
  auto& st = self->state;
  if (++st.in_flight >= st.config.max_in_flight && !st.paused && st.client) {
    st.paused = true;
    st.client->pause_reading();
  }
}

void ingest_admitted(RelayConnectionSelf self, nostr::EventPtr ev, std::size_t frame_bytes) {
  auto& st = self->state;
  // NIP-70: a peer is never the authenticated author of a protected event; refused and counted
  // here (the acceptance actor would refuse it too, without saying why).
  if (nostr::is_protected(*ev)) {
    ++st.traffic.events_protected;
    return event_settled(self, frame_bytes);
  }
  if (!st.acceptance) return store_event(self, std::move(ev), frame_bytes);
  // The acceptance actor stores what it accepts and answers after the commit.
  self->request(st.acceptance, caf::infinite, AcceptanceQuery{ev, "relay:" + st.relay})
      .then(
          [=](AcceptanceVerdict verdict) {
            if (verdict.accepted) count_outcome(self, verdict.outcome);
            event_settled(self, frame_bytes);
          },
          [=](caf::error& error) {
            self->state.acceptance_failures.report(self, error);
            event_settled(self, frame_bytes);
          });
}

/// Runs `step` at its place in the arrival order: after the frames before it whose checks are out.
void in_order(RelayConnectionSelf self, RelayConnectionState::Arrivals::Ticket ticket,
              std::function<void()> step) {
  auto& arrivals = self->state.arrivals;
  arrivals.complete(ticket, std::move(step));
  arrivals.drain([](std::function<void()>&& run) { run(); });
}

void in_order(RelayConnectionSelf self, std::function<void()> step) {
  in_order(self, self->state.arrivals.reserve(), std::move(step));
}

/// An admitted event whose signature check is done, at its place in the arrival order.
void on_verified(RelayConnectionSelf self, const std::string& subscription,
                 const nostr::EventPtr& ev, bool valid, std::size_t frame_bytes) {
  auto& st = self->state;
  if (!valid) {
    ++st.traffic.events_invalid;
    return event_settled(self, frame_bytes);
  }
  st.pager.on_event(subscription, *ev);
  st.negentropy.on_event(subscription, *ev);
  ingest_admitted(self, ev, frame_bytes);
}

/// The event's frame counts as consumed once the event settled: until then its parsed copy is
/// held here, so the transport's inbound bound covers events in flight too.
void verify(RelayConnectionSelf self, std::string subscription, nostr::EventPtr ev,
            std::size_t frame_bytes) {
  admit(self);
  auto ticket = self->state.arrivals.reserve();
  // on_event recomputed the id already (the already-stored shortcut needs it).
  self->state.verifiers.check(
      self, VerifyEvent{ev, /*id_checked=*/true},
      [self, ticket, subscription, ev, frame_bytes](VerifierPool::Answer check) {
        bool valid = check == nostr::EventCheck::ok;
        in_order(self, ticket, [self, subscription, ev, valid, frame_bytes] {
          on_verified(self, subscription, ev, valid, frame_bytes);
        });
      });
}

void on_event(RelayConnectionSelf self, nostr::RelayEvent& msg, std::size_t frame_bytes) {
  auto& st = self->state;
  if (!owns(st, msg.subscription_id)) {  // late event of a closed subscription
    return consumed(self, frame_bytes);
  }
  ++st.traffic.events_received;
  if (!st.pager.asked_for(msg.subscription_id, msg.event) &&
      !st.negentropy.asked_for(msg.subscription_id, msg.event)) {
    ++st.traffic.events_unrequested;
    return consumed(self, frame_bytes);
  }
  if (frame_bytes > st.config.limits.max_event_bytes + 256 ||
      nostr::compute_id(msg.event) != msg.event.id) {
    ++st.traffic.events_invalid;
    return consumed(self, frame_bytes);
  }
  auto ev = std::make_shared<const nostr::Event>(std::move(msg.event));
  auto subscription = std::move(msg.subscription_id);
  // The id covers everything the pager and the store look at, and the stored copy was verified: an
  // event already stored needs no signature check (the costly part), no acceptance and no write.
  if (st.config.already_stored && st.config.already_stored(ev->id)) {
    ++st.traffic.events_known;
    return in_order(self, [self, subscription, ev, frame_bytes] {
      self->state.pager.on_event(subscription, *ev);
      self->state.negentropy.on_event(subscription, *ev);
      consumed(self, frame_bytes);
    });
  }
  verify(self, std::move(subscription), std::move(ev), frame_bytes);
}

void grant_slots(RelayConnectionSelf self);

void apply_step(RelayConnectionSelf self, const sync::HistoryPager::Step& step) {
  send_frames(self, step.frames);
  if (step.page_requested) ++self->state.traffic.pages;
  if (step.completed)
    self->send(self->state.manager, RelaySubscriptionDone{self->state.relay, *step.completed});
  grant_slots(self);
}

/// Tells the manager, once per connection, whether the peer speaks NIP-77.
void report_negentropy(RelayConnectionSelf self, bool supported) {
  auto& st = self->state;
  if (st.negentropy_reported) return;
  st.negentropy_reported = true;
  self->send(st.manager, RelayNegentropy{st.relay, supported});
}

void apply_step(RelayConnectionSelf self, sync::NegentropyHistory::Step&& step) {
  auto& st = self->state;
  send_frames(self, step.frames);
  st.traffic.negentropy_rounds += step.rounds;
  st.traffic.ids_needed += step.ids_needed;
  st.traffic.id_requests += step.fetches;
  st.traffic.pages += step.pages;
  if (step.supported) report_negentropy(self, true);
  if (step.unsupported) report_negentropy(self, false);
  // A subscription handed back keeps its live REQ and pages its history by REQ.
  for (auto& [id, filters] : step.fallback) {
    send_frames(self, st.pager.open_history(id, std::move(filters)));
    ++st.traffic.pages;
  }
  if (step.completed) self->send(st.manager, RelaySubscriptionDone{st.relay, *step.completed});
  grant_slots(self);
}

/// A history slot came free: it goes to the first REQ waiting, whichever engine holds it (each
/// engine resumes only its own waiters).
void grant_slots(RelayConnectionSelf self) {
  auto& st = self->state;
  if (st.granting) return;
  st.granting = true;
  while (auto waiter = st.slots->grant()) {
    if (waiter->user == st.pager.slot_user())
      apply_step(self, st.pager.resume(waiter->id));
    else if (st.negentropy.holds_user(waiter->user))
      apply_step(self, st.negentropy.resume(waiter->user, waiter->id));
    else
      st.slots->give_back();
  }
  st.granting = false;
}

std::int64_t unix_now(const RelayConnectionState& st) {
  return st.config.unix_now ? st.config.unix_now() : system_unix_now();
}

void on_negentropy_closed(RelayConnectionSelf self, const nostr::RelayClosed& msg) {
  auto& st = self->state;
  bool forgotten = false;
  const bool rate_limited = signals_rate_limit(msg.message);
  apply_step(self, st.negentropy.on_closed(msg.subscription_id, forgotten, rate_limited));
  if (forgotten)
    self->send(st.manager,
               RelaySubscriptionClosed{st.relay, msg.subscription_id, rate_limited, msg.message});
  else if (rate_limited)
    self->send(st.manager, RelayRateLimited{st.relay});
}

void on_closed(RelayConnectionSelf self, const nostr::RelayClosed& msg) {
  auto& st = self->state;
  if (st.negentropy.owner_of(msg.subscription_id)) return on_negentropy_closed(self, msg);
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

/// A peer's NIP-42 challenge: answered with the relay key (a kind 22242 naming the peer's URL and
/// the challenge), once per challenge; without a key, ignored. Subscriptions the peer refuses
/// meanwhile end with their CLOSED like any other refusal (on_closed); the connection stays.
void on_auth_challenge(RelayConnectionSelf self, const std::string& challenge) {
  auto& st = self->state;
  if (!st.config.auth_key || !st.client || challenge == st.auth_challenge) return;
  st.auth_challenge = challenge;
  auto response = nostr::sign_event(nostr::auth_response(st.relay, challenge, unix_now(st)),
                                    *st.config.auth_key);
  st.client->send(nostr::client_auth(nostr::serialize_event(response)));
  log::debug(log::components::sync, "answered the AUTH challenge of ", st.relay);
}

/// Every frame ends in consumed(): right away, or once the step or event it queued is done.
void on_frame(RelayConnectionSelf self, std::string& text) {
  auto& st = self->state;
  const auto frame_bytes = text.size();
  st.traffic.bytes_received += frame_bytes;
  if (auto challenge = nostr::parse_auth_challenge(text)) {
    on_auth_challenge(self, *challenge);
    return consumed(self, frame_bytes);
  }
  auto parsed = nostr::parse_relay_message(text, st.config.limits);
  if (!parsed) {
    if (text.rfind("[\"EVENT\"", 0) == 0) ++st.traffic.events_invalid;
    return consumed(self, frame_bytes);
  }
  std::visit(
      [&](auto& msg) {
        using T = std::decay_t<decltype(msg)>;
        if constexpr (std::is_same_v<T, nostr::RelayEvent>) {
          on_event(self, msg, frame_bytes);
        } else if constexpr (std::is_same_v<T, nostr::RelayEose>) {
          // Behind the events before it: their checks may still be out.
          in_order(self, [self, id = std::move(msg.subscription_id), frame_bytes] {
            auto& state = self->state;
            if (state.negentropy.owner_of(id))
              apply_step(self, state.negentropy.on_eose(id));
            else
              apply_step(self, state.pager.on_eose(id));
            consumed(self, frame_bytes);
          });
        } else if constexpr (std::is_same_v<T, nostr::RelayNegMsg>) {
          in_order(self, [self, answer = std::move(msg), frame_bytes] {
            apply_step(self, self->state.negentropy.on_neg_msg(answer.subscription_id, answer.hex));
            consumed(self, frame_bytes);
          });
        } else if constexpr (std::is_same_v<T, nostr::RelayNegErr>) {
          in_order(self, [self, answer = std::move(msg), frame_bytes] {
            apply_step(self,
                       self->state.negentropy.on_neg_err(answer.subscription_id, answer.reason));
            consumed(self, frame_bytes);
          });
        } else if constexpr (std::is_same_v<T, nostr::RelayClosed>) {
          in_order(self, [self, closed = std::move(msg), frame_bytes] {
            on_closed(self, closed);
            consumed(self, frame_bytes);
          });
        } else {
          if constexpr (std::is_same_v<T, nostr::RelayNotice> ||
                        std::is_same_v<T, nostr::RelayOk>) {
            if (signals_rate_limit(msg.message)) self->send(st.manager, RelayRateLimited{st.relay});
          }
          if constexpr (std::is_same_v<T, nostr::RelayOk>) {
            // The answer to an event published to a cluster peer; any other OK means nothing.
            if (st.published.erase(msg.event_id))
              self->send(st.manager,
                         RelayPublished{st.relay, msg.event_id, msg.accepted, msg.message});
          }
          if constexpr (std::is_same_v<T, nostr::RelayNotice>) {
            // Behind the frames before it, like the NEG answers it may stand for.
            if (!signals_rate_limit(msg.message))
              return in_order(self, [self, notice = std::move(msg.message), frame_bytes] {
                apply_step(self, self->state.negentropy.on_notice(notice));
                consumed(self, frame_bytes);
              });
          }
          consumed(self, frame_bytes);
        }
      },
      *parsed);
}

void report_traffic(RelayConnectionSelf self) {
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

relay_connection_actor::behavior_type relay_connection(RelayConnectionSelf self, std::string relay,
                                                       RelayConnectionConfig config,
                                                       sync_manager_actor manager,
                                                       acceptance_actor acceptance,
                                                       store_writer_actor writer,
                                                       RelayClientFactory clients) {
  auto& st = self->state;
  st.relay = relay;
  st.config = config;
  st.manager = std::move(manager);
  st.acceptance = std::move(acceptance);
  st.writer = std::move(writer);
  st.verifiers = VerifierPool(config.verifiers, config.max_in_flight);
  st.slots = std::make_shared<sync::HistorySlots>(config.history_slots);
  st.pager = sync::HistoryPager(st.slots);
  st.negentropy = sync::NegentropyHistory(config.negentropy, config.local_records, st.slots);
  auto url = parse_url(relay);
  auto bridge = std::make_shared<RelayBridge<relay_connection_actor>>(relay_connection_actor{self});
  if (url) {
    st.client = clients(*url, config.client, bridge);
  } else {
    bridge->on_close(false, "not a relay URL");
  }
  self->delayed_send(self, config.traffic_report_interval, atom::tick::value);
  return {
      [=](SyncSubscribe& sub) {
        auto& state = self->state;
        send_frames(self, state.pager.close(sub.subscription_id));
        apply_step(self, state.negentropy.close(sub.subscription_id));
        if (sub.negentropy)
          apply_step(self, state.negentropy.open(sub.subscription_id, std::move(sub.filters),
                                                 unix_now(state)));
        else
          send_frames(self, state.pager.open(sub.subscription_id, std::move(sub.filters)));
        grant_slots(self);
      },
      [=](RelayPublish& publish) {
        std::vector<std::string> frames;
        frames.reserve(publish.events.size());
        for (const auto& ev : publish.events) {
          frames.push_back("[\"EVENT\"," + nostr::serialize_event(*ev) + "]");
          self->state.published.insert(ev->id);
        }
        send_frames(self, frames);
      },
      [=](SyncUnsubscribe& sub) {
        send_frames(self, self->state.pager.close(sub.subscription_id));
        apply_step(self, self->state.negentropy.close(sub.subscription_id));
        grant_slots(self);
      },
      [=](atom::shutdown) {
        if (self->state.client) self->state.client->close();
        self->state.client.reset();
        self->quit();
      },
      [=](atom::relay_open, RelayUp& up) {
        auto& state = self->state;
        state.open = true;
        if (up.max_limit) state.negentropy.cap_requests(up.max_limit);
        if (up.max_message_bytes) state.negentropy.cap_windows(up.max_message_bytes);
        up.relay = state.relay;
        self->send(state.manager, std::move(up));
      },
      [=](atom::relay_msg, std::string& text) { on_frame(self, text); },
      [=](atom::relay_gone, bool was_open, std::string& reason) {
        report_traffic(self);
        self->send(self->state.manager, RelayDown{self->state.relay, was_open, reason});
        self->state.client.reset();
        self->quit();
      },
      [=](atom::tick) {
        apply_step(self, self->state.negentropy.on_tick());
        report_traffic(self);
        // The rest of a batch, so a transport stopped at its bound never waits for more frames.
        report_consumed(self);
        self->delayed_send(self, self->state.config.traffic_report_interval, atom::tick::value);
      },
  };
}

}  // namespace graspd
