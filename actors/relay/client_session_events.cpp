// A client session's EVENT and AUTH messages: the rate bucket, the signature check in arrival
// order, NIP-42 and NIP-70, the acceptance actor (or the store writer), the OK.
#include "actors/relay/client_session_state.hpp"

namespace graspd::client_session_detail {

EventResult result_of(WriteOutcome outcome) {
  switch (outcome) {
    case WriteOutcome::stored:
      return EventResult::stored;
    case WriteOutcome::duplicate:
      return EventResult::duplicate;
    case WriteOutcome::replaced_older:
      return EventResult::replaced;
    case WriteOutcome::ephemeral_not_stored:
      return EventResult::ephemeral;
    case WriteOutcome::rejected_older_version:
    case WriteOutcome::deleted:
    case WriteOutcome::expired:
    case WriteOutcome::dependency_missing:
      return EventResult::rejected;
    case WriteOutcome::held:
      return EventResult::held;
    case WriteOutcome::error:
      break;
  }
  return EventResult::error;
}

void SessionState::handle(nostr::ClientEvent& msg) {
  count(ClientMessageType::event);
  if (auto* m = metrics()) m->event_received();
  auto event = std::make_shared<const nostr::Event>(std::move(msg.event));
  if (!bucket.try_take(ctx->now())) {
    count(EventResult::rate_limited);
    return send(nostr::relay_ok(event->id, false, "rate-limited: slow down, too many events"));
  }
  verify_in_order(std::move(event), false);
}

/// AUTH events take the EVENT path's token bucket and verifiers, and its arrival order: an
/// EVENT sent right after an AUTH is judged with the AUTH's key already recorded.
void SessionState::handle(nostr::ClientAuth& msg) {
  count(ClientMessageType::auth);
  auto event = std::make_shared<const nostr::Event>(std::move(msg.event));
  if (!bucket.try_take(ctx->now()))
    return send(nostr::relay_ok(event->id, false, "rate-limited: slow down, too many events"));
  verify_in_order(std::move(event), true);
}

void SessionState::refuse_unreadable_auth(const nostr::ClientMessageError& error) {
  count(ClientMessageType::auth);
  if (auto* m = metrics()) m->auth(runtime::AuthOutcome::bad_sig);
  if (error.event_id) return send(nostr::relay_ok(*error.event_id, false, error.message));
  notice(error.message);
}

void SessionState::verify_in_order(nostr::EventPtr event, bool auth) {
  auto ticket = arrivals.reserve();
  frame_kept = true;
  verifiers.check(self, VerifyEvent{event},
                  [this, ticket, event, auth, bytes = frame_bytes](VerifierPool::Answer check) {
                    arrivals.complete(ticket, {event, bytes, check, auth});
                    arrivals.drain([this](Checked&& done) {
                      release_input(done.frame_bytes);
                      if (done.auth) return after_auth_check(*done.event, done.check);
                      after_check(done.event, done.check);
                    });
                  });
}

void SessionState::after_auth_check(const nostr::Event& event,
                                    std::optional<nostr::EventCheck> check) {
  if (!check || *check != nostr::EventCheck::ok) {
    return refuse_auth(event, runtime::AuthOutcome::bad_sig,
                       check ? nostr::describe(*check) : "error: could not verify the event");
  }
  const nostr::AuthExpectation expected{keys.challenge(), ctx->service, unix_now()};
  switch (const auto result = nostr::check_auth_event(event, expected)) {
    case nostr::AuthCheck::ok:
      break;
    case nostr::AuthCheck::bad_challenge:
      return refuse_auth(event, runtime::AuthOutcome::bad_challenge,
                         nostr::describe(result, event, expected));
    case nostr::AuthCheck::bad_relay:
      return refuse_auth(event, runtime::AuthOutcome::bad_relay,
                         nostr::describe(result, event, expected));
    case nostr::AuthCheck::stale:
      return refuse_auth(event, runtime::AuthOutcome::stale,
                         nostr::describe(result, event, expected));
  }
  if (keys.add(event.pubkey) == ConnectionKeys::Added::too_many) {
    return refuse_auth(event, runtime::AuthOutcome::too_many,
                       "restricted: too many identities on this connection (max " +
                           std::to_string(ConnectionKeys::max_keys) + ")");
  }
  if (auto* m = metrics()) m->auth(runtime::AuthOutcome::ok);
  send(nostr::relay_ok(event.id, true, ""));
}

void SessionState::refuse_auth(const nostr::Event& event, runtime::AuthOutcome outcome,
                               std::string_view message) {
  if (auto* m = metrics()) m->auth(outcome);
  send(nostr::relay_ok(event.id, false, message));
}

/// NIP-70: a protected event is taken only from a connection authenticated as its author. Not
/// authenticated: the challenge goes first (a client can only answer auth-required: with one).
bool SessionState::refuse_unless_author(const nostr::Event& event) {
  if (!nostr::is_protected(event) || keys.has(event.pubkey)) return false;
  count(EventResult::blocked);
  if (!keys.empty()) {
    if (auto* m = metrics()) m->protected_refused(runtime::ProtectedRefusal::restricted);
    send(nostr::relay_ok(event.id, false,
                         "restricted: this event may only be published by its author, and this "
                         "connection is authenticated as another key"));
    return true;
  }
  if (auto* m = metrics()) m->protected_refused(runtime::ProtectedRefusal::auth_required);
  if (auto challenge = keys.challenge_to_send()) send(nostr::relay_auth(*challenge));
  send(nostr::relay_ok(event.id, false,
                       "auth-required: this event may only be published by its author"));
  return true;
}

void SessionState::after_check(const nostr::EventPtr& event,
                               std::optional<nostr::EventCheck> check) {
  if (!check) {
    count(EventResult::error);
    return send(nostr::relay_ok(event->id, false, "error: could not verify the event"));
  }
  if (*check != nostr::EventCheck::ok) {
    count(EventResult::invalid);
    return send(nostr::relay_ok(event->id, false, nostr::describe(*check)));
  }
  // Before the acceptance policy, so a non-author learns nothing about what is stored.
  if (refuse_unless_author(*event)) return;
  if (!ctx->acceptance) return store(event);
  // The acceptance actor stores what it accepts and answers after the commit. A protected event
  // got here only from its authenticated author.
  self->request(ctx->acceptance, caf::infinite,
                AcceptanceQuery{event, source, nostr::is_protected(*event)})
      .then(
          [this, event](const AcceptanceVerdict& verdict) {
            if (!verdict.accepted) {
              count(EventResult::blocked);
              return send(nostr::relay_ok(event->id, false, verdict.message));
            }
            if (verdict.outcome == WriteOutcome::ephemeral_not_stored) return broadcast(event);
            acknowledge(event->id, verdict.outcome, verdict.message);
          },
          [this, event](const caf::error&) {
            count(EventResult::error);
            send(nostr::relay_ok(event->id, false, "error: acceptance check failed"));
          });
}

/// Ephemeral events are never stored: broadcast and acknowledge at once.
void SessionState::broadcast(const nostr::EventPtr& event) {
  self->send(
      ctx->fanout,
      FanoutEphemeral{event, std::make_shared<const std::string>(nostr::serialize_event(*event))});
  count(EventResult::ephemeral);
  send(nostr::relay_ok(event->id, true, ""));
}

/// `message` overrides the outcome's usual text (purgatory names what it waits for).
void SessionState::acknowledge(const nostr::EventId& id, WriteOutcome outcome,
                               std::string_view message) {
  count(result_of(outcome));
  send(nostr::relay_ok(id, store::is_accepted(outcome),
                       message.empty() ? store::ok_message(outcome) : message));
}

/// Without the acceptance policy (NGIT_ACCEPTANCE_POLICY=open) its credential rule still holds.
void SessionState::store(nostr::EventPtr event) {
  if (nostr::is_credential_kind(event->kind)) {
    count(EventResult::invalid);
    return send(nostr::relay_ok(event->id, false, nostr::credential_refusal(event->kind)));
  }
  if (nostr::is_ephemeral(event->kind)) return broadcast(event);
  self->request(ctx->writer, caf::infinite, StoreWrite{event, {}})
      .then([this, event](WriteOutcome outcome) { acknowledge(event->id, outcome); },
            [this, event](const caf::error&) {
              count(EventResult::error);
              send(nostr::relay_ok(event->id, false, "error: could not store the event"));
            });
}

}  // namespace graspd::client_session_detail
