// Historic sync by NIP-77 negentropy (docs/spec/nip77-negentropy.md §8), owned by one
// RelayConnection, for peers that speak it. A subscription keeps one live REQ
// (`limit: 0`: no stored events, then live ones) and reconciles its history
// filter by filter against our own store, one NEG session at a time; the ids
// only the peer holds are fetched with `REQ {"ids":[...]}` in bounded batches
// within the connection's history REQ slots (HistorySlots). A filter of which
// we hold nothing gains nothing from a NEG round: it is paged by REQ (a
// HistoryPager of this class's own, its first page on the live REQ), and a
// second the peer's `limit` cap hid part of is reconciled afterwards by a NEG
// session of that second alone. A peer that does not answer NIP-77 (NEG-ERR, an error
// NOTICE before its first NEG-MSG, CLOSED, or silence) hands the subscription
// back for REQ pagination (HistoryPager). Pure: it returns the frames to send.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "actors/sync/engine/history_pager.hpp"
#include "actors/sync/engine/history_slots.hpp"
#include "messages/nostr/event.hpp"
#include "messages/nostr/filter.hpp"
#include "messages/nostr/negentropy_client.hpp"

namespace graspd::sync {

/// Room a NEG-OPEN frame keeps beside its filter: the first message (at most 997 bytes, twice
/// that in hex) and the envelope.
inline constexpr std::size_t window_frame_headroom = 4096;

struct NegentropyLimits {
  /// Ids per fetch REQ: strfry caps each filter's answer at 500 by default.
  /// A peer that delivers fewer, but some, of a batch is taken to cap its
  /// answers there: the rest are asked again in batches of that size.
  std::size_t ids_per_request = 500;
  /// Most records reconciled per window on our side; a larger local set is
  /// synced by REQ pagination instead.
  std::size_t max_records = 1'000'000;
  /// Most ids queued for fetching per subscription; past it the rest waits
  /// for the next fresh sync instead of growing memory.
  std::size_t max_needed = 1'000'000;
  /// Ticks a NEG-OPEN may wait for its first answer before the peer is
  /// taken for one that ignores NIP-77.
  std::size_t probe_ticks = 30;
  /// NEG sessions open at once on the connection; the other subscriptions
  /// wait their turn. Below graspd's server cap (NGIT_NEGENTROPY_MAX_SESSIONS,
  /// default 4) and far below strfry's.
  std::size_t max_sessions = 4;
  /// Ticks fetching pauses after the peer closed a fetch for a rate limit.
  std::size_t rate_limit_ticks = 5;
  /// NEG-OPENs of one window the peer may refuse with `rate-limited:` in a row before that
  /// window is paged by REQ instead: the pacing below normally keeps under the peer's rate.
  std::size_t max_open_refusals = 20;
  /// A subscription's filters of one shape are reconciled as one window (reconcile_windows) up
  /// to these many values (below the 5,000 a list graspd parses, ParseLimits) and bytes of filter
  /// JSON; the bytes follow the peer's max_message_length (cap_windows), less room for the
  /// NEG-OPEN's first message (strfry's 131,072 bytes hold ~1,900 event ids).
  std::size_t max_window_values = 4000;
  std::size_t max_window_bytes = 64 * 1024 - window_frame_headroom;
  /// A batch the peer closes this many times in a row is given up (fetched again at the next
  /// fresh sync) rather than asked for forever.
  std::size_t max_fetch_attempts = 3;
  std::size_t frame_size_limit = nostr::negentropy::client_frame_size_limit;
  /// Peer messages one session takes before the peer is taken for a looping one and the window
  /// falls back to REQ paging (NGIT_NEGENTROPY_MAX_ROUNDS).
  std::size_t max_rounds = nostr::negentropy::default_max_rounds;
};

/// Our records matching a filter, at most `max`; nullopt when there are more.
using LocalRecords = std::function<std::optional<std::vector<nostr::negentropy::Item>>(
    const nostr::Filter&, std::size_t max)>;

class NegentropyHistory {
 public:
  /// Fetch REQs and the pages of the filters we hold nothing of take `slots` (the connection's
  /// history REQ slots, shared with its HistoryPager): the live REQs hold the peer's subscription
  /// cap less those, so one fetch per subscription would overrun it. Others wait in order.
  NegentropyHistory(NegentropyLimits limits, LocalRecords local,
                    std::shared_ptr<HistorySlots> slots = std::make_shared<HistorySlots>());
  NegentropyHistory() : NegentropyHistory(NegentropyLimits{}, nullptr) {}

