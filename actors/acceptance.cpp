#include "actors/acceptance.hpp"

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>
#include <caf/event_based_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <functional>

#include "messages/nostr/nip34.hpp"
#include "runtime/log.hpp"
#include "store/event_store.hpp"

namespace graspd {

struct AcceptanceMetrics {
  explicit AcceptanceMetrics(prometheus::Registry& registry)
      : decisions(prometheus::BuildCounter()
                      .Name("graspd_policy_decisions_total")
                      .Help("GRASP-01 policy decisions by kind group and result")
                      .Register(registry)),
        rules(prometheus::BuildCounter()
                  .Name("graspd_policy_rule_total")
                  .Help("GRASP-01 policy decisions by the rule that decided")
                  .Register(registry)),
        retry_events(prometheus::BuildGauge()
                         .Name("graspd_policy_retry_cache_events")
                         .Help("Events parked for a missing dependency")
                         .Register(registry)
                         .Add({})),
        retry_bytes(prometheus::BuildGauge()
                        .Name("graspd_policy_retry_cache_bytes")
                        .Help("Approximate bytes of parked events")
                        .Register(registry)
                        .Add({})),
        retry_outcomes(prometheus::BuildCounter()
                           .Name("graspd_policy_retry_total")
                           .Help("Events whose dependency was missing at arrival: parked, "
                                 "released, accepted (after a retry), expired, evicted; "
                                 "accepted_on_pending (the dependency was accepted but not yet "
                                 "committed: no retry needed); rejudged (a pending dependency "
                                 "was not stored after all)")
                           .Register(registry)),
        pending_events(prometheus::BuildGauge()
                           .Name("graspd_policy_pending_events")
                           .Help("Events accepted and sent to the store writer whose commit the "
                                 "policy has not seen yet")
                           .Register(registry)
                           .Add({})) {}

  void count(policy::KindGroup group, const policy::Decision& d) {
    const char* result = d.accepted() ? "accepted" : "refused";
    decisions.Add({{"kind_group", policy::to_string(group)}, {"result", result}}).Increment();
    rules.Add({{"rule", policy::to_string(d.rule)}}).Increment();
  }
  void update(const policy::RetryCache& cache, const AcceptanceCounts& counts,
              std::size_t pending) {
    retry_events.Set(static_cast<double>(cache.size()));
    retry_bytes.Set(static_cast<double>(cache.bytes()));
    pending_events.Set(static_cast<double>(pending));
    const auto& s = cache.stats();
    set_counter("parked", s.parked);
    set_counter("released", s.released);
    set_counter("accepted", counts.accepted_after_retry);
    set_counter("expired", s.expired);
    set_counter("evicted", s.evicted);
    set_counter("accepted_on_pending", counts.accepted_on_pending);
    set_counter("rejudged", counts.rejudged);
  }

 private:
  void set_counter(const char* outcome, std::uint64_t value) {
    auto& c = retry_outcomes.Add({{"outcome", outcome}});
    if (auto delta = static_cast<double>(value) - c.Value(); delta > 0) c.Increment(delta);
  }

