// A client session's NIP-77 messages: NEG-OPEN (scanned here or on the scanner's threads),
// NEG-MSG, NEG-CLOSE, and the expiry of idle reconciliations.
#include "actors/relay/client_session_state.hpp"

namespace graspd::client_session_detail {

void SessionState::handle(nostr::ClientNegOpen& msg) {
  count(ClientMessageType::neg_open);
  if (!ctx->negentropy_scanner) {
    return answer_negentropy([&] {
      return negentropy->open(
          msg,
          [this](const nostr::Filter& filter, std::uint64_t max) {
            return ctx->store->negentropy_items(filter, max);
          },
          ctx->now());
    });
  }
  auto begun = negentropy->begin_open(msg, ctx->now());
  if (auto* refused = std::get_if<NegentropySessions::Answer>(&begun))
    return answer_negentropy([&] { return std::move(*refused); });
  scan_elsewhere(msg.subscription_id, std::get<NegentropySessions::PendingScan>(begun));
}

/// The NEG-OPEN's scan goes to the scanner's threads; its result comes back as
/// NegentropyScanned, so no scheduler thread reads the records.
void SessionState::scan_elsewhere(const std::string& subid,
                                  NegentropySessions::PendingScan& pending) {
  auto session = caf::actor_cast<client_session_actor>(self);
  const auto ticket = pending.ticket;
  // Turns are taken per client address (an IPv6 client's by its /64).
  auto refusal = ctx->negentropy_scanner->submit(
      client_source_group(source), std::move(pending.filter), pending.max,
      [session, subid, ticket](NegentropyScan scan) {
        caf::anon_send(
            session,
            NegentropyScanned{subid, ticket, std::make_shared<NegentropyScan>(std::move(scan))});
      });
  if (refusal == NegentropyScanner::Refusal::none) return;
  const char* reason =
      refusal == NegentropyScanner::Refusal::address_full
          ? "rate-limited: too many negentropy scans waiting from your address, try again later"
          : "rate-limited: too many negentropy scans waiting, try again later";
  answer_negentropy([&] {
    return negentropy->abandon_open(subid, ticket, NegentropyError::scan_queue, reason)
        .value_or(NegentropySessions::Answer{});
  });
}

void SessionState::on_scanned(NegentropyScanned& scanned) {
  if (closed) return;
  answer_negentropy([&] {
    return negentropy
        ->finish_open(scanned.subscription_id, scanned.ticket, std::move(*scanned.scan), ctx->now())
        .value_or(NegentropySessions::Answer{});
  });
}

void SessionState::handle(nostr::ClientNegMsg& msg) {
  count(ClientMessageType::neg_msg);
  answer_negentropy([&] { return negentropy->message(msg, ctx->now()); });
}

void SessionState::handle(nostr::ClientNegClose& msg) {
  count(ClientMessageType::neg_close);
  answer_negentropy([&] {
    negentropy->close(msg.subscription_id);
    return NegentropySessions::Answer{};
  });
}

void SessionState::report_negentropy(NegentropySessions::Answer& answer, std::size_t before) {
  if (auto* m = metrics()) {
    m->negentropy_sessions(static_cast<long>(negentropy->open_sessions()) -
                           static_cast<long>(before));
    if (answer.error)
      m->negentropy_error(to_string(*answer.error));
    else if (!answer.frame.empty())
      m->negentropy_round(answer.items);
  }
  if (!answer.frame.empty()) send(std::move(answer.frame));
}

/// One timer at a time, due when the session idle longest passes the idle timeout; it re-arms
/// itself while sessions are open.
void SessionState::arm_negentropy_expiry() {
  if (negentropy_timer || closed) return;
  auto due = negentropy->next_expiry();
  if (!due) return;
  negentropy_timer = true;
  auto delay = std::max(Clock::duration::zero(), *due - ctx->now());
  self->delayed_send(self, delay, atom::neg_idle::value);
}

void SessionState::on_negentropy_timer() {
  negentropy_timer = false;
  if (closed) return;
  auto before = negentropy->open_sessions();
  for (auto& answer : negentropy->expire(ctx->now())) {
    report_negentropy(answer, before);
    before = negentropy->open_sessions();
  }
  arm_negentropy_expiry();
}

}  // namespace graspd::client_session_detail
