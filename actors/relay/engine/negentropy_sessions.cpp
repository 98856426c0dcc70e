#include "actors/relay/engine/negentropy_sessions.hpp"

#include "messages/nostr/relay_message.hpp"

namespace graspd {

namespace neg = nostr::negentropy;

bool NegentropyBudget::try_take(std::uint64_t items) {
  auto held = held_.load();
  do {
    if (held + items > max_) return false;
  } while (!held_.compare_exchange_weak(held, held + items));
  return true;
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
    case NegentropyError::malformed:
      return "malformed";
    case NegentropyError::query_failed:
      return "query_failed";
  }
  return "unknown";
}

NegentropySessions::NegentropySessions(NegentropyLimits limits,
                                       std::shared_ptr<NegentropyBudget> budget)
    : limits_(limits), budget_(std::move(budget)) {}

NegentropySessions::~NegentropySessions() {
  clear();
}

NegentropySessions::Answer NegentropySessions::refuse(const std::string& subscription_id,
                                                      NegentropyError error, std::string reason,
                                                      std::optional<std::uint64_t> limit) {
  return {nostr::relay_neg_err(subscription_id, reason, limit), error, 0};
}

NegentropySessions::Answer NegentropySessions::open(nostr::ClientNegOpen& msg,
                                                    const RecordSource& records) {
  close(msg.subscription_id);  // NIP-77: reusing an id replaces the session
  if (sessions_.size() >= limits_.max_sessions)
    return refuse(msg.subscription_id, NegentropyError::too_many_sessions,
                  "blocked: too many open negentropy subscriptions on this connection (max " +
                      std::to_string(limits_.max_sessions) + ")");
  std::optional<std::vector<neg::Item>> items;
  try {
    items = records(msg.filter, limits_.max_sync_events);
  } catch (const std::exception&) {
    return refuse(msg.subscription_id, NegentropyError::query_failed,
                  "error: could not run the query");
  }
  if (!items)
    return refuse(msg.subscription_id, NegentropyError::too_many_results,
                  "blocked: too many query results", limits_.max_sync_events);
  if (budget_ && !budget_->try_take(items->size()))
    return refuse(msg.subscription_id, NegentropyError::busy,
                  "rate-limited: too many negentropy records held, try again later");
  const auto count = items->size();
  sessions_[msg.subscription_id] = std::make_unique<const neg::Storage>(std::move(*items));
  auto answer = respond(msg.subscription_id, msg.message);
  if (!answer.error) answer.items = count;
  return answer;
}

NegentropySessions::Answer NegentropySessions::message(const nostr::ClientNegMsg& msg) {
  if (!sessions_.count(msg.subscription_id))
    return refuse(msg.subscription_id, NegentropyError::unknown_subscription,
                  "closed: unknown subscription handle");
  return respond(msg.subscription_id, msg.message);
}

NegentropySessions::Answer NegentropySessions::respond(const std::string& subscription_id,
                                                       std::string_view message) {
  const auto& storage = *sessions_.at(subscription_id);
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

void NegentropySessions::close(const std::string& subscription_id) {
  auto it = sessions_.find(subscription_id);
  if (it == sessions_.end()) return;
  if (budget_) budget_->give_back(it->second->size());
  sessions_.erase(it);
}

void NegentropySessions::clear() {
  while (!sessions_.empty()) close(sessions_.begin()->first);
}

}  // namespace graspd