  struct Step {
    std::vector<std::string> frames;
    /// Set when the subscription's history is complete.
    std::optional<std::string> completed;
    /// Subscriptions to sync by REQ pagination instead (id, filters as opened).
    std::vector<std::pair<std::string, nostr::Filters>> fallback;
    /// The peer showed it does not speak NIP-77 / that it does.
    bool unsupported = false;
    bool supported = false;
    std::uint64_t rounds = 0;
    std::uint64_t ids_needed = 0;
    std::uint64_t fetches = 0;
    /// Page REQs sent for the filters we hold nothing of.
    std::uint64_t pages = 0;
  };

  /// Opens `id` (live REQ + the first NEG session); `now` bounds the time
  /// windows split when the peer refuses a set as too large.
  Step open(const std::string& id, nostr::Filters filters, std::int64_t now);
  /// Frames closing `id`, its NEG session and its fetch in flight (and the
  /// session of a subscription that was waiting for one).
  Step close(const std::string& id);

  std::optional<std::string> owner_of(const std::string& wire_id) const;
  /// True when `ev` matches the subscription's filters and, on a fetch, was asked for by id.
  bool asked_for(const std::string& wire_id, const nostr::Event& ev) const;

  /// An event received on `wire_id` that asked_for accepted and that checked out.
  void on_event(const std::string& wire_id, const nostr::Event& ev);
  Step on_neg_msg(const std::string& wire_id, const std::string& hex);
  Step on_neg_err(const std::string& wire_id, const std::string& reason);
  Step on_eose(const std::string& wire_id);
  /// The peer closed `wire_id`: a closed live REQ forgets the subscription
  /// (`forgotten` is set), a closed NEG session falls back to REQ, a closed
  /// fetch puts its unanswered ids back in front (after a pause when
  /// `rate_limited`), up to max_fetch_attempts closes in a row.
  Step on_closed(const std::string& wire_id, bool& forgotten, bool rate_limited = false);
  /// A NOTICE: while a NEG-OPEN waits for its first answer, an error text
  /// means the peer does not speak NIP-77 (strfry sync's rule).
  Step on_notice(const std::string& message);
  /// The connection's periodic tick: NEG-OPENs unanswered for too long fall back.
  Step on_tick();
  /// The slot pool granted `user` (a fetch of this class or a page of its pager) a slot for `id`.
  Step resume(HistorySlots::User user, const std::string& id);
  /// True when `user` is one of this class's users of the slot pool.
  bool holds_user(HistorySlots::User user) const {
    return user == fetch_user_ || user == pager_.slot_user();
  }

  /// The peer's advertised limitation.max_limit: fetch batches stay within it, and a page of
  /// that many events on one second is taken for one the cap cut short.
  void cap_requests(std::size_t max_limit) {
    limits_.ids_per_request =
        std::min(limits_.ids_per_request, std::max<std::size_t>(max_limit, 1));
    pager_.report_capped_seconds(limits_.ids_per_request, /*advertised=*/true);
  }

  /// The peer's advertised limitation.max_message_length: NEG-OPEN frames stay within it.
  void cap_windows(std::size_t max_message_length) {
    const auto room = max_message_length > 2 * window_frame_headroom
                          ? max_message_length - window_frame_headroom
                          : max_message_length / 2;
    limits_.max_window_bytes = std::min(limits_.max_window_bytes, room);
  }

  std::size_t open_subscriptions() const { return subs_.size(); }
  /// Subscriptions whose NEG session waits for its first answer.
  std::size_t probing() const;

