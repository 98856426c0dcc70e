// The acceptance actor's Prometheus families (graspd_policy_*, graspd_purgatory_*): internal to
// actors/policy/acceptance*.cpp, which update them from the policy's, retry cache's and purgatory's
// counts.
#pragma once

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>

#include <array>
#include <cstdint>

#include "actors/policy/acceptance.hpp"

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
                           .Add({})) {
    // Every series exists from the start, at zero: a dashboard or an alert that queries one
    // finds it before the first event of its kind (and "no data" means graspd is not there).
    // The series are looked up here once: Family::Add builds a label map per call, and the
    // counts below run for every event.
    for (std::size_t g = 0; g < policy::kind_group_count; ++g)
      for (std::size_t accepted = 0; accepted < 2; ++accepted)
        decision_series[g][accepted] =
            &decisions.Add({{"kind_group", policy::to_string(static_cast<policy::KindGroup>(g))},
                            {"result", accepted ? "accepted" : "refused"}});
    for (std::size_t r = 0; r < policy::rule_count; ++r)
      rule_series[r] = &rules.Add({{"rule", policy::to_string(static_cast<policy::Rule>(r))}});
    for (std::size_t o = 0; o < retry_outcome_names.size(); ++o)
      retry_series[o] = &retry_outcomes.Add({{"outcome", retry_outcome_names[o]}});
  }

  /// graspd_purgatory_*: registered with purgatory off too, every series at zero.
  void register_purgatory(prometheus::Registry& registry) {
    held_events = &prometheus::BuildGauge()
                       .Name("graspd_purgatory_events")
                       .Help("Events held in purgatory until their git data arrives, by kind")
                       .Register(registry);
    purgatory_outcomes = &prometheus::BuildCounter()
                              .Name("graspd_purgatory_total")
                              .Help(
                                  "Purgatory: events held, released (git data arrived, moved "
                                  "to the store) and expired (no git data in time)")
                              .Register(registry);
    purgatory_refusals = &prometheus::BuildCounter()
                              .Name("graspd_purgatory_refused_total")
                              .Help(
                                  "Events purgatory refused to hold: full (a bound of the whole "
                                  "purgatory), author_share, address_share, sync_share (the "
                                  "sender's share of it)")
                              .Register(registry);
    held_bytes = &prometheus::BuildGauge()
                      .Name("graspd_purgatory_bytes")
                      .Help("Approximate bytes of the events held in purgatory")
                      .Register(registry)
                      .Add({});
    held_repositories = &prometheus::BuildGauge()
                             .Name("graspd_purgatory_repositories")
                             .Help("Held announcements, each with a repository on disk")
                             .Register(registry)
                             .Add({});
    for (std::size_t k = 0; k < policy::held_kind_count; ++k)
      held_series[k] =
          &held_events->Add({{"kind", policy::to_string(static_cast<policy::HeldKind>(k))}});
    for (std::size_t o = 0; o < purgatory_outcome_names.size(); ++o)
      purgatory_series[o] = &purgatory_outcomes->Add({{"outcome", purgatory_outcome_names[o]}});
    for (const char* reason : {"full", "author_share", "address_share", "sync_share"})
      purgatory_refusals->Add({{"reason", reason}});
  }
  /// One event purgatory refused to hold, for `reason` (rare: looked up when it happens).
  void refused(const char* reason) {
    if (purgatory_refusals) purgatory_refusals->Add({{"reason", reason}}).Increment();
  }
  void update(const policy::Purgatory& purgatory, std::uint64_t held_total) {
    if (!held_events) return;
    auto counts = purgatory.counts();
    for (std::size_t i = 0; i < counts.size(); ++i)
      held_series[i]->Set(static_cast<double>(counts[i]));
    held_bytes->Set(static_cast<double>(purgatory.usage().bytes));
    held_repositories->Set(static_cast<double>(purgatory.usage().repositories));
    const std::uint64_t totals[] = {held_total, purgatory.stats().released,
                                    purgatory.stats().expired};
    for (std::size_t o = 0; o < purgatory_series.size(); ++o)
      set_total(*purgatory_series[o], totals[o]);
  }

  void count(policy::KindGroup group, const policy::Decision& d) {
    decision_series[static_cast<std::size_t>(group)][d.accepted() ? 1 : 0]->Increment();
    rule_series[static_cast<std::size_t>(d.rule)]->Increment();
  }
  void update(const policy::RetryCache& cache, const AcceptanceCounts& counts,
              std::size_t pending) {
    retry_events.Set(static_cast<double>(cache.size()));
    retry_bytes.Set(static_cast<double>(cache.bytes()));
    pending_events.Set(static_cast<double>(pending));
    const auto& s = cache.stats();
    // In the order of retry_outcome_names.
    const std::uint64_t totals[] = {s.parked,       s.released, counts.accepted_after_retry,
                                    s.expired,      s.evicted,  counts.accepted_on_pending,
                                    counts.rejudged};
    for (std::size_t o = 0; o < retry_series.size(); ++o) set_total(*retry_series[o], totals[o]);
  }

 private:
  static constexpr std::array<const char*, 7> retry_outcome_names{
      "parked", "released", "accepted", "expired", "evicted", "accepted_on_pending", "rejudged"};
  static constexpr std::array<const char*, 3> purgatory_outcome_names{"held", "released",
                                                                      "expired"};

  static void set_total(prometheus::Counter& c, std::uint64_t value) {
    if (auto delta = static_cast<double>(value) - c.Value(); delta > 0) c.Increment(delta);
  }

  std::array<std::array<prometheus::Counter*, 2>, policy::kind_group_count> decision_series{};
  std::array<prometheus::Counter*, policy::rule_count> rule_series{};
  std::array<prometheus::Counter*, retry_outcome_names.size()> retry_series{};
  std::array<prometheus::Gauge*, policy::held_kind_count> held_series{};
  std::array<prometheus::Counter*, purgatory_outcome_names.size()> purgatory_series{};

 public:
  prometheus::Family<prometheus::Counter>& decisions;
  prometheus::Family<prometheus::Counter>& rules;
  prometheus::Gauge& retry_events;
  prometheus::Gauge& retry_bytes;
  prometheus::Family<prometheus::Counter>& retry_outcomes;
  prometheus::Gauge& pending_events;
  prometheus::Family<prometheus::Gauge>* held_events = nullptr;
  prometheus::Family<prometheus::Counter>* purgatory_outcomes = nullptr;
  prometheus::Family<prometheus::Counter>* purgatory_refusals = nullptr;
  prometheus::Gauge* held_bytes = nullptr;
  prometheus::Gauge* held_repositories = nullptr;
};

}  // namespace graspd
