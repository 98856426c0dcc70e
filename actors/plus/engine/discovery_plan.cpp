#include "actors/plus/engine/discovery_plan.hpp"

#include <algorithm>

namespace graspd::sync {

void DiscoveryPlan::set_authors(std::map<nostr::Pubkey, DiscoveryAuthor> authors) {
  for (auto it = authors_.begin(); it != authors_.end();)
    it = authors.count(it->first) ? std::next(it) : authors_.erase(it);
  for (auto& [author, facts] : authors) authors_[author].now = std::move(facts);
  // A backed-off source nobody names any more is forgotten: the map stays within the sources.
  std::set<std::string> named;
  for (const auto& [author, known] : authors_)
    named.insert(known.now.sources.begin(), known.now.sources.end());
  for (auto it = backoff_.begin(); it != backoff_.end();)
    it = named.count(it->first) ? std::next(it) : backoff_.erase(it);
}

bool DiscoveryPlan::round_due(const Known& known, std::int64_t now) const {
  if (!known.round.finished_at) return false;
  const bool refresh = known.now.found && !known.round.failed;
  return now >=
         *known.round.finished_at + (refresh ? config_.refresh_seconds : config_.retry_seconds);
}

std::vector<std::string> DiscoveryPlan::pending_sources(const Known& known,
                                                        std::int64_t now) const {
  if (round_due(known, now)) return known.now.sources;
  std::vector<std::string> out;
  for (const auto& source : known.now.sources)
    if (!known.round.visited.count(source)) out.push_back(source);
  return out;
}

bool DiscoveryPlan::busy(const std::string& source, std::int64_t now) const {
  for (const auto& [id, batch] : in_flight_)
    if (batch.source == source) return true;
  auto off = backoff_.find(source);
  return off != backoff_.end() && off->second.until > now;
}

std::size_t DiscoveryPlan::sources_backed_off(std::int64_t now) const {
  std::size_t n = 0;
  for (const auto& [source, off] : backoff_) n += off.until > now ? 1 : 0;
  return n;
}

std::optional<DiscoveryBatch> DiscoveryPlan::start(std::int64_t now, bool may_use_new_source) {
  if (in_flight_.size() >= std::max<std::size_t>(1, config_.max_batches)) return std::nullopt;
  std::map<std::string, std::size_t> counts = pending_by_source(now);
  std::optional<std::string> chosen;
  std::size_t best = 0;
  for (const auto& [source, count] : counts) {
    if (busy(source, now)) continue;
    const bool warm = warm_.count(source) > 0;
    if (!warm && !may_use_new_source) continue;
    // A warm source first, then the one with the most authors.
    const bool chosen_warm = chosen && warm_.count(*chosen);
    if (!chosen || (warm && !chosen_warm) || (warm == chosen_warm && count > best)) {
      chosen = source;
      best = count;
    }
  }
  if (!chosen) return std::nullopt;
  DiscoveryBatch batch{next_id_++, *chosen, {}, now};
  for (auto& [author, known] : authors_) {
    if (batch.authors.size() >= max_authors_per_query) break;
    auto pending = pending_sources(known, now);
    if (std::find(pending.begin(), pending.end(), *chosen) == pending.end()) continue;
    if (round_due(known, now)) known.round = Round{};  // a new round starts with this batch
    batch.authors.push_back(author);
  }
  warm_.insert(*chosen);
  in_flight_[batch.id] = batch;
  return batch;
}

std::optional<DiscoveryBatch> DiscoveryPlan::on_pass(std::int64_t now) {
  warm_.clear();
  for (const auto& [id, batch] : in_flight_) warm_.insert(batch.source);
  return start(now, true);
}

void DiscoveryPlan::note_budget(const DiscoveryBatch& batch, bool ok, std::int64_t now) {
  const auto budget = config_.source_budget_seconds;
  if (ok || budget <= 0 || now < batch.started + budget) {
    if (ok) backoff_.erase(batch.source);
    return;
  }
  // The source spent its whole budget on one batch: a trickling or dead relay.
  ++budgets_spent_;
  auto& off = backoff_[batch.source];
  ++off.spent;
  std::int64_t delay = config_.retry_seconds;
  for (std::uint32_t i = 1; i < off.spent && delay < config_.refresh_seconds; ++i) delay *= 2;
  off.until = now + std::min(delay, config_.refresh_seconds);
}

std::optional<DiscoveryBatch> DiscoveryPlan::on_done(std::uint64_t batch, bool ok,
                                                     std::int64_t now) {
  auto found = in_flight_.find(batch);
  if (found == in_flight_.end()) return std::nullopt;
  const auto done = std::move(found->second);
  in_flight_.erase(found);
  note_budget(done, ok, now);
  for (const auto& author : done.authors) {
    auto it = authors_.find(author);
    if (it == authors_.end()) continue;
    auto& known = it->second;
    known.round.visited.insert(done.source);
    if (!ok) known.round.failed = true;
    if (ok && index_sources_.count(done.source) && !known.index_answered) {
      known.index_answered = true;
      ++index_answers_;
    }
    if (pending_sources(known, now).empty()) known.round.finished_at = now;
  }
  if (!ok) warm_.erase(done.source);
  return start(now, false);
}

std::size_t DiscoveryPlan::due_authors(std::int64_t now) const {
  std::size_t n = 0;
  for (const auto& [author, known] : authors_) n += pending_sources(known, now).empty() ? 0 : 1;
  return n;
}

bool DiscoveryPlan::index_answered(const nostr::Pubkey& author) const {
  auto it = authors_.find(author);
  return it != authors_.end() && it->second.index_answered;
}

std::map<std::string, std::size_t> DiscoveryPlan::pending_by_source(std::int64_t now) const {
  std::map<std::string, std::size_t> out;
  for (const auto& [author, known] : authors_)
    for (const auto& source : pending_sources(known, now)) ++out[source];
  return out;
}

}  // namespace graspd::sync
