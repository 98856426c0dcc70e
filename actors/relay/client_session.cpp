#include "actors/relay/client_session.hpp"

#include <caf/actor_system.hpp>

#include "actors/relay/client_session_state.hpp"

namespace graspd {

namespace client_session_detail {

void SessionState::on_text(const std::string& text) {
  frame_bytes = text.size();
  frame_kept = false;
  auto parsed = nostr::parse_client_message(text, parse_limits);
  if (!parsed) {
    on_parse_error(parsed.error());
  } else {
    std::visit([this](auto& msg) { handle(msg); }, parsed.value());
  }
  if (!frame_kept) release_input(frame_bytes);
}

void SessionState::on_parse_error(const nostr::ClientMessageError& error) {
  using Kind = nostr::ClientMessageError::Kind;
  switch (error.kind) {
    case Kind::invalid_event:
      if (error.verb == "AUTH") return refuse_unreadable_auth(error);
      count(ClientMessageType::event);
      count(EventResult::invalid);
      if (error.event_id) return send(nostr::relay_ok(*error.event_id, false, error.message));
      return notice(error.message);
    case Kind::invalid_filter:
      count(ClientMessageType::req);
      return send(nostr::relay_closed(error.subscription_id, error.message));
    case Kind::invalid_negentropy:
      count(error.verb == "NEG-OPEN" ? ClientMessageType::neg_open : ClientMessageType::neg_msg);
      // Through answer_negentropy, so closing an open session also moves the sessions gauge.
      return answer_negentropy([&] {
        negentropy->close(error.subscription_id);
        return NegentropySessions::Answer{
            nostr::relay_neg_err(error.subscription_id, error.message), NegentropyError::malformed,
            0};
      });
    case Kind::malformed:
    case Kind::unknown_verb:
      break;
  }
  count(ClientMessageType::malformed);
  notice(error.message);
}

void SessionState::on_closed() {
  closed = true;
  if (auto* m = metrics()) m->negentropy_sessions(-static_cast<long>(negentropy->open_sessions()));
  negentropy->clear();
  subscriptions.clear();
  subscription_values.clear();
  answers.clear();
  open_values = 0;
  self->send(ctx->fanout, FanoutDisconnect{connection_id});
}

}  // namespace client_session_detail

namespace {

using client_session_detail::ClientMessageType;
using client_session_detail::SessionState;

client_session_actor::behavior_type client_session(
    client_session_actor::stateful_pointer<SessionState> self,
    std::shared_ptr<const RelayContext> ctx, std::uint64_t connection_id, FrameSinkPtr sink,
    std::string source) {
  auto& st = self->state;
  st.source = std::move(source);
  st.self = self;
  st.parse_limits = ctx->parse_limits();
  st.bucket = runtime::TokenBucket(ctx->limits.events_per_second, ctx->limits.event_burst);
  st.verifiers = VerifierPool(ctx->verifiers, ctx->limits.verifications_per_session);
  // The budget's per-address share counts an IPv6 client by its /64, as every per-address bound.
  st.negentropy = std::make_unique<NegentropySessions>(
      NegentropyLimits::of(ctx->limits), ctx->negentropy_budget, client_source_group(st.source));
  if (ctx->make_challenge) st.keys = ConnectionKeys(ctx->make_challenge);
  st.ctx = std::move(ctx);
  st.connection_id = connection_id;
  st.sink = std::move(sink);
  // At most a quarter of the outbound bound, so a chunk, the one before it still draining and the
  // live events beside them stay well inside it for a client that reads.
  st.chunk_bytes = std::max<std::size_t>(
      1, std::min(st.ctx->limits.answer_chunk_bytes, st.ctx->limits.max_outbound_bytes / 4));
  // Queued behind the messages already waiting (e.g. the other replies of one commit).
  st.outbox = Outbox(st.sink, [self] { self->send(self, atom::ws_flush::value); });
  return {
      [self](atom::ws_text, const std::string& text) { self->state.on_text(text); },
      [self](atom::ws_binary) {
        self->state.count(ClientMessageType::binary);
        self->state.notice("invalid: binary frames are not supported, send JSON text");
      },
      [self](atom::ws_oversize) {
        self->state.count(ClientMessageType::oversize);
        self->state.notice("invalid: message too large (max " +
                           std::to_string(self->state.ctx->limits.max_message_bytes) + " bytes)");
      },
      [self](atom::ws_flush) { self->state.outbox.flush(); },
      [self](NegentropyScanned& scanned) { self->state.on_scanned(scanned); },
      [self](atom::ws_drained) { self->state.on_drained(); },
      [self](atom::neg_idle) { self->state.on_negentropy_timer(); },
      [self](atom::ws_closed) {
        self->state.on_closed();
        // Pending store replies still arrive (their OK is dropped by the
        // closed transport); quitting now is fine, the writer stores anyway.
        self->quit();
      },
  };
}

}  // namespace

client_session_actor spawn_client_session(caf::actor_system& system,
                                          std::shared_ptr<const RelayContext> context,
                                          std::uint64_t connection_id, FrameSinkPtr sink,
                                          std::string source) {
  return system.spawn(client_session, std::move(context), connection_id, std::move(sink),
                      std::move(source));
}

}  // namespace graspd
