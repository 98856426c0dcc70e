#include "actors/relay/client_session.hpp"

#include "messages/client_address.hpp"

#include <caf/actor_system.hpp>
#include <caf/send.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include <algorithm>
#include <chrono>
#include <deque>
#include <map>
#include <span>

#include "actors/relay/engine/arrival_order.hpp"
#include "actors/relay/engine/connection_keys.hpp"
#include "actors/relay/engine/outbox.hpp"
#include "actors/relay/negentropy_scanner.hpp"
#include "actors/relay/verifier_pool.hpp"
#include "messages/nostr/client_message.hpp"
#include "messages/nostr/event_frame.hpp"
#include "messages/nostr/nip42.hpp"
#include "messages/nostr/relay_message.hpp"
#include "messages/nostr/verify.hpp"
#include "runtime/net/ws_metrics.hpp"
#include "store/lmdb/event_store.hpp"

namespace graspd {

nostr::ParseLimits RelayContext::parse_limits() const {
  nostr::ParseLimits p;
  p.max_message_bytes = limits.max_message_bytes;
  p.max_event_bytes = limits.max_event_bytes;
  p.max_event_tags = limits.max_event_tags;
  p.max_content_length = limits.max_content_length;
  p.max_subid_length = limits.max_subid_length;
  p.max_filters = limits.max_filters;
  return p;
}

namespace {

using runtime::ClientMessageType;
using runtime::EventResult;
using Clock = std::chrono::steady_clock;

Frame frame(std::string text) {
  return std::make_shared<const std::string>(std::move(text));
}

EventResult result_of(WriteOutcome outcome) {
  switch (outcome) {
    case WriteOutcome::stored:
      return EventResult::stored;
    case WriteOutcome::duplicate:
      return EventResult::duplicate;
    case WriteOutcome::replaced_older:
      return EventResult::replaced;
    case WriteOutcome::ephemeral_not_stored:
      return EventResult::ephemeral;
    case WriteOutcome::rejected_older_version:
    case WriteOutcome::deleted:
    case WriteOutcome::expired:
    case WriteOutcome::dependency_missing:
      return EventResult::rejected;
    case WriteOutcome::held:
      return EventResult::held;
    case WriteOutcome::error:
      break;
  }
  return EventResult::error;
}

struct SessionState {
  static inline const char* name = "client_session";

  client_session_actor::pointer self = nullptr;
  std::shared_ptr<const RelayContext> ctx;
  nostr::ParseLimits parse_limits;
  std::uint64_t connection_id = 0;
  /// The client's address, as the acceptance actor's retry cache accounts it.
  std::string source;
  FrameSinkPtr sink;
  runtime::TokenBucket bucket{1, 1};
  /// Open subscriptions and the generation of their latest REQ, so a stale
  /// fan-out acknowledgement (REQ replaced or CLOSEd meanwhile) is ignored.
  std::map<std::string, std::uint64_t> subscriptions;
  /// Filter values each open subscription holds in the fan-out's index, and their sum: the
  /// connection's budget of subscription state.
  std::map<std::string, std::size_t> subscription_values;
  std::size_t open_values = 0;
  std::uint64_t generation = 0;
  bool closed = false;
  Outbox outbox;
  /// Inbound back-pressure: the transport stops reading while too much of the client's text is
  /// not reported consumed. A frame counts until handled; an EVENT until its check is done.
  std::size_t frame_bytes = 0;
  bool frame_kept = false;
  /// EVENTs from arrival to the end of their signature check: a client's events reach the
  /// acceptance hook and the store in the order it sent them, whatever order the checks end in.
  struct Checked {
    nostr::EventPtr event;
    std::size_t frame_bytes = 0;  // reported consumed once the check is done
    VerifierPool::Answer check;
    bool auth = false;  // an AUTH event (NIP-42), not an EVENT
  };
  ArrivalOrder<Checked> arrivals;
  /// At most `verifications_per_session` checks out on the shared verifiers: a flooding connection
  /// may not fill the mailboxes every other connection's checks go through.
  VerifierPool verifiers;
  /// NIP-77 reconciliations of this connection, one per NEG subscription id.
  std::unique_ptr<NegentropySessions> negentropy;
  bool negentropy_timer = false;  // a neg_idle is on its way
  /// Stored answers of REQs, oldest first. Each leaves in chunks of `chunk_bytes`: the next chunk
  /// is loaded only once the transport's queue is down to `chunk_bytes` again (ws_drained), so one
  /// REQ over a huge result holds at most about two chunks, never the whole answer.
  struct Answer {
    std::string subid;
    std::uint64_t generation = 0;
    store::QueryAnswer query;
    std::size_t next = 0;  // the first reference not loaded yet
    std::vector<nostr::EventId> delivered;
    Clock::time_point started;
    std::string event_head;  // `["EVENT","<subid>",`, built once for all its events
    /// Every filter names its events by id: a fetch of events the client lacks (a sync's NIP-77
    /// need list, references resolved), sent compressed even the first time (Frame::deflate_now).
    bool by_id = false;
  };
  std::deque<Answer> answers;
  std::size_t chunk_bytes = 0;
  bool awaiting_drain = false;
  /// Bytes of stored events handed to the outbox since its last flush. Past kAnswerWriteBytes the
  /// outbox is flushed, so the transport writes the first events while the next ones are loaded
  /// (a 500-event answer reached the transport whole, at its end).
  std::size_t answer_unflushed = 0;
  static constexpr std::size_t kAnswerWriteBytes = 64 * 1024;
  /// NIP-42: the challenge sent (if any) and the keys this connection proved.
  ConnectionKeys keys{nostr::make_challenge};

