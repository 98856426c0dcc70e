#include "runtime/net/ws_metrics.hpp"

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

namespace graspd::runtime {

const char* to_string(ClientMessageType type) {
  static constexpr std::array<const char*, client_message_type_count> names = {
      "event",    "req",      "close",   "count",     "malformed", "binary",
      "oversize", "neg_open", "neg_msg", "neg_close", "auth"};
  return names[static_cast<std::size_t>(type)];
}

const char* to_string(AuthOutcome outcome) {
  static constexpr std::array<const char*, auth_outcome_count> names = {
      "ok", "bad_sig", "bad_challenge", "bad_relay", "stale", "too_many"};
  return names[static_cast<std::size_t>(outcome)];
}

const char* to_string(ProtectedRefusal reason) {
  static constexpr std::array<const char*, protected_refusal_count> names = {"auth_required",
                                                                             "restricted"};
  return names[static_cast<std::size_t>(reason)];
}

const char* to_string(EventResult result) {
  static constexpr std::array<const char*, event_result_count> names = {
      "stored",  "duplicate",    "replaced", "ephemeral", "invalid",
      "blocked", "rate_limited", "rejected", "error",     "held"};
  return names[static_cast<std::size_t>(result)];
}

namespace {
prometheus::Histogram::BucketBoundaries latency_buckets() {
  return {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5};
}
}  // namespace

void RelayMetrics::negentropy_sessions(long delta) {
  if (delta > 0) negentropy_sessions_->Increment(static_cast<double>(delta));
  if (delta < 0) negentropy_sessions_->Decrement(static_cast<double>(-delta));
}

void RelayMetrics::negentropy_round(std::uint64_t items) {
  negentropy_rounds_->Increment();
  if (items) negentropy_items_->Increment(static_cast<double>(items));
}

void RelayMetrics::negentropy_error(const char* reason) {
  negentropy_errors_->Add({{"reason", reason}}).Increment();
}

void RelayMetrics::register_negentropy(prometheus::Registry& registry) {
  negentropy_sessions_ = &prometheus::BuildGauge()
                              .Name("graspd_negentropy_sessions")
                              .Help("Open NIP-77 negentropy sessions (NEG-OPEN not yet closed)")
                              .Register(registry)
                              .Add({});
  negentropy_rounds_ = &prometheus::BuildCounter()
                            .Name("graspd_negentropy_rounds_total")
                            .Help("NEG-OPEN and NEG-MSG messages answered with NEG-MSG")
                            .Register(registry)
                            .Add({});
  negentropy_items_ = &prometheus::BuildCounter()
                           .Name("graspd_negentropy_items_total")
                           .Help("Records covered by the negentropy sessions opened")
                           .Register(registry)
                           .Add({});
  negentropy_errors_ = &prometheus::BuildCounter()
                            .Name("graspd_negentropy_errors_total")
                            .Help("NEG-ERR answers by reason")
                            .Register(registry);
}

void RelayMetrics::register_auth(prometheus::Registry& registry) {
  auto& auth = prometheus::BuildCounter()
                   .Name("graspd_relay_auth_total")
                   .Help("NIP-42 AUTH messages from clients, by outcome")
                   .Register(registry);
  for (std::size_t i = 0; i < auth_outcome_count; ++i)
    auth_[i] = &auth.Add({{"outcome", to_string(static_cast<AuthOutcome>(i))}});
  auto& refused = prometheus::BuildCounter()
                      .Name("graspd_relay_protected_refused_total")
                      .Help("NIP-70 protected EVENTs refused on the client path, by reason")
                      .Register(registry);
  for (std::size_t i = 0; i < protected_refusal_count; ++i)
    protected_refused_[i] = &refused.Add({{"reason", to_string(static_cast<ProtectedRefusal>(i))}});
}

void RelayMetrics::auth(AuthOutcome outcome) {
  auth_[static_cast<std::size_t>(outcome)]->Increment();
}

void RelayMetrics::protected_refused(ProtectedRefusal reason) {
  protected_refused_[static_cast<std::size_t>(reason)]->Increment();
}

RelayMetrics::RelayMetrics(prometheus::Registry& registry) {
  register_negentropy(registry);
  register_auth(registry);
  auto& messages = prometheus::BuildCounter()
                       .Name("graspd_relay_messages_received_total")
                       .Help("Client WebSocket messages received, by NIP-01 verb")
                       .Register(registry);
  for (std::size_t i = 0; i < client_message_type_count; ++i) {
    messages_[i] = &messages.Add({{"type", to_string(static_cast<ClientMessageType>(i))}});
  }
  auto& results = prometheus::BuildCounter()
                      .Name("graspd_relay_events_total")
                      .Help("EVENTs from clients by result (stored, duplicate, invalid, ...)")
                      .Register(registry);
  for (std::size_t i = 0; i < event_result_count; ++i) {
    results_[i] = &results.Add({{"result", to_string(static_cast<EventResult>(i))}});
  }
  events_received_ = &prometheus::BuildCounter()
                          .Name("graspd_relay_events_received_total")
                          .Help("EVENTs received from clients")
                          .Register(registry)
                          .Add({});
  connections_ = &prometheus::BuildGauge()
                      .Name("graspd_relay_connections")
                      .Help("Open client WebSocket connections")
                      .Register(registry)
                      .Add({});
  refused_ = &prometheus::BuildCounter()
                  .Name("graspd_relay_connections_refused_total")
                  .Help("WebSocket connections refused by the connection caps")
                  .Register(registry)
                  .Add({});
  slow_readers_ = &prometheus::BuildCounter()
                       .Name("graspd_relay_slow_reader_disconnects_total")
                       .Help("Connections closed because their outbound queue overflowed")
                       .Register(registry)
                       .Add({});
  req_latency_ = &prometheus::BuildHistogram()
                      .Name("graspd_relay_req_seconds")
                      .Help("Time from a REQ to its EOSE (stored phase)")
                      .Register(registry)
                      .Add({}, latency_buckets());
  fanout_latency_ =
      &prometheus::BuildHistogram()
           .Name("graspd_relay_fanout_seconds")
           .Help("Time to hand one committed event to every matching live subscription")
           .Register(registry)
           .Add({}, latency_buckets());
}

void RelayMetrics::message(ClientMessageType type) {
  messages_[static_cast<std::size_t>(type)]->Increment();
}
void RelayMetrics::event_received() {
  events_received_->Increment();
}
void RelayMetrics::event_result(EventResult result) {
  results_[static_cast<std::size_t>(result)]->Increment();
}
void RelayMetrics::connections(std::size_t open) {
  connections_->Set(static_cast<double>(open));
}
void RelayMetrics::connection_refused() {
  refused_->Increment();
}
void RelayMetrics::slow_reader_closed() {
  slow_readers_->Increment();
}
void RelayMetrics::req_latency(double seconds) {
  req_latency_->Observe(seconds);
}
void RelayMetrics::fanout_latency(double seconds) {
  fanout_latency_->Observe(seconds);
}

}  // namespace graspd::runtime