 private:
  struct State {
    nostr::Filters asked;
    /// Windows still to reconcile (a filter, or a time slice of one).
    std::deque<nostr::Filter> windows;
    std::optional<nostr::negentropy::ClientSession> session;
    std::uint32_t session_seq = 0;
    /// Waiting for a session slot (in waiting_).
    bool waiting = false;
    bool answered = false;
    std::size_t waited_ticks = 0;
    /// `rate-limited:` refusals of the current window's NEG-OPEN since one was answered.
    std::size_t open_refusals = 0;
    /// The session whose NEG-OPEN the peer refused for a rate, opened again as it is: our side
    /// of a window is read from the store once, however often the peer asks us to wait (a
    /// re-read of a 4,000-value window costs tens of milliseconds). Events stored meanwhile
    /// are at worst asked for again, and arrive as known.
    std::optional<nostr::negentropy::ClientSession> refused;
    std::deque<nostr::EventId> needs;
    std::set<nostr::EventId> queued;
    std::set<nostr::EventId> fetching;
    std::set<nostr::EventId> delivered;
    std::size_t batch_size = 0;
    std::uint32_t fetch_seq = 0;
    bool fetch_open = false;
    /// Waiting for a fetch slot (in the slot pool, or in paused_ while fetching pauses).
    bool fetch_waiting = false;
    /// Some filters are paged by REQ (pager_): we held nothing of them.
    bool paging = false;
    /// Closes of this subscription's fetches since one last completed.
    std::size_t fetch_closes = 0;
    std::int64_t now = 0;
  };

  Step next_session(const std::string& id, State& state);
  /// Fetches the next batch of `id` now, or queues it until a fetch slot is free.
  void next_fetch(const std::string& id, State& state, Step& step);
  void send_fetch(const std::string& id, State& state, Step& step);
  /// A slot came to `id`'s fetch: sent, or the slot goes back when there is nothing to fetch.
  void resume_fetch(const std::string& id, Step& step);
  /// Fetches paused by a rate limit queue for slots again, then this class's waiters first in
  /// line in the slot pool get the free slots.
  void resume_fetches(Step& step);
  /// Frames and slots of `id`'s fetch and pages: closed, given back, no longer waiting.
  void drop_requests(const std::string& id, State& state, Step& step);
  /// Takes in what the pager did for `id`: frames, pages, capped seconds, the end of paging.
  void absorb_pages(const std::string& id, HistoryPager::Step&& paged, Step& step);
  /// Our records matching `filter`, at most `max` (nullopt past it); none without a lookup.
  std::optional<std::vector<nostr::negentropy::Item>> our_records(const nostr::Filter& filter,
                                                                  std::size_t max) const;
  /// Hands a slot granted to `user` for `id` to the engine that asked (a fetch or a page).
  void resume_into(HistorySlots::User user, const std::string& id, Step& step);
  /// The filters of `filters` we hold nothing of (paged), the rest left as windows.
  nostr::Filters take_empty(nostr::Filters& filters) const;
  void finish_if_done(const std::string& id, State& state, Step& step);
  Step fall_back(const std::string& id, bool unsupported);
  /// Gives free session slots to the subscriptions waiting for one, in arrival order.
  Step resume_waiting();
  std::size_t open_sessions() const;
  Step split_or_fall_back(const std::string& id, State& state);
  /// The peer refused a NEG-OPEN for a rate limit: pace the opens and ask again later.
  Step retry_after_rate_limit(const std::string& id, State& state);
  /// True when another NEG-OPEN may go out this tick.
  bool may_open_session() const;
  std::string session_id(const std::string& id, const State& state) const;
  std::string fetch_id(const std::string& id, const State& state) const;
  void queue_needs(State& state, const std::vector<nostr::EventId>& need, Step& step);
  void requeue_capped(State& state);

  NegentropyLimits limits_;
  LocalRecords local_;
  std::shared_ptr<HistorySlots> slots_;
  HistorySlots::User fetch_user_;
  /// Pages the filters we hold nothing of, in the same slots.
  HistoryPager pager_;
  std::map<std::string, State> subs_;
  std::deque<std::string> waiting_;
  /// Subscriptions whose next fetch waits for a rate-limit pause to end.
  std::deque<std::string> paused_;
  /// Ticks left before fetching resumes after a rate-limited close.
  std::size_t fetch_pause_ticks_ = 0;
  /// NEG-OPENs allowed per tick once the peer refused one for a rate limit (unset: no pacing).
  /// Halved at every refusal, one more after every tick without one: the client settles just
  /// under the peer's rate (graspd serves 2 a second by default, NGIT_NEGENTROPY_OPEN_RATE).
  std::optional<std::size_t> opens_per_tick_;
  std::size_t opened_this_tick_ = 0;
  bool refused_this_tick_ = false;
  /// True once the peer answered a NEG-OPEN on this connection.
  bool peer_speaks_nip77_ = false;
  /// True once the peer showed it does not speak NIP-77: waiting subscriptions go to REQ.
  bool peer_refused_ = false;
};

}  // namespace graspd::sync