  runtime::RelayMetrics* metrics() const { return ctx->metrics.get(); }
  void count(ClientMessageType type) const {
    if (auto* m = metrics()) m->message(type);
  }
  void count(EventResult result) const {
    if (auto* m = metrics()) m->event_result(result);
  }
  void send(std::string text) { outbox.send(frame(std::move(text))); }
  void release_input(std::size_t bytes) { outbox.consumed(bytes); }
  void notice(std::string_view message) { send(nostr::relay_notice(message)); }

  void on_text(const std::string& text) {
    frame_bytes = text.size();
    frame_kept = false;
    auto parsed = nostr::parse_client_message(text, parse_limits);
    if (!parsed) {
      on_parse_error(parsed.error());
    } else {
      std::visit([this](auto& msg) { handle(msg); }, parsed.value());
    }
    if (!frame_kept) release_input(frame_bytes);
  }

  void on_parse_error(const nostr::ClientMessageError& error) {
    using Kind = nostr::ClientMessageError::Kind;
    switch (error.kind) {
      case Kind::invalid_event:
        if (error.verb == "AUTH") return refuse_unreadable_auth(error);
        count(ClientMessageType::event);
        count(EventResult::invalid);
        if (error.event_id) return send(nostr::relay_ok(*error.event_id, false, error.message));
        return notice(error.message);
      case Kind::invalid_filter:
        count(ClientMessageType::req);
        return send(nostr::relay_closed(error.subscription_id, error.message));
      case Kind::invalid_negentropy:
        count(error.verb == "NEG-OPEN" ? ClientMessageType::neg_open : ClientMessageType::neg_msg);
        // Through answer_negentropy, so closing an open session also moves the sessions gauge.
        return answer_negentropy([&] {
          negentropy->close(error.subscription_id);
          return NegentropySessions::Answer{
              nostr::relay_neg_err(error.subscription_id, error.message),
              NegentropyError::malformed, 0};
        });
      case Kind::malformed:
      case Kind::unknown_verb:
        break;
    }
    count(ClientMessageType::malformed);
    notice(error.message);
  }

  void handle(nostr::ClientEvent& msg) {
    count(ClientMessageType::event);
    if (auto* m = metrics()) m->event_received();
    auto event = std::make_shared<const nostr::Event>(std::move(msg.event));
    if (!bucket.try_take(ctx->now())) {
      count(EventResult::rate_limited);
      return send(nostr::relay_ok(event->id, false, "rate-limited: slow down, too many events"));
    }
    verify_in_order(std::move(event), false);
  }

  /// AUTH events take the EVENT path's token bucket and verifiers, and its arrival order: an
  /// EVENT sent right after an AUTH is judged with the AUTH's key already recorded.
  void handle(nostr::ClientAuth& msg) {
    count(ClientMessageType::auth);
    auto event = std::make_shared<const nostr::Event>(std::move(msg.event));
    if (!bucket.try_take(ctx->now()))
      return send(nostr::relay_ok(event->id, false, "rate-limited: slow down, too many events"));
    verify_in_order(std::move(event), true);
  }

