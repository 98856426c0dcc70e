// The state of one client session and the steps it takes, shared by the files of the
// client_session actor (actors/relay/client_session.hpp): the actor and the frame dispatch in
// client_session.cpp, EVENT and AUTH in client_session_events.cpp, REQ, CLOSE and COUNT in
// client_session_queries.cpp, NEG-* in client_session_negentropy.cpp. Nothing else includes it.
#pragma once

#include "actors/relay/relay_context.hpp"

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

namespace graspd::client_session_detail {

using runtime::ClientMessageType;
using runtime::EventResult;
using Clock = std::chrono::steady_clock;

inline Frame frame(std::string text) {
  return std::make_shared<const std::string>(std::move(text));
}

/// The EVENT result a store outcome counts as (graspd_events_total).
EventResult result_of(WriteOutcome outcome);

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

  // client_session.cpp: one frame, parsed and dispatched; the end of the connection.
  void on_text(const std::string& text);
  void on_parse_error(const nostr::ClientMessageError& error);
  void on_closed();

  // client_session_events.cpp: EVENT and AUTH.
  void handle(nostr::ClientEvent& msg);

  /// AUTH events take the EVENT path's token bucket and verifiers, and its arrival order: an
  /// EVENT sent right after an AUTH is judged with the AUTH's key already recorded.
  void handle(nostr::ClientAuth& msg);
  void refuse_unreadable_auth(const nostr::ClientMessageError& error);
  void verify_in_order(nostr::EventPtr event, bool auth);
  void after_auth_check(const nostr::Event& event, std::optional<nostr::EventCheck> check);
  void refuse_auth(const nostr::Event& event, runtime::AuthOutcome outcome,
                   std::string_view message);
  std::int64_t unix_now() const { return ctx->unix_now ? ctx->unix_now() : system_unix_now(); }

  /// NIP-70: a protected event is taken only from a connection authenticated as its author. Not
  /// authenticated: the challenge goes first (a client can only answer auth-required: with one).
  bool refuse_unless_author(const nostr::Event& event);
  void after_check(const nostr::EventPtr& event, std::optional<nostr::EventCheck> check);

  /// Ephemeral events are never stored: broadcast and acknowledge at once.
  void broadcast(const nostr::EventPtr& event);

  /// `message` overrides the outcome's usual text (purgatory names what it waits for).
  void acknowledge(const nostr::EventId& id, WriteOutcome outcome, std::string_view message = {});

  /// Without the acceptance policy (NGIT_ACCEPTANCE_POLICY=open) its credential rule still holds.
  void store(nostr::EventPtr event);

  // client_session_queries.cpp: REQ, CLOSE, COUNT and the stored answers.
  void handle(nostr::ClientReq& msg);
  std::size_t held_values(const std::string& subid) const {
    auto it = subscription_values.find(subid);
    return it == subscription_values.end() ? 0 : it->second;
  }
  void forget_subscription(const std::string& subid);

  /// Selects the answer (references, in one read transaction, with the JSON of a first chunk when
  /// nothing is queued before it) and queues what is left behind the answers still being sent.
  void run_stored_query(const std::string& subid, std::uint64_t gen, const nostr::Filters& filters,
                        Clock::time_point started);
  void fail_query(const std::string& subid);

  /// Sends stored events, up to `budget` bytes for all queued answers together, then waits for
  /// the transport to drain. An answer whose REQ was replaced or CLOSEd meanwhile is dropped.
  void continue_answers(std::size_t budget);

  /// Sends one event of `answer` and charges it to `budget`; false once the budget is spent.
  store::AnswerSink sender(Answer& answer, std::size_t& budget);

  /// Loads and sends the answer's next events until `budget` is spent; true when the answer is
  /// complete.
  bool send_chunk(Answer& answer, std::size_t& budget);
  void wait_for_drain();
  void on_drained();
  void finish_answer(Answer& answer);
  void handle(nostr::ClientClose& msg);
  void handle(nostr::ClientCount& msg);

  // client_session_negentropy.cpp: NEG-OPEN, NEG-MSG, NEG-CLOSE and their expiry.
  void handle(nostr::ClientNegOpen& msg);

  /// The NEG-OPEN's scan goes to the scanner's threads; its result comes back as
  /// NegentropyScanned, so no scheduler thread reads the records.
  void scan_elsewhere(const std::string& subid, NegentropySessions::PendingScan& pending);
  void on_scanned(NegentropyScanned& scanned);
  void handle(nostr::ClientNegMsg& msg);
  void handle(nostr::ClientNegClose& msg);

  /// Runs one NEG-* step, sends its answer and keeps the metrics in step.
  template <class Step>
  void answer_negentropy(Step&& step) {
    const auto before = negentropy->open_sessions();
    auto answer = step();
    report_negentropy(answer, before);
    arm_negentropy_expiry();
  }

  void report_negentropy(NegentropySessions::Answer& answer, std::size_t before);

  /// One timer at a time, due when the session idle longest passes the idle timeout; it re-arms
  /// itself while sessions are open.
  void arm_negentropy_expiry();
  void on_negentropy_timer();
};

}  // namespace graspd::client_session_detail
