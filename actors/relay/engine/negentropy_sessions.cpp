#include "actors/relay/engine/negentropy_sessions.hpp"

#include <algorithm>

#include "messages/nostr/relay_message.hpp"

namespace graspd {

NegentropyLimits NegentropyLimits::of(const runtime::RelayLimits& limits) {
  NegentropyLimits out;
  out.max_sync_events = limits.negentropy_max_sync_events;
  out.max_sessions = limits.negentropy_max_sessions;
  out.idle_timeout = limits.negentropy_idle_timeout;
  out.opens_per_second = limits.negentropy_opens_per_second;
  out.open_burst = limits.negentropy_open_burst;
  return out;
}

namespace neg = nostr::negentropy;

NegentropyBudget::Address& NegentropyBudget::entry(const std::string& address,
                                                   Clock::time_point now) {
  auto [it, fresh] = addresses_.try_emplace(address);
  if (fresh) {
    it->second.scan_tokens = limits_.scan_burst;
    it->second.refilled = now;
  }
  return it->second;
}

void NegentropyBudget::refill(Address& a, Clock::time_point now) const {
  if (now <= a.refilled) return;
  const std::chrono::duration<double> elapsed = now - a.refilled;
  a.scan_tokens = std::min(limits_.scan_burst,
                           a.scan_tokens + elapsed.count() * limits_.scan_records_per_second);
  a.refilled = now;
}

bool NegentropyBudget::idle(const Address& a) const {
  return a.held == 0 && a.scan_tokens >= limits_.scan_burst;
}

// An address that holds nothing and has its whole scan budget back is the same as a new one:
// forgotten, so the map is bounded by the addresses active in the last refill period.
void NegentropyBudget::sweep(Clock::time_point now) {
  if (addresses_.size() < sweep_at_) return;
  for (auto it = addresses_.begin(); it != addresses_.end();) {
    refill(it->second, now);
    it = idle(it->second) ? addresses_.erase(it) : std::next(it);
  }
  sweep_at_ = std::max<std::size_t>(1024, 2 * addresses_.size());
}

NegentropyBudget::Refusal NegentropyBudget::try_take(const std::string& address,
                                                     std::uint64_t items) {
  std::lock_guard lock(mutex_);
  if (held_ + items > limits_.max_records) return Refusal::process_full;
  auto& a = entry(address, Clock::time_point{});
  if (a.held + items > limits_.max_records_per_address) return Refusal::address_full;
  a.held += items;
  held_ += items;
  return Refusal::none;
}

void NegentropyBudget::give_back(const std::string& address, std::uint64_t items) {
  std::lock_guard lock(mutex_);
  held_ -= std::min(held_, items);
  auto it = addresses_.find(address);
  if (it == addresses_.end()) return;
  it->second.held -= std::min(it->second.held, items);
}

bool NegentropyBudget::may_scan(const std::string& address, Clock::time_point now) {
  if (limits_.scan_records_per_second <= 0) return true;
  std::lock_guard lock(mutex_);
  sweep(now);
  auto& a = entry(address, now);
  refill(a, now);
  return a.scan_tokens > 0;
}

void NegentropyBudget::charge_scan(const std::string& address, std::uint64_t records,
                                   Clock::time_point now) {
  if (limits_.scan_records_per_second <= 0) return;
  std::lock_guard lock(mutex_);
  auto& a = entry(address, now);
  refill(a, now);
  a.scan_tokens -= static_cast<double>(records);
}

std::uint64_t NegentropyBudget::held() const {
  std::lock_guard lock(mutex_);
  return held_;
}

std::uint64_t NegentropyBudget::held_by(const std::string& address) const {
  std::lock_guard lock(mutex_);
  auto it = addresses_.find(address);
  return it == addresses_.end() ? 0 : it->second.held;
}

std::size_t NegentropyBudget::addresses() const {
  std::lock_guard lock(mutex_);
  return addresses_.size();
}

const char* to_string(NegentropyError error) {
  switch (error) {
    case NegentropyError::unknown_subscription:
      return "unknown_subscription";
    case NegentropyError::too_many_results:
      return "too_many_results";
    case NegentropyError::too_many_sessions:
      return "too_many_sessions";
    case NegentropyError::busy:
      return "busy";
    case NegentropyError::address_busy:
      return "address_busy";
    case NegentropyError::rate_limited:
      return "rate_limited";
    case NegentropyError::scan_budget:
      return "scan_budget";
    case NegentropyError::scan_queue:
      return "scan_queue";
    case NegentropyError::idle:
      return "idle";
    case NegentropyError::malformed:
      return "malformed";
    case NegentropyError::query_failed:
      return "query_failed";
  }
  return "unknown";
}

NegentropySessions::NegentropySessions(NegentropyLimits limits,
                                       std::shared_ptr<NegentropyBudget> budget,
                                       std::string address)
    : limits_(limits),
      budget_(std::move(budget)),
      address_(std::move(address)),
      opens_(limits.opens_per_second, std::max(1.0, limits.open_burst)) {}

NegentropySessions::~NegentropySessions() {
  clear();
}

NegentropySessions::Answer NegentropySessions::refuse(const std::string& subscription_id,
                                                      NegentropyError error, std::string reason,
                                                      std::optional<std::uint64_t> limit) {
  return {nostr::relay_neg_err(subscription_id, reason, limit), error, 0};
}

// The checks before any record is read: what this connection and its address may still open.
std::optional<NegentropySessions::Answer> NegentropySessions::admit(
    const std::string& subscription_id, Clock::time_point now) {
  if (sessions_.size() + pending_.size() >= limits_.max_sessions)
    return refuse(subscription_id, NegentropyError::too_many_sessions,
                  "blocked: too many open negentropy subscriptions on this connection (max " +
                      std::to_string(limits_.max_sessions) + ")");
  if (limits_.opens_per_second > 0 && !opens_.try_take(now))
    return refuse(subscription_id, NegentropyError::rate_limited,
                  "rate-limited: too many NEG-OPEN on this connection, slow down");
  if (budget_ && !budget_->may_scan(address_, now))
    return refuse(subscription_id, NegentropyError::scan_budget,
                  "rate-limited: too many negentropy records scanned from your address, try "
                  "again later");
  return std::nullopt;
}

NegentropySessions::Answer NegentropySessions::open(nostr::ClientNegOpen& msg,
                                                    const RecordSource& records,
                                                    Clock::time_point now) {
  auto begun = begin_open(msg, now);
  if (auto* refused = std::get_if<Answer>(&begun)) return std::move(*refused);
  auto& pending = std::get<PendingScan>(begun);
  Scan scan;
  try {
    scan.items = records(pending.filter, pending.max);
  } catch (const std::exception&) {
    scan.failed = true;
  }
  return *finish_open(msg.subscription_id, pending.ticket, std::move(scan), now);
}

std::variant<NegentropySessions::Answer, NegentropySessions::PendingScan>
NegentropySessions::begin_open(const nostr::ClientNegOpen& msg, Clock::time_point now) {
  close(msg.subscription_id);  // NIP-77: reusing an id replaces the session
  if (auto refused = admit(msg.subscription_id, now)) return std::move(*refused);
  const auto ticket = next_ticket_++;
  // Copied, not moved: the message stays usable to the caller (a NEG-OPEN is small).
  pending_[msg.subscription_id] = Pending{ticket, msg.message};
  return PendingScan{ticket, msg.filter, limits_.max_sync_events};
}

std::optional<NegentropySessions::Answer> NegentropySessions::finish_open(
    const std::string& subscription_id, std::uint64_t ticket, Scan scan, Clock::time_point now) {
  // The source reads at most one record past the bound; a scan is charged even when its open
  // was replaced meanwhile: the records were read.
  if (budget_ && !scan.failed)
    budget_->charge_scan(address_, scan.items ? scan.items->size() : limits_.max_sync_events + 1,
                         now);
  auto it = pending_.find(subscription_id);
  if (it == pending_.end() || it->second.ticket != ticket) return std::nullopt;
  auto message = std::move(it->second.message);
  pending_.erase(it);
  return snapshot(subscription_id, message, std::move(scan), now);
}

std::optional<NegentropySessions::Answer> NegentropySessions::abandon_open(
    const std::string& subscription_id, std::uint64_t ticket, NegentropyError error,
    std::string reason) {
  auto it = pending_.find(subscription_id);
  if (it == pending_.end() || it->second.ticket != ticket) return std::nullopt;
  pending_.erase(it);
  return refuse(subscription_id, error, std::move(reason));
}

NegentropySessions::Answer NegentropySessions::snapshot(const std::string& subscription_id,
                                                        const std::string& message, Scan scan,
                                                        Clock::time_point now) {
  if (scan.failed)
    return refuse(subscription_id, NegentropyError::query_failed, "error: could not run the query");
  auto& items = scan.items;
  if (!items)
    return refuse(subscription_id, NegentropyError::too_many_results,
                  "blocked: too many query results", limits_.max_sync_events);
  switch (budget_ ? budget_->try_take(address_, items->size()) : NegentropyBudget::Refusal::none) {
    case NegentropyBudget::Refusal::none:
      break;
    case NegentropyBudget::Refusal::process_full:
      return refuse(subscription_id, NegentropyError::busy,
                    "rate-limited: too many negentropy records held, try again later");
    case NegentropyBudget::Refusal::address_full:
      return refuse(subscription_id, NegentropyError::address_busy,
                    "rate-limited: your address holds its share of negentropy records, close a "
                    "session or try again later");
  }
  const auto count = items->size();
  sessions_[subscription_id] =
      Session{std::make_unique<const neg::Storage>(std::move(*items)), now};
  auto answer = respond(subscription_id, message);
  if (!answer.error) answer.items = count;
  return answer;
}

NegentropySessions::Answer NegentropySessions::message(const nostr::ClientNegMsg& msg,
                                                       Clock::time_point now) {
  auto it = sessions_.find(msg.subscription_id);
  if (it == sessions_.end())
    return refuse(msg.subscription_id, NegentropyError::unknown_subscription,
                  "closed: unknown subscription handle");
  it->second.last_active = now;
  return respond(msg.subscription_id, msg.message);
}

NegentropySessions::Answer NegentropySessions::respond(const std::string& subscription_id,
                                                       std::string_view message) {
  const auto& storage = *sessions_.at(subscription_id).storage;
  auto engine = neg::Negentropy::create(storage, neg::server_frame_size_limit);
  auto reply =
      engine ? engine->respond(message) : neg::Result<std::string>::failure(engine.error());
  if (!reply) {
    auto detail = reply.error().detail;
    close(subscription_id);  // NIP-77: after NEG-ERR the subscription is closed
    return refuse(subscription_id, NegentropyError::malformed, "invalid: " + detail);
  }
  return {nostr::relay_neg_msg(subscription_id, neg::message_to_hex(*reply)), std::nullopt, 0};
}

std::vector<NegentropySessions::Answer> NegentropySessions::expire(Clock::time_point now) {
  std::vector<Answer> closed;
  if (limits_.idle_timeout <= Clock::duration::zero()) return closed;
  std::vector<std::string> idle;
  for (const auto& [id, session] : sessions_)
    if (now - session.last_active >= limits_.idle_timeout) idle.push_back(id);
  const auto seconds =
      std::chrono::duration_cast<std::chrono::seconds>(limits_.idle_timeout).count();
  for (const auto& id : idle) {
    close(id);
    closed.push_back(refuse(
        id, NegentropyError::idle,
        "closed: no NEG-MSG for " + std::to_string(seconds) + " seconds, the session was dropped"));
  }
  return closed;
}

std::optional<NegentropySessions::Clock::time_point> NegentropySessions::next_expiry() const {
  if (limits_.idle_timeout <= Clock::duration::zero() || sessions_.empty()) return std::nullopt;
  auto oldest = std::min_element(sessions_.begin(), sessions_.end(), [](auto& a, auto& b) {
    return a.second.last_active < b.second.last_active;
  });
  return oldest->second.last_active + limits_.idle_timeout;
}

void NegentropySessions::close(const std::string& subscription_id) {
  pending_.erase(subscription_id);  // its scan's answer will find no open waiting
  auto it = sessions_.find(subscription_id);
  if (it == sessions_.end()) return;
  if (budget_) budget_->give_back(address_, it->second.storage->size());
  sessions_.erase(it);
}

void NegentropySessions::clear() {
  pending_.clear();
  while (!sessions_.empty()) close(sessions_.begin()->first);
}

}  // namespace graspd