  void refuse_unreadable_auth(const nostr::ClientMessageError& error) {
    count(ClientMessageType::auth);
    if (auto* m = metrics()) m->auth(runtime::AuthOutcome::bad_sig);
    if (error.event_id) return send(nostr::relay_ok(*error.event_id, false, error.message));
    notice(error.message);
  }

  void verify_in_order(nostr::EventPtr event, bool auth) {
    auto ticket = arrivals.reserve();
    frame_kept = true;
    verifiers.check(self, VerifyEvent{event},
                    [this, ticket, event, auth, bytes = frame_bytes](VerifierPool::Answer check) {
                      arrivals.complete(ticket, {event, bytes, check, auth});
                      arrivals.drain([this](Checked&& done) {
                        release_input(done.frame_bytes);
                        if (done.auth) return after_auth_check(*done.event, done.check);
                        after_check(done.event, done.check);
                      });
                    });
  }

  void after_auth_check(const nostr::Event& event, std::optional<nostr::EventCheck> check) {
    if (!check || *check != nostr::EventCheck::ok) {
      return refuse_auth(event, runtime::AuthOutcome::bad_sig,
                         check ? nostr::describe(*check) : "error: could not verify the event");
    }
    const nostr::AuthExpectation expected{keys.challenge(), ctx->service, unix_now()};
    switch (const auto result = nostr::check_auth_event(event, expected)) {
      case nostr::AuthCheck::ok:
        break;
      case nostr::AuthCheck::bad_challenge:
        return refuse_auth(event, runtime::AuthOutcome::bad_challenge,
                           nostr::describe(result, event, expected));
      case nostr::AuthCheck::bad_relay:
        return refuse_auth(event, runtime::AuthOutcome::bad_relay,
                           nostr::describe(result, event, expected));
      case nostr::AuthCheck::stale:
        return refuse_auth(event, runtime::AuthOutcome::stale,
                           nostr::describe(result, event, expected));
    }
    if (keys.add(event.pubkey) == ConnectionKeys::Added::too_many) {
      return refuse_auth(event, runtime::AuthOutcome::too_many,
                         "restricted: too many identities on this connection (max " +
                             std::to_string(ConnectionKeys::max_keys) + ")");
    }
    if (auto* m = metrics()) m->auth(runtime::AuthOutcome::ok);
    send(nostr::relay_ok(event.id, true, ""));
  }

  void refuse_auth(const nostr::Event& event, runtime::AuthOutcome outcome,
                   std::string_view message) {
    if (auto* m = metrics()) m->auth(outcome);
    send(nostr::relay_ok(event.id, false, message));
  }

  std::int64_t unix_now() const { return ctx->unix_now ? ctx->unix_now() : system_unix_now(); }

  /// NIP-70: a protected event is taken only from a connection authenticated as its author. Not
  /// authenticated: the challenge goes first (a client can only answer auth-required: with one).
  bool refuse_unless_author(const nostr::Event& event) {
    if (!nostr::is_protected(event) || keys.has(event.pubkey)) return false;
    count(EventResult::blocked);
    if (!keys.empty()) {
      if (auto* m = metrics()) m->protected_refused(runtime::ProtectedRefusal::restricted);
      send(nostr::relay_ok(event.id, false,
                           "restricted: this event may only be published by its author, and this "
                           "connection is authenticated as another key"));
      return true;
    }
    if (auto* m = metrics()) m->protected_refused(runtime::ProtectedRefusal::auth_required);
    if (auto challenge = keys.challenge_to_send()) send(nostr::relay_auth(*challenge));
    send(nostr::relay_ok(event.id, false,
                         "auth-required: this event may only be published by its author"));
    return true;
  }

  void after_check(const nostr::EventPtr& event, std::optional<nostr::EventCheck> check) {
    if (!check) {
      count(EventResult::error);
      return send(nostr::relay_ok(event->id, false, "error: could not verify the event"));
    }
    if (*check != nostr::EventCheck::ok) {
      count(EventResult::invalid);
      return send(nostr::relay_ok(event->id, false, nostr::describe(*check)));
    }
    // Before the acceptance policy, so a non-author learns nothing about what is stored.
    if (refuse_unless_author(*event)) return;
    if (!ctx->acceptance) return store(event);
    // The acceptance actor stores what it accepts and answers after the commit. A protected event
    // got here only from its authenticated author.
    self->request(ctx->acceptance, caf::infinite,
                  AcceptanceQuery{event, source, nostr::is_protected(*event)})
        .then(
            [this, event](const AcceptanceVerdict& verdict) {
              if (!verdict.accepted) {
                count(EventResult::blocked);
                return send(nostr::relay_ok(event->id, false, verdict.message));
              }
              if (verdict.outcome == WriteOutcome::ephemeral_not_stored) return broadcast(event);
              acknowledge(event->id, verdict.outcome, verdict.message);
            },
            [this, event](const caf::error&) {
              count(EventResult::error);
              send(nostr::relay_ok(event->id, false, "error: acceptance check failed"));
            });
  }

