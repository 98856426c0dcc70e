// A client session's REQ, CLOSE and COUNT: the subscription bounds, the stored answer sent in
// chunks paced by the transport's drain, EOSE, then the fan-out's live events.
#include "actors/relay/client_session_state.hpp"

namespace graspd::client_session_detail {

void SessionState::handle(nostr::ClientReq& msg) {
  count(ClientMessageType::req);
  const auto& limits = ctx->limits;
  if (!subscriptions.count(msg.subscription_id) &&
      subscriptions.size() >= limits.max_subscriptions) {
    return send(nostr::relay_closed(msg.subscription_id,
                                    "rate-limited: too many open subscriptions (max " +
                                        std::to_string(limits.max_subscriptions) + ")"));
  }
  const auto values = nostr::value_count(msg.filters);
  const auto replaced = held_values(msg.subscription_id);
  if (open_values - replaced + values > limits.max_subscription_values) {
    return send(nostr::relay_closed(msg.subscription_id,
                                    "rate-limited: this connection's subscriptions would hold " +
                                        std::to_string(open_values - replaced + values) +
                                        " filter values (max " +
                                        std::to_string(limits.max_subscription_values) + ")"));
  }
  for (auto& filter : msg.filters)
    filter.limit = std::min(filter.limit.value_or(limits.default_limit), limits.max_limit);
  auto gen = ++generation;
  subscriptions[msg.subscription_id] = gen;
  open_values = open_values - replaced + values;
  subscription_values[msg.subscription_id] = values;
  auto started = ctx->now();
  auto subid = msg.subscription_id;
  auto filters = std::make_shared<const nostr::Filters>(msg.filters);
  self->request(ctx->fanout, caf::infinite,
                FanoutSubscribe{connection_id, subid, std::move(msg.filters), sink})
      .then([this, gen, subid, filters, started](bool) {
        auto it = subscriptions.find(subid);
        if (it == subscriptions.end() || it->second != gen || closed) return;
        run_stored_query(subid, gen, *filters, started);
      });
}

void SessionState::forget_subscription(const std::string& subid) {
  subscriptions.erase(subid);
  open_values -= held_values(subid);
  subscription_values.erase(subid);
}

/// Selects the answer (references, in one read transaction, with the JSON of a first chunk when
/// nothing is queued before it) and queues what is left behind the answers still being sent.
void SessionState::run_stored_query(const std::string& subid, std::uint64_t gen,
                                    const nostr::Filters& filters, Clock::time_point started) {
  Answer answer{subid, gen, {}, 0, {}, started, nostr::relay_event_head(subid)};
  answer.by_id = std::all_of(filters.begin(), filters.end(),
                             [](const nostr::Filter& f) { return f.ids.has_value(); });
  const bool send_now = answers.empty() && !awaiting_drain;
  std::size_t budget = chunk_bytes;
  try {
    store::QueryOptions options;
    options.max_limit = ctx->limits.max_limit;
    answer.query = ctx->store->query_refs(filters, options,
                                          send_now ? sender(answer, budget) : store::AnswerSink{});
  } catch (const std::exception&) {
    return fail_query(subid);
  }
  answer.next = answer.query.loaded;
  answers.push_back(std::move(answer));
  if (!awaiting_drain) continue_answers(budget);
}

void SessionState::fail_query(const std::string& subid) {
  forget_subscription(subid);
  self->send(ctx->fanout, FanoutUnsubscribe{connection_id, subid});
  send(nostr::relay_closed(subid, "error: could not run the query"));
}

/// Sends stored events, up to `budget` bytes for all queued answers together, then waits for
/// the transport to drain. An answer whose REQ was replaced or CLOSEd meanwhile is dropped.
void SessionState::continue_answers(std::size_t budget) {
  while (!answers.empty()) {
    auto& answer = answers.front();
    auto it = subscriptions.find(answer.subid);
    if (closed || it == subscriptions.end() || it->second != answer.generation) {
      answers.pop_front();
      continue;
    }
    bool done = false;
    try {
      done = send_chunk(answer, budget);
    } catch (const std::exception&) {
      fail_query(answer.subid);
      answers.pop_front();
      continue;
    }
    if (!done) return wait_for_drain();
    finish_answer(answer);
    answers.pop_front();
  }
}

/// Sends one event of `answer` and charges it to `budget`; false once the budget is spent.
store::AnswerSink SessionState::sender(Answer& answer, std::size_t& budget) {
  return [this, &answer, &budget](const store::AnswerRef& ref, std::string_view json) {
    answer.delivered.push_back(ref.id);
    // In pieces, as the fan-out sends it: a compressing connection reuses the event's
    // compressed JSON (runtime/net/ws_deflate.hpp).
    outbox.send(
        Frame(answer.event_head, std::make_shared<const std::string>(json), "]", answer.by_id));
    budget -= std::min(budget, json.size());
    answer_unflushed += json.size();
    if (answer_unflushed >= kAnswerWriteBytes) {
      answer_unflushed = 0;
      outbox.flush();
    }
    return budget > 0;
  };
}

/// Loads and sends the answer's next events until `budget` is spent; true when the answer is
/// complete.
bool SessionState::send_chunk(Answer& answer, std::size_t& budget) {
  const auto& refs = answer.query.refs;
  if (budget == 0 || answer.next == refs.size()) return answer.next == refs.size();
  answer.next +=
      ctx->store->load_answer(std::span(refs).subspan(answer.next), sender(answer, budget));
  return answer.next == refs.size();
}

void SessionState::wait_for_drain() {
  awaiting_drain = true;
  answer_unflushed = 0;
  outbox.flush();
  sink->when_drained(chunk_bytes, [session = caf::actor_cast<client_session_actor>(self)] {
    caf::anon_send(session, atom::ws_drained::value);
  });
}

void SessionState::on_drained() {
  awaiting_drain = false;
  continue_answers(chunk_bytes);
}

void SessionState::finish_answer(Answer& answer) {
  // Observed before EOSE leaves, so a client reading metrics after EOSE sees it.
  if (auto* m = metrics())
    m->req_latency(std::chrono::duration<double>(ctx->now() - answer.started).count());
  send(nostr::relay_eose(answer.subid));
  // EOSE must be on its way before the fan-out may send live events to the sink directly.
  answer_unflushed = 0;
  outbox.flush();
  self->send(ctx->fanout, FanoutLive{connection_id, answer.subid, std::move(answer.delivered),
                                     answer.query.horizon});
}

void SessionState::handle(nostr::ClientClose& msg) {
  count(ClientMessageType::close);
  if (!subscriptions.count(msg.subscription_id)) return;
  forget_subscription(msg.subscription_id);
  self->send(ctx->fanout, FanoutUnsubscribe{connection_id, msg.subscription_id});
}

void SessionState::handle(nostr::ClientCount& msg) {
  count(ClientMessageType::count);
  try {
    auto counted = ctx->store->count_bounded(msg.filters, ctx->limits.max_count_examined);
    send(nostr::relay_count(msg.subscription_id, counted.count, counted.approximate));
  } catch (const std::exception&) {
    send(nostr::relay_closed(msg.subscription_id, "error: could not count"));
  }
}

}  // namespace graspd::client_session_detail
