#include "runtime/boot/sync_ingest.hpp"
#include "messages/nostr/nip42.hpp"
#include "messages/unix_clock.hpp"

#include <limits>

namespace graspd::boot {

namespace {

/// The run is short and its parked events wait for events of the same run: nothing expires, and
/// the one source is not held to a share.
policy::RetryCache::Limits retry_limits() {
  policy::RetryCache::Limits limits;
  limits.max_events = 1000000;
  limits.max_bytes = std::size_t{1} << 30;
  limits.ttl_seconds = std::numeric_limits<std::int32_t>::max();
  return limits;
}

}  // namespace

SyncIngest::SyncIngest(std::shared_ptr<store::EventStore> store,
                       std::optional<policy::PolicyConfig> policy,
                       std::function<void(const nostr::EventId&, const std::string&)> on_refused)
    : store_(std::move(store)), on_refused_(std::move(on_refused)) {
  if (!policy) return;
  view_ = std::make_unique<store::EventStoreView>(store_);
  policy_ = std::make_unique<policy::AcceptancePolicy>(std::move(*policy), *view_);
  policy_->load_from_store();
  // The management API's bans hold for `graspd sync` too.
  store_->for_each_moderation([this](const ModerationEntry& entry) {
    policy::apply_entry(policy_->runtime_lists(), entry, true);
  });
  retry_ = std::make_unique<policy::RetryCache>(retry_limits());
}

void SyncIngest::submit(nostr::EventPtr event) {
  // NIP-70: none of what `graspd sync` downloads comes from its author over an authenticated
  // connection, with or without a policy.
  if (nostr::is_protected(*event)) {
    ++counts_.protected_refused;
    return refuse(event->id, std::string(nostr::protected_refusal_message));
  }
  judge(std::move(event), 0);
}

void SyncIngest::refuse(const nostr::EventId& id, const std::string& message) {
  ++counts_.refused;
  if (on_refused_) on_refused_(id, message);
}

void SyncIngest::judge(nostr::EventPtr event, int attempt) {
  if (!policy_) {
    batch_.push_back({std::move(event), {}, attempt});
    return;
  }
  // Already accepted in this run, or stored (by us or by the daemon): accepted, and the store
  // answers duplicate.
  auto decision = policy_->evaluate_submission(
      *event, [this](const nostr::EventId& id) { return store_->contains(id); });
  if (decision.verdict == policy::Verdict::refuse_missing_dependency) {
    retry_->park(event, policy::RetryCache::approximate_bytes(*event), decision.wait_keys,
                 system_unix_now());
    return;
  }
  if (!decision.accepted()) return refuse(event->id, decision.message);
  if (nostr::is_ephemeral(event->kind)) return refuse(event->id, "ephemeral: not stored");
  policy_->on_accepted(event, decision.depends_on);
  batch_.push_back({std::move(event), std::move(decision.depends_on), attempt});
}

bool SyncIngest::flush() {
  while (!batch_.empty())
    if (!write_round()) return false;
  return true;
}

/// Writes the current batch in one transaction; the events it releases form the next batch.
bool SyncIngest::write_round() {
  auto batch = std::move(batch_);
  batch_.clear();
  std::vector<nostr::EventPtr> events;
  std::vector<std::vector<nostr::EventId>> depends_on;
  for (const auto& accepted : batch) {
    events.push_back(accepted.event);
    depends_on.push_back(accepted.depends_on);
  }
  auto reports = store_->write_batch_with_json(events, depends_on);
  if (!reports.empty() && reports.front().outcome == WriteOutcome::error) {
    error_ = store_->last_error();
    return false;
  }
  std::vector<nostr::EventPtr> newly_committed;
  for (std::size_t i = 0; i < batch.size(); ++i) on_outcome(batch[i], reports[i], newly_committed);
  if (!policy_) return true;
  for (const auto& ev : newly_committed)
    for (auto& released : retry_->release(policy_->on_committed(*ev))) judge(released, 0);
  return true;
}

void SyncIngest::on_outcome(Accepted& accepted, const store::WriteReport& report,
                            std::vector<nostr::EventPtr>& newly_committed) {
  const auto& id = accepted.event->id;
  auto after = policy_ ? policy_->on_write_outcome(id, report.outcome, accepted.attempt + 1)
                       : policy::AfterWrite::done;
  if (after == policy::AfterWrite::judge_again) return judge(accepted.event, accepted.attempt + 1);
  if (wrote(report.outcome)) {
    ++counts_.stored;
    newly_committed.push_back(accepted.event);
  } else if (report.outcome == WriteOutcome::duplicate) {
    ++counts_.duplicate;
  } else {
    // Refused by the store's own rules, or (AfterWrite::refuse) after max_write_attempts.
    refuse(id, std::string(store::ok_message(report.outcome)));
  }
}

IngestCounts SyncIngest::counts() const {
  auto counts = counts_;
  counts.parked = retry_ ? retry_->size() : 0;
  return counts;
}

}  // namespace graspd::boot