  /// Ephemeral events are never stored: broadcast and acknowledge at once.
  void broadcast(const nostr::EventPtr& event) {
    self->send(ctx->fanout, FanoutEphemeral{event, std::make_shared<const std::string>(
                                                       nostr::serialize_event(*event))});
    count(EventResult::ephemeral);
    send(nostr::relay_ok(event->id, true, ""));
  }

  /// `message` overrides the outcome's usual text (purgatory names what it waits for).
  void acknowledge(const nostr::EventId& id, WriteOutcome outcome, std::string_view message = {}) {
    count(result_of(outcome));
    send(nostr::relay_ok(id, store::is_accepted(outcome),
                         message.empty() ? store::ok_message(outcome) : message));
  }

  /// Without the acceptance policy (NGIT_ACCEPTANCE_POLICY=open) its credential rule still holds.
  void store(nostr::EventPtr event) {
    if (nostr::is_credential_kind(event->kind)) {
      count(EventResult::invalid);
      return send(nostr::relay_ok(event->id, false, nostr::credential_refusal(event->kind)));
    }
    if (nostr::is_ephemeral(event->kind)) return broadcast(event);
    self->request(ctx->writer, caf::infinite, StoreWrite{event, {}})
        .then([this, event](WriteOutcome outcome) { acknowledge(event->id, outcome); },
              [this, event](const caf::error&) {
                count(EventResult::error);
                send(nostr::relay_ok(event->id, false, "error: could not store the event"));
              });
  }