 public:
  prometheus::Family<prometheus::Counter>& decisions;
  prometheus::Family<prometheus::Counter>& rules;
  prometheus::Gauge& retry_events;
  prometheus::Gauge& retry_bytes;
  prometheus::Family<prometheus::Counter>& retry_outcomes;
  prometheus::Gauge& pending_events;
};

namespace {

using Self = acceptance_actor::stateful_pointer<AcceptanceState>;
/// Where the outcome of an accepted event goes: the asking session, or nowhere for a retry.
using Reply = std::function<void(AcceptanceVerdict)>;

/// A dependency that keeps failing (deleted, replaced) is judged again at most this often before
/// the event is refused; each round waits for one commit, so this cannot spin.
constexpr int max_write_attempts = 4;

/// Parked events are bounded by an estimate of their size; exact JSON length
/// would cost a serialization per refusal.
std::size_t approximate_bytes(const nostr::Event& ev) {
  std::size_t bytes = 256 + ev.content.size();
  for (const auto& tag : ev.tags)
    for (const auto& value : tag) bytes += value.size() + 4;
  return bytes;
}

void update_gauges(Self self) {
  auto& st = self->state;
  if (st.metrics) st.metrics->update(*st.retry, st.counts, st.policy->pending_count());
}

policy::Decision decide(Self self, const nostr::Event& ev) {
  auto& st = self->state;
  auto decision = st.policy->evaluate(ev);
  // A stored event is answered by the store ("duplicate:"), never refused by rules whose inputs
  // may have changed since it was accepted. Checked only on refusal: accepted events (the common
  // case) do not pay the extra lookup. A pending copy counts too: this one stores only if it does.
  if (!decision.accepted()) {
    const bool pending = st.policy->is_pending(ev.id);
    if (pending || st.store->contains(ev.id)) {
      policy::Decision already;
      already.verdict = policy::Verdict::accept;
      if (pending) already.depends_on = {ev.id};
      return already;
    }
  }
  ++st.decisions[static_cast<std::size_t>(decision.rule)];
  if (!decision.depends_on.empty()) ++st.counts.accepted_on_pending;
  if (st.metrics) st.metrics->count(policy::kind_group(ev.kind), decision);
  return decision;
}

/// One event on its way through the policy and the writer.
struct Submission {
  nostr::EventPtr event;
  /// Who sent it (a client's address, a sync peer): its share of the retry cache.
  std::string source;
  Reply reply;
  /// Rounds judged again because a dependency was not stored after all.
  int attempt = 0;
};

/// Parks an event refused for a missing dependency and returns the refusal the client sees.
AcceptanceVerdict park(Self self, const Submission& submission, policy::Decision& decision) {
  auto& st = self->state;
  const auto& ev = submission.event;
  st.retry->park(ev, approximate_bytes(*ev), decision.wait_keys, st.unix_now(), submission.source);
  update_gauges(self);
  // Say so: the client should not resend, and may see the event stored later.
  decision.message += "; held for " + std::to_string(st.retry_ttl_minutes) +
                      " min and stored if what it depends on arrives";
  return AcceptanceVerdict{false, decision.message, WriteOutcome::error};
}

void judge(Self self, Submission submission);

void on_written(Self self, Submission submission, WriteOutcome outcome) {
  auto& st = self->state;
  const auto& id = submission.event->id;
  if (outcome == WriteOutcome::stored || outcome == WriteOutcome::replaced_older) {
    st.policy->on_written(id);  // visible until the change feed reports the commit
    if (submission.event->kind == nostr::nip34::kind::repo_state && st.state_stored)
      st.state_stored(submission.event);
    return submission.reply(AcceptanceVerdict{true, {}, outcome});
  }
  st.policy->on_not_stored(id, outcome == WriteOutcome::duplicate);
  if (outcome != WriteOutcome::dependency_missing)
    return submission.reply(AcceptanceVerdict{true, {}, outcome});
  ++st.counts.rejudged;
  if (++submission.attempt >= max_write_attempts)
    return submission.reply(
        AcceptanceVerdict{false, std::string(store::ok_message(outcome)), outcome});
  judge(self, std::move(submission));
}

/// The writer did not answer: the event counts as not stored, the asker gets "error:" and the
/// failure is logged.
void on_write_failed(Self self, const Submission& submission, const caf::error& error) {
  auto& st = self->state;
  st.write_failures.report(self, error);
  st.policy->on_not_stored(submission.event->id, false);
  submission.reply(AcceptanceVerdict{true, {}, WriteOutcome::error});
}

/// Stores an accepted event. Writes leave in decision order, so what an event depends on is
/// committed before it or earlier in the same transaction.
void write(Self self, Submission submission, std::vector<nostr::EventId> depends_on) {
  auto& st = self->state;
  auto ev = submission.event;
  st.policy->on_accepted(ev, depends_on);
  auto shared = std::make_shared<Submission>(std::move(submission));
  self->request(st.writer, caf::infinite, StoreWrite{ev, std::move(depends_on)})
      .then([self, shared](WriteOutcome outcome) { on_written(self, std::move(*shared), outcome); },
            [self, shared](caf::error& error) { on_write_failed(self, *shared, error); });
}

/// Decides an event and acts on it: refuse, park, or store and answer after the commit.
void judge(Self self, Submission submission) {
  const auto& ev = submission.event;
  auto decision = decide(self, *ev);
  if (decision.verdict == policy::Verdict::refuse_missing_dependency)
    return submission.reply(park(self, submission, decision));
  if (!decision.accepted()) return submission.reply(AcceptanceVerdict{false, decision.message, {}});
  if (nostr::is_ephemeral(ev->kind))
    return submission.reply(AcceptanceVerdict{true, {}, WriteOutcome::ephemeral_not_stored});
  auto& st = self->state;
  if (decision.rule == policy::Rule::announcement_lists_service && st.create_repository)
    st.create_repository(*ev);
  write(self, std::move(submission), std::move(decision.depends_on));
}

void resubmit_released(Self self, const std::vector<std::string>& keys) {
  auto& st = self->state;
  auto count_stored = [self](const AcceptanceVerdict& verdict) {
    if (verdict.accepted && store::is_accepted(verdict.outcome))
      ++self->state.counts.accepted_after_retry;
  };
  for (auto& ev : st.retry->release(keys)) judge(self, Submission{ev, {}, count_stored, 0});
  update_gauges(self);
}

/// Judges a client's or a peer's event and answers once it is refused, parked or committed.
caf::result<AcceptanceVerdict> on_query(Self self, AcceptanceQuery& query) {
  auto promise = self->make_response_promise<AcceptanceVerdict>();
  auto deliver = [promise](AcceptanceVerdict verdict) mutable {
    promise.deliver(std::move(verdict));
  };
  judge(self, Submission{std::move(query.event), std::move(query.source), deliver, 0});
  return promise;
}

/// Drops parked events past their TTL and pending ones the store will not report, then re-arms.
void expire(Self self, std::chrono::seconds interval) {
  auto& st = self->state;
  st.retry->expire(st.unix_now());
  st.policy->sweep_pending();
  update_gauges(self);
  self->delayed_send(self, interval, atom::tick::value);
}

}  // namespace

acceptance_actor::behavior_type acceptance(Self self, AcceptanceConfig config,
                                           std::shared_ptr<const store::EventStore> store,
                                           store_writer_actor writer,
                                           std::shared_ptr<prometheus::Registry> registry) {
  auto& st = self->state;
  st.store = store;
  st.view = std::make_unique<store::EventStoreView>(store);
  st.policy = std::make_unique<policy::AcceptancePolicy>(config.policy, *st.view);
  // The startup load: every announcement and thread in the store, so it grows with the store.
  auto load_started = std::chrono::steady_clock::now();
  st.policy->load_from_store();
  log::info("acceptance", "startup load from the store took ",
            std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                                  load_started)
                .count(),
            " ms (", st.policy->eligible_author_count(), " eligible authors)");
  st.retry = std::make_unique<policy::RetryCache>(config.retry);
  st.retry_ttl_minutes = std::max<std::int64_t>(1, config.retry.ttl_seconds / 60);
  st.unix_now = config.unix_now ? config.unix_now
                                : [] { return static_cast<std::int64_t>(std::time(nullptr)); };
  st.writer = std::move(writer);
  st.create_repository = std::move(config.create_repository);
  st.state_stored = std::move(config.state_stored);
  if (registry) st.metrics = std::make_shared<AcceptanceMetrics>(*registry);
  const auto interval = config.expiry_interval;
  if (interval.count() > 0) self->delayed_send(self, interval, atom::tick::value);
  return {
      [=](AcceptanceQuery& query) -> caf::result<AcceptanceVerdict> {
        return on_query(self, query);
      },
      [=](StoreCommitted& committed) {
        resubmit_released(self, self->state.policy->on_committed(*committed.event));
      },
      [=](atom::tick) { expire(self, interval); },
  };
}

}  // namespace graspd
