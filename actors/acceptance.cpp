#include "actors/acceptance.hpp"

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>
#include <caf/event_based_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include <algorithm>
#include <ctime>

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
                           .Help("Retry cache outcomes: parked, released, accepted, expired, "
                                 "evicted")
                           .Register(registry)) {}

  void count(policy::KindGroup group, const policy::Decision& d) {
    const char* result = d.accepted() ? "accepted" : "refused";
    decisions.Add({{"kind_group", policy::to_string(group)}, {"result", result}}).Increment();
    rules.Add({{"rule", policy::to_string(d.rule)}}).Increment();
  }
  void update(const policy::RetryCache& cache, std::uint64_t accepted_after_retry) {
    retry_events.Set(static_cast<double>(cache.size()));
    retry_bytes.Set(static_cast<double>(cache.bytes()));
    const auto& s = cache.stats();
    set_counter("parked", s.parked);
    set_counter("released", s.released);
    set_counter("accepted", accepted_after_retry);
    set_counter("expired", s.expired);
    set_counter("evicted", s.evicted);
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
};

namespace {

using Self = acceptance_actor::stateful_pointer<AcceptanceState>;

std::int64_t unix_now() {
  return static_cast<std::int64_t>(std::time(nullptr));
}

/// Parked events are bounded by an estimate of their size; exact JSON length
/// would cost a serialization per refusal.
std::size_t approximate_bytes(const nostr::Event& ev) {
  std::size_t bytes = 256 + ev.content.size();
  for (const auto& tag : ev.tags)
    for (const auto& value : tag) bytes += value.size() + 4;
  return bytes;
}

policy::Decision decide(Self self, const nostr::Event& ev) {
  auto& st = self->state;
  auto decision = st.policy->evaluate(ev);
  // A stored event is answered by the store ("duplicate:"), never refused by rules whose inputs
  // may have changed since it was accepted. Checked only on refusal: accepted events (the common
  // case) do not pay the extra lookup.
  if (!decision.accepted() && st.store->contains(ev.id)) {
    policy::Decision already_stored;
    already_stored.verdict = policy::Verdict::accept;
    return already_stored;
  }
  ++st.decisions[static_cast<std::size_t>(decision.rule)];
  if (st.metrics) st.metrics->count(policy::kind_group(ev.kind), decision);
  return decision;
}

void park(Self self, const nostr::EventPtr& ev, const policy::Decision& decision) {
  self->state.retry->park(ev, approximate_bytes(*ev), decision.wait_keys, unix_now());
}

void resubmit_released(Self self, const std::vector<std::string>& keys) {
  auto& st = self->state;
  for (auto& ev : st.retry->release(keys)) {
    auto decision = decide(self, *ev);
    if (decision.verdict == policy::Verdict::refuse_missing_dependency) {
      park(self, ev, decision);
      continue;
    }
    if (!decision.accepted()) continue;
    ++st.resubmitted;
    self->request(st.writer, caf::infinite, StoreWrite{ev})
        .then([](WriteOutcome) {}, [](caf::error&) {});
  }
  if (st.metrics) st.metrics->update(*st.retry, st.resubmitted);
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
  st.policy->load_from_store();
  st.retry = std::make_unique<policy::RetryCache>(config.retry);
  st.retry_ttl_minutes = std::max<std::int64_t>(1, config.retry.ttl_seconds / 60);
  st.writer = std::move(writer);
  if (registry) st.metrics = std::make_shared<AcceptanceMetrics>(*registry);
  const auto interval = config.expiry_interval;
  if (interval.count() > 0) self->delayed_send(self, interval, atom::tick::value);
  return {
      [=](AcceptanceQuery& query) -> AcceptanceVerdict {
        auto decision = decide(self, *query.event);
        if (decision.verdict == policy::Verdict::refuse_missing_dependency) {
          park(self, query.event, decision);
          // Say so: the client should not resend, and may see the event stored later.
          decision.message += "; held for " + std::to_string(self->state.retry_ttl_minutes) +
                              " min and stored if what it depends on arrives";
          if (self->state.metrics) self->state.metrics->update(*self->state.retry, 0);
        }
        return AcceptanceVerdict{decision.accepted(), decision.message};
      },
      [=](StoreCommitted& committed) {
        resubmit_released(self, self->state.policy->on_committed(*committed.event));
      },
      [=](atom::tick) {
        self->state.retry->expire(unix_now());
        if (self->state.metrics)
          self->state.metrics->update(*self->state.retry, self->state.resubmitted);
        self->delayed_send(self, interval, atom::tick::value);
      },
  };
}

}  // namespace graspd
