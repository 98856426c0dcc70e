// The two acceptance steps around the policy's rules that every path into the store takes (the
// acceptance actor for clients and sync, SyncIngest for `graspd sync`): deciding a submission that
// may already be here, and what follows the writer's answer.
#include "store/policy/acceptance_policy.hpp"

namespace graspd::policy {

using nostr::EventId;

AfterWrite AcceptancePolicy::on_write_outcome(const EventId& id, WriteOutcome outcome,
                                              int attempts_made) {
  if (wrote(outcome)) {
    on_written(id);  // visible until the change feed reports the commit
    return AfterWrite::done;
  }
  on_not_stored(id, outcome == WriteOutcome::duplicate);
  if (outcome != WriteOutcome::dependency_missing) return AfterWrite::done;
  return attempts_made >= max_write_attempts ? AfterWrite::refuse : AfterWrite::judge_again;
}

Decision AcceptancePolicy::evaluate_submission(
    const nostr::Event& ev, const std::function<bool(const EventId&)>& is_stored) const {
  auto decision = evaluate(ev);
  if (decision.accepted()) return decision;
  const bool pending = is_pending(ev.id);
  if (!pending && !is_stored(ev.id)) return decision;
  Decision already;
  already.verdict = Verdict::accept;
  already.already_here = true;
  if (pending) already.depends_on = {ev.id};
  return already;
}

}  // namespace graspd::policy