  void handle(nostr::ClientReq& msg) {
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

  std::size_t held_values(const std::string& subid) const {
    auto it = subscription_values.find(subid);
    return it == subscription_values.end() ? 0 : it->second;
  }
  void forget_subscription(const std::string& subid) {
    subscriptions.erase(subid);
    open_values -= held_values(subid);
    subscription_values.erase(subid);
  }

  /// Selects the answer (references, in one read transaction, with the JSON of a first chunk when
  /// nothing is queued before it) and queues what is left behind the answers still being sent.
  void run_stored_query(const std::string& subid, std::uint64_t gen, const nostr::Filters& filters,
                        Clock::time_point started) {
    Answer answer{subid, gen, {}, 0, {}, started, nostr::relay_event_head(subid)};
    answer.by_id = std::all_of(filters.begin(), filters.end(),
                               [](const nostr::Filter& f) { return f.ids.has_value(); });
    const bool send_now = answers.empty() && !awaiting_drain;
    std::size_t budget = chunk_bytes;
    try {
      store::QueryOptions options;
      options.max_limit = ctx->limits.max_limit;
      answer.query = ctx->store->query_refs(
          filters, options, send_now ? sender(answer, budget) : store::AnswerSink{});
    } catch (const std::exception&) {
      return fail_query(subid);
    }
    answer.next = answer.query.loaded;
    answers.push_back(std::move(answer));
    if (!awaiting_drain) continue_answers(budget);
  }

  void fail_query(const std::string& subid) {
    forget_subscription(subid);
    self->send(ctx->fanout, FanoutUnsubscribe{connection_id, subid});
    send(nostr::relay_closed(subid, "error: could not run the query"));
  }

  /// Sends stored events, up to `budget` bytes for all queued answers together, then waits for
  /// the transport to drain. An answer whose REQ was replaced or CLOSEd meanwhile is dropped.
  void continue_answers(std::size_t budget) {
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
  store::AnswerSink sender(Answer& answer, std::size_t& budget) {
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
  bool send_chunk(Answer& answer, std::size_t& budget) {
    const auto& refs = answer.query.refs;
    if (budget == 0 || answer.next == refs.size()) return answer.next == refs.size();
    answer.next +=
        ctx->store->load_answer(std::span(refs).subspan(answer.next), sender(answer, budget));
    return answer.next == refs.size();
  }

  void wait_for_drain() {
    awaiting_drain = true;
    answer_unflushed = 0;
    outbox.flush();
    sink->when_drained(chunk_bytes, [session = caf::actor_cast<client_session_actor>(self)] {
      caf::anon_send(session, atom::ws_drained::value);
    });
  }

  void on_drained() {
    awaiting_drain = false;
    continue_answers(chunk_bytes);
  }

  void finish_answer(Answer& answer) {
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

  void handle(nostr::ClientClose& msg) {
    count(ClientMessageType::close);
    if (!subscriptions.count(msg.subscription_id)) return;
    forget_subscription(msg.subscription_id);
    self->send(ctx->fanout, FanoutUnsubscribe{connection_id, msg.subscription_id});
  }

  void handle(nostr::ClientCount& msg) {
    count(ClientMessageType::count);
    try {
      auto counted = ctx->store->count_bounded(msg.filters, ctx->limits.max_count_examined);
      send(nostr::relay_count(msg.subscription_id, counted.count, counted.approximate));
    } catch (const std::exception&) {
      send(nostr::relay_closed(msg.subscription_id, "error: could not count"));
    }
  }

  void handle(nostr::ClientNegOpen& msg) {
    count(ClientMessageType::neg_open);
    if (!ctx->negentropy_scanner) {
      return answer_negentropy([&] {
        return negentropy->open(
            msg,
            [this](const nostr::Filter& filter, std::uint64_t max) {
              return ctx->store->negentropy_items(filter, max);
            },
            ctx->now());
      });
    }
    auto begun = negentropy->begin_open(msg, ctx->now());
    if (auto* refused = std::get_if<NegentropySessions::Answer>(&begun))
      return answer_negentropy([&] { return std::move(*refused); });
    scan_elsewhere(msg.subscription_id, std::get<NegentropySessions::PendingScan>(begun));
  }

  /// The NEG-OPEN's scan goes to the scanner's threads; its result comes back as
  /// NegentropyScanned, so no scheduler thread reads the records.
  void scan_elsewhere(const std::string& subid, NegentropySessions::PendingScan& pending) {
    auto session = caf::actor_cast<client_session_actor>(self);
    const auto ticket = pending.ticket;
    // Turns are taken per client address (an IPv6 client's by its /64).
    auto refusal = ctx->negentropy_scanner->submit(
        client_source_group(source), std::move(pending.filter), pending.max,
        [session, subid, ticket](NegentropyScan scan) {
          caf::anon_send(
              session,
              NegentropyScanned{subid, ticket, std::make_shared<NegentropyScan>(std::move(scan))});
        });
    if (refusal == NegentropyScanner::Refusal::none) return;
    const char* reason =
        refusal == NegentropyScanner::Refusal::address_full
            ? "rate-limited: too many negentropy scans waiting from your address, try again later"
            : "rate-limited: too many negentropy scans waiting, try again later";
    answer_negentropy([&] {
      return negentropy->abandon_open(subid, ticket, NegentropyError::scan_queue, reason)
          .value_or(NegentropySessions::Answer{});
    });
  }

  void on_scanned(NegentropyScanned& scanned) {
    if (closed) return;
    answer_negentropy([&] {
      return negentropy
          ->finish_open(scanned.subscription_id, scanned.ticket, std::move(*scanned.scan),
                        ctx->now())
          .value_or(NegentropySessions::Answer{});
    });
  }

  void handle(nostr::ClientNegMsg& msg) {
    count(ClientMessageType::neg_msg);
    answer_negentropy([&] { return negentropy->message(msg, ctx->now()); });
  }

  void handle(nostr::ClientNegClose& msg) {
    count(ClientMessageType::neg_close);
    answer_negentropy([&] {
      negentropy->close(msg.subscription_id);
      return NegentropySessions::Answer{};
    });
  }

  /// Runs one NEG-* step, sends its answer and keeps the metrics in step.
  template <class Step>
  void answer_negentropy(Step&& step) {
    const auto before = negentropy->open_sessions();
    auto answer = step();
    report_negentropy(answer, before);
    arm_negentropy_expiry();
  }

  void report_negentropy(NegentropySessions::Answer& answer, std::size_t before) {
    if (auto* m = metrics()) {
      m->negentropy_sessions(static_cast<long>(negentropy->open_sessions()) -
                             static_cast<long>(before));
      if (answer.error)
        m->negentropy_error(to_string(*answer.error));
      else if (!answer.frame.empty())
        m->negentropy_round(answer.items);
    }
    if (!answer.frame.empty()) send(std::move(answer.frame));
  }

  /// One timer at a time, due when the session idle longest passes the idle timeout; it re-arms
  /// itself while sessions are open.
  void arm_negentropy_expiry() {
    if (negentropy_timer || closed) return;
    auto due = negentropy->next_expiry();
    if (!due) return;
    negentropy_timer = true;
    auto delay = std::max(Clock::duration::zero(), *due - ctx->now());
    self->delayed_send(self, delay, atom::neg_idle::value);
  }

  void on_negentropy_timer() {
    negentropy_timer = false;
    if (closed) return;
    auto before = negentropy->open_sessions();
    for (auto& answer : negentropy->expire(ctx->now())) {
      report_negentropy(answer, before);
      before = negentropy->open_sessions();
    }
    arm_negentropy_expiry();
  }

  void on_closed() {
    closed = true;
    if (auto* m = metrics())
      m->negentropy_sessions(-static_cast<long>(negentropy->open_sessions()));
    negentropy->clear();
    subscriptions.clear();
    subscription_values.clear();
    answers.clear();
    open_values = 0;
    self->send(ctx->fanout, FanoutDisconnect{connection_id});
  }
};

client_session_actor::behavior_type client_session(
    client_session_actor::stateful_pointer<SessionState> self,
    std::shared_ptr<const RelayContext> ctx, std::uint64_t connection_id, FrameSinkPtr sink,
    std::string source) {
  auto& st = self->state;
  st.source = std::move(source);
  st.self = self;
  st.parse_limits = ctx->parse_limits();
  st.bucket = runtime::TokenBucket(ctx->limits.events_per_second, ctx->limits.event_burst);
  st.verifiers = VerifierPool(ctx->verifiers, ctx->limits.verifications_per_session);
  // The budget's per-address share counts an IPv6 client by its /64, as every per-address bound.
  st.negentropy = std::make_unique<NegentropySessions>(
      NegentropyLimits::of(ctx->limits), ctx->negentropy_budget, client_source_group(st.source));
  if (ctx->make_challenge) st.keys = ConnectionKeys(ctx->make_challenge);
  st.ctx = std::move(ctx);
  st.connection_id = connection_id;
  st.sink = std::move(sink);
  // At most a quarter of the outbound bound, so a chunk, the one before it still draining and the
  // live events beside them stay well inside it for a client that reads.
  st.chunk_bytes = std::max<std::size_t>(
      1, std::min(st.ctx->limits.answer_chunk_bytes, st.ctx->limits.max_outbound_bytes / 4));
  // Queued behind the messages already waiting (e.g. the other replies of one commit).
  st.outbox = Outbox(st.sink, [self] { self->send(self, atom::ws_flush::value); });
  return {
      [self](atom::ws_text, const std::string& text) { self->state.on_text(text); },
      [self](atom::ws_binary) {
        self->state.count(ClientMessageType::binary);
        self->state.notice("invalid: binary frames are not supported, send JSON text");
      },
      [self](atom::ws_oversize) {
        self->state.count(ClientMessageType::oversize);
        self->state.notice("invalid: message too large (max " +
                           std::to_string(self->state.ctx->limits.max_message_bytes) + " bytes)");
      },
      [self](atom::ws_flush) { self->state.outbox.flush(); },
      [self](NegentropyScanned& scanned) { self->state.on_scanned(scanned); },
      [self](atom::ws_drained) { self->state.on_drained(); },
      [self](atom::neg_idle) { self->state.on_negentropy_timer(); },
      [self](atom::ws_closed) {
        self->state.on_closed();
        // Pending store replies still arrive (their OK is dropped by the
        // closed transport); quitting now is fine, the writer stores anyway.
        self->quit();
      },
  };
}

}  // namespace

client_session_actor spawn_client_session(caf::actor_system& system,
                                          std::shared_ptr<const RelayContext> context,
                                          std::uint64_t connection_id, FrameSinkPtr sink,
                                          std::string source) {
  return system.spawn(client_session, std::move(context), connection_id, std::move(sink),
                      std::move(source));
}

}  // namespace graspd
