#include "actors/ops/management.hpp"

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/registry.h>

#include <chrono>
#include <utility>

#include "messages/nostr/nip19.hpp"
#include "messages/unix_clock.hpp"
#include "runtime/ops/log.hpp"

namespace graspd::actors {

using nostr::nip86::Method;

/// graspd_admin_calls_total{method,outcome}: every series exists from the start, at zero.
struct ManagementMetrics {
  explicit ManagementMetrics(prometheus::Registry& registry)
      : family(prometheus::BuildCounter()
                   .Name("graspd_admin_calls_total")
                   .Help("NIP-86 management API calls by method (unsupported: any other name) "
                         "and outcome (ok, error, invalid request, unauthorized)")
                   .Register(registry)) {
    for (std::size_t m = 0; m < nostr::nip86::method_count; ++m)
      for (std::size_t o = 0; o < call_outcome_count; ++o)
        counters[m][o] = &family.Add({{"method", nostr::nip86::to_string(static_cast<Method>(m))},
                                      {"outcome", to_string(static_cast<CallOutcome>(o))}});
  }
  prometheus::Family<prometheus::Counter>& family;
  std::array<std::array<prometheus::Counter*, call_outcome_count>, nostr::nip86::method_count>
      counters{};
};

const char* to_string(CallOutcome outcome) {
  static constexpr std::array<const char*, call_outcome_count> names = {"ok", "error", "invalid",
                                                                        "unauthorized"};
  return names[static_cast<std::size_t>(outcome)];
}

namespace {

using ManagementSelf = management_actor::stateful_pointer<ManagementState>;
using ManagementPromise = caf::typed_response_promise<ManagementAnswer>;

constexpr std::string_view component = "management";

/// What a call is about, for the log line and the metric.
struct CallRecord {
  Method method = Method::unsupported;
  std::string name;    ///< the method as asked (an unsupported one too), as logged
  std::string params;  ///< the params as logged
  std::string signer;  ///< npub; empty before authentication
};

void count(ManagementSelf self, const CallRecord& call, CallOutcome outcome) {
  auto m = static_cast<std::size_t>(call.method);
  auto o = static_cast<std::size_t>(outcome);
  ++self->state.calls[m][o];
  if (self->state.metrics) self->state.metrics->counters[m][o]->Increment();
}

ManagementAnswer finish(ManagementSelf self, const CallRecord& call, CallOutcome outcome,
                        unsigned status, std::string body) {
  count(self, call, outcome);
  log::info(component, "call ", call.name.empty() ? "(malformed)" : call.name, " ", call.params,
            " by ", call.signer, ": ", to_string(outcome));
  return {status, std::move(body)};
}

/// The one answer to every authentication failure: which check failed stays in the log.
ManagementAnswer unauthorized(ManagementSelf self, const CallRecord& call, std::string_view why) {
  count(self, call, CallOutcome::unauthorized);
  log::info(component, "refused a call (", nostr::nip86::to_string(call.method),
            "): unauthorized (", why, ")");
  return {401, R"({"error":"unauthorized"})"};
}

std::string params_text(const std::vector<std::string>& params) {
  std::string out = "[";
  for (const auto& p : params) out += (out.size() > 1 ? "," : "") + nostr::nip86::json_string(p);
  return out + "]";
}

/// The method the body names, for the metric of a refused call (never trusted for more).
Method claimed_method(const std::string& body) {
  auto request = nostr::nip86::parse_request(body);
  return request ? nostr::nip86::method_named(request->method) : Method::unsupported;
}

/// Why the caller is not let in; empty when it is (its token is then used up).
std::string authentication_failure(ManagementSelf self, const ManagementCall& call,
                                   CallRecord& record) {
  auto& st = self->state;
  auto now = st.config.unix_now();
  auto verified =
      nostr::nip98::verify_http_auth({call.authorization, "POST", call.body, now}, st.config.auth);
  if (!verified.ok()) return nostr::nip98::to_string(verified.failure);
  record.signer = nostr::encode_npub(verified.event->pubkey);
  if (!st.config.admins.count(verified.event->pubkey)) return "not an admin: " + record.signer;
  if (!st.replay->first_use(verified.event->id, now)) return "token used before";
  return {};
}

/// The acceptance actor takes back changes the store writer could not persist.
void undo(ManagementSelf self, const StoreModeration& changes) {
  StoreModeration inverse;
  for (const auto& entry : changes.puts)
    if (!self->state.lists->contains(entry.list, entry.key)) inverse.erases.push_back(entry);
  inverse.puts = changes.erases;
  self->request(self->state.acceptance, caf::infinite, std::move(inverse))
      .then([](bool) {}, [](const caf::error&) {});
}

/// Applies a step's changes: acceptance actor first (the next event is judged with them), then
/// the store writer (persisted; a banned event deleted after every write queued before). When the
/// writer fails, the acceptance actor is told to undo them.
void apply(ManagementSelf self, ops::ManagementStep step, CallRecord call,
           ManagementPromise promise) {
  auto& st = self->state;
  auto changes = std::make_shared<StoreModeration>(std::move(step.changes));
  auto failed = [self, call, promise](const caf::error&) mutable {
    promise.deliver(finish(self, call, CallOutcome::error, 200,
                           nostr::nip86::error_answer("error: the change could not be applied")));
  };
  self->request(st.acceptance, caf::infinite, *changes)
      .then(
          [self, changes, call, promise, result = std::move(step.result_json),
           failed](bool) mutable {
            self->request(self->state.writer, caf::infinite, *changes)
                .then(
                    [self, changes, call, promise, result, failed](bool stored) mutable {
                      if (!stored) {
                        undo(self, *changes);
                        return failed(caf::error{});
                      }
                      self->state.lists->commit(*changes);
                      promise.deliver(finish(self, call, CallOutcome::ok, 200,
                                             nostr::nip86::result_answer(result)));
                    },
                    [self, changes, failed](const caf::error& error) mutable {
                      undo(self, *changes);
                      failed(error);
                    });
          },
          failed);
}

ManagementAnswer run_read(ManagementSelf self, const CallRecord& call,
                          const ops::ManagementStep& step) {
  if (!step.error.empty())
    return finish(self, call, CallOutcome::error, 200, nostr::nip86::error_answer(step.error));
  return finish(self, call, CallOutcome::ok, 200, nostr::nip86::result_answer(step.result_json));
}

caf::result<ManagementAnswer> on_call(ManagementSelf self, const ManagementCall& call) {
  CallRecord record;
  record.method = claimed_method(call.body);
  if (auto why = authentication_failure(self, call, record); !why.empty())
    return unauthorized(self, record, why);
  auto request = nostr::nip86::parse_request(call.body);
  if (!request)
    return finish(self, record, CallOutcome::invalid, 400,
                  nostr::nip86::error_answer("invalid: expected {\"method\", \"params\"}"));
  record.name = nostr::nip86::json_string(request->method.substr(0, 64));
  record.params = params_text(request->params);
  auto step = self->state.lists->plan(record.method, request->params);
  if (!step.error.empty() || !step.changes_something()) return run_read(self, record, step);
  auto promise = self->make_response_promise<ManagementAnswer>();
  apply(self, std::move(step), std::move(record), promise);
  return promise;
}

}  // namespace

management_actor::behavior_type management(ManagementSelf self, ManagementConfig config,
                                           acceptance_actor acceptance, store_writer_actor writer,
                                           std::shared_ptr<prometheus::Registry> registry) {
  auto& st = self->state;
  config.unix_now = or_system_clock(std::move(config.unix_now));
  st.lists = std::make_unique<ops::ManagementLists>(config.lists);
  for (const auto& entry : config.stored) st.lists->load(entry);
  config.stored.clear();
  st.replay = std::make_unique<nostr::nip98::ReplayGuard>(config.replay_window_seconds,
                                                          config.replay_max_tokens);
  st.config = std::move(config);
  st.acceptance = std::move(acceptance);
  st.writer = std::move(writer);
  if (registry) st.metrics = std::make_shared<ManagementMetrics>(*registry);
  return {
      [self](const ManagementCall& call) { return on_call(self, call); },
  };
}

}  // namespace graspd::actors
