#include "actors/ops/relay_profile_publisher.hpp"

#include <caf/send.hpp>

#include <algorithm>

#include "actors/sync/relay_bridge.hpp"
#include "messages/nostr/negentropy_client.hpp"
#include "messages/nostr/relay_message.hpp"
#include "messages/nostr/verify.hpp"
#include "messages/relay_url.hpp"
#include "runtime/ops/log.hpp"

namespace graspd {

namespace {

constexpr const char* profile_subscription = "relay-profile";

const std::string& profile_relay(RelayProfileSelf self) {
  return self->state.config.index_relays[self->state.current];
}

/// Quits once every relay had its turn and the local writes are answered.
void profile_quit_when_done(RelayProfileSelf self) {
  auto& st = self->state;
  if (st.current >= st.config.index_relays.size() && st.pending_writes == 0) self->quit();
}

/// Dials the current relay, if any is left.
void profile_dial(RelayProfileSelf self) {
  auto& st = self->state;
  if (st.current >= st.config.index_relays.size()) return profile_quit_when_done(self);
  st.exchange.emplace(st.config.events);
  st.awaiting_ok.clear();
  st.asked = st.settled = false;
  auto sequence = ++st.sequence;
  self->delayed_send(self, st.config.relay_deadline, atom::tick::value, sequence);
  auto bridge = std::make_shared<RelayBridge<relay_profile_actor>>(relay_profile_actor{self});
  auto url = parse_url(profile_relay(self));
  if (!url) return bridge->on_close(false, "not a relay URL");
  st.client = st.clients(*url, st.config.client, bridge);
}

/// Done with the current relay: hang up; its on_close moves on to the next.
void profile_settle(RelayProfileSelf self) {
  auto& st = self->state;
  st.settled = true;
  if (st.client) st.client->close();
}

/// After the relay listed what it holds: send ours where needed, or hang up.
void profile_publish_needed(RelayProfileSelf self) {
  auto& st = self->state;
  if (!st.exchange || !st.asked) return;
  st.asked = false;  // once per connection
  if (st.client) st.client->send(nostr::client_close(profile_subscription));
  auto needed = st.exchange->needed();
  if (needed.empty()) {
    log::info(log::components::identity, "relay profile up to date on ", profile_relay(self));
    return profile_settle(self);
  }
  for (const auto& ev : needed) {
    st.awaiting_ok.push_back(ev.id);
    if (st.client) st.client->send(nostr::client_event(nostr::serialize_event(ev)));
  }
}

void profile_on_ok(RelayProfileSelf self, const nostr::RelayOk& ok) {
  auto& st = self->state;
  auto it = std::find(st.awaiting_ok.begin(), st.awaiting_ok.end(), ok.event_id);
  if (it == st.awaiting_ok.end()) return;
  st.awaiting_ok.erase(it);
  auto kind =
      std::find_if(st.config.events.begin(), st.config.events.end(), [&](const nostr::Event& ev) {
        return ev.id == ok.event_id;
      })->kind;
  if (ok.accepted)
    log::info(log::components::identity, "published the relay's kind ", kind, " to ",
              profile_relay(self));
  else
    log::warn(log::components::identity, profile_relay(self), " refused the relay's kind ", kind,
              ": ", ok.message);
  if (st.awaiting_ok.empty()) profile_settle(self);
}

void profile_on_frame(RelayProfileSelf self, const std::string& text) {
  auto& st = self->state;
  auto parsed = nostr::parse_relay_message(text, st.config.limits);
  if (!parsed) return;  // AUTH, NOTICE-like frames and garbage: nothing to act on
  if (auto* event = std::get_if<nostr::RelayEvent>(&*parsed)) {
    // A copy counts only when it is really signed by the relay key.
    if (event->subscription_id == profile_subscription && st.exchange &&
        nostr::check_event(event->event) == nostr::EventCheck::ok)
      st.exchange->offer(event->event);
  } else if (auto* eose = std::get_if<nostr::RelayEose>(&*parsed)) {
    if (eose->subscription_id == profile_subscription) profile_publish_needed(self);
  } else if (auto* closed = std::get_if<nostr::RelayClosed>(&*parsed)) {
    // Refused to list (e.g. auth-required:): publish as if it held nothing.
    if (closed->subscription_id == profile_subscription) profile_publish_needed(self);
  } else if (auto* ok = std::get_if<nostr::RelayOk>(&*parsed)) {
    profile_on_ok(self, *ok);
  }
}

void profile_store_locally(RelayProfileSelf self, const store_writer_actor& writer) {
  for (const auto& ev : self->state.config.events) {
    ++self->state.pending_writes;
    auto answered = [self] {
      --self->state.pending_writes;
      profile_quit_when_done(self);
    };
    self->request(writer, caf::infinite, StoreWrite{std::make_shared<const nostr::Event>(ev), {}})
        .then([answered](WriteOutcome) { answered(); },
              [self, answered](caf::error& error) {
                self->state.write_failures.report(self, error);
                answered();
              });
  }
}

}  // namespace

relay_profile_actor::behavior_type relay_profile_publisher(RelayProfileSelf self,
                                                           RelayProfileConfig config,
                                                           store_writer_actor writer,
                                                           RelayClientFactory clients) {
  auto& st = self->state;
  st.config = std::move(config);
  st.clients = std::move(clients);
  profile_store_locally(self, writer);
  profile_dial(self);
  return {
      [=](atom::relay_open, RelayUp&) {
        auto& state = self->state;
        if (!state.client || state.settled) return;
        state.asked = true;
        state.client->send(nostr::client_req(
            profile_subscription, {ops::relay_profile_filter(state.config.events.front().pubkey)}));
      },
      [=](atom::relay_msg, std::string& text) {
        if (!self->state.settled) profile_on_frame(self, text);
      },
      [=](atom::relay_gone, bool, std::string& reason) {
        auto& state = self->state;
        if (!state.settled)
          log::warn(log::components::identity, "relay profile not published to ",
                    profile_relay(self), ": ", reason, " (next try at the next start)");
        state.client.reset();
        ++state.current;
        profile_dial(self);
      },
      [=](atom::tick, std::uint64_t sequence) {
        auto& state = self->state;
        if (sequence != state.sequence || state.settled || !state.client) return;
        log::warn(log::components::identity, "relay profile not published to ", profile_relay(self),
                  ": no answer within ", state.config.relay_deadline.count(),
                  " s (next try at the next start)");
        profile_settle(self);
      },
  };
}

}  // namespace graspd
