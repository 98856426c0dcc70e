#include "actors/sync/engine/negentropy_history.hpp"

#include <algorithm>
#include <array>
#include <utility>

#include "actors/sync/engine/sync_filters.hpp"

namespace graspd::sync {

namespace {

// Wire ids share the subscription id plus a suffix, in HistoryPager's form: `n` and a number for a
// NEG session, `f` and a number for a fetch, a bare number for a page.
constexpr char wire_separator = HistoryPager::wire_separator;

void append(NegentropyHistory::Step& into, NegentropyHistory::Step&& from) {
  into.frames.insert(into.frames.end(), std::make_move_iterator(from.frames.begin()),
                     std::make_move_iterator(from.frames.end()));
  if (from.completed) into.completed = std::move(from.completed);
  for (auto& f : from.fallback) into.fallback.push_back(std::move(f));
  into.unsupported = into.unsupported || from.unsupported;
  into.supported = into.supported || from.supported;
  into.rounds += from.rounds;
  into.ids_needed += from.ids_needed;
  into.fetches += from.fetches;
  into.pages += from.pages;
}

/// The live half of a subscription: no stored events (NIP-01 `limit: 0`), then every new one.
nostr::Filters live_only(nostr::Filters filters) {
  for (auto& f : filters) f.limit = 0;
  return filters;
}

}  // namespace

std::string NegentropyHistory::session_id(const std::string& id, const State& state) const {
  return id + wire_separator + 'n' + std::to_string(state.session_seq);
}

std::string NegentropyHistory::fetch_id(const std::string& id, const State& state) const {
  return id + wire_separator + 'f' + std::to_string(state.fetch_seq);
}

NegentropyHistory::NegentropyHistory(NegentropyLimits limits, LocalRecords local,
                                     std::shared_ptr<HistorySlots> slots)
    : limits_(limits),
      local_(std::move(local)),
      slots_(std::move(slots)),
      fetch_user_(slots_->join()),
      pager_(slots_) {
  pager_.report_capped_seconds(std::max<std::size_t>(limits_.ids_per_request, 1));
}

std::optional<std::vector<nostr::negentropy::Item>> NegentropyHistory::our_records(
    const nostr::Filter& filter, std::size_t max) const {
  if (!local_) return std::vector<nostr::negentropy::Item>{};
  return local_(filter, max);
}

nostr::Filters NegentropyHistory::take_empty(nostr::Filters& filters) const {
  // At most one record read per filter: nullopt when we hold any.
  auto held_nothing = [&](const nostr::Filter& f) {
    auto ours = our_records(f, 0);
    return ours && ours->empty();
  };
  nostr::Filters empty;
  nostr::Filters rest;
  for (auto& f : filters) (held_nothing(f) ? empty : rest).push_back(std::move(f));
  filters = std::move(rest);
  return empty;
}

NegentropyHistory::Step NegentropyHistory::open(const std::string& id, nostr::Filters filters,
                                                std::int64_t now) {
  Step step;
  if (subs_.count(id)) step = close(id);
  State state;
  state.asked = filters;
  // What we hold nothing of is paged: its history comes on the live REQ and pages after it, as
  // without NIP-77, and a NEG round would only list the peer's ids before the same download.
  auto paged = take_empty(filters);
  auto live = live_only(filters);
  for (auto& window :
       reconcile_windows(filters, limits_.max_window_values, limits_.max_window_bytes))
    state.windows.push_back(std::move(window));
  state.now = now;
  state.batch_size = std::max<std::size_t>(limits_.ids_per_request, 1);
  state.paging = !paged.empty();
  live.insert(live.begin(), paged.begin(), paged.end());
  step.frames.push_back(nostr::client_req(id, std::move(live)));
  if (state.paging) pager_.adopt(id, std::move(paged));
  auto& opened = subs_[id] = std::move(state);
  append(step, next_session(id, opened));
  return step;
}

void NegentropyHistory::drop_requests(const std::string& id, State& state, Step& step) {
  if (state.fetch_open) {
    step.frames.push_back(nostr::client_close(fetch_id(id, state)));
    state.fetch_open = false;
    slots_->give_back();
  }
  if (state.fetch_waiting) {
    slots_->forget(fetch_user_, id);
    std::erase(paused_, id);
    state.fetch_waiting = false;
  }
  for (auto& frame : pager_.close_history(id)) step.frames.push_back(std::move(frame));
  state.paging = false;
}

NegentropyHistory::Step NegentropyHistory::close(const std::string& id) {
  Step step;
  auto it = subs_.find(id);
  if (it == subs_.end()) return step;
  if (it->second.session) step.frames.push_back(it->second.session->close_frame());
  drop_requests(id, it->second, step);
  step.frames.push_back(nostr::client_close(id));
  subs_.erase(it);
  append(step, resume_waiting());
  return step;
}

void NegentropyHistory::absorb_pages(const std::string& id, HistoryPager::Step&& paged,
                                     Step& step) {
  for (auto& frame : paged.frames) step.frames.push_back(std::move(frame));
  if (paged.page_requested) ++step.pages;
  auto it = subs_.find(id);
  if (it == subs_.end()) return;
  auto& state = it->second;
  // A second the cap cut short: NIP-77 names what REQ could not reach, after the pages.
  for (auto& second : paged.capped) state.windows.push_back(std::move(second));
  if (paged.completed) state.paging = false;
  if (!paged.capped.empty() && !state.session && !state.waiting)
    append(step, next_session(id, state));
  else if (paged.completed)
    finish_if_done(id, state, step);
}

std::size_t NegentropyHistory::open_sessions() const {
  return static_cast<std::size_t>(std::count_if(
      subs_.begin(), subs_.end(), [](const auto& s) { return s.second.session.has_value(); }));
}

bool NegentropyHistory::may_open_session() const {
  if (open_sessions() >= std::max<std::size_t>(limits_.max_sessions, 1)) return false;
  return !opens_per_tick_ || opened_this_tick_ < *opens_per_tick_;
}

NegentropyHistory::Step NegentropyHistory::resume_waiting() {
  Step step;
  while (!waiting_.empty() && may_open_session()) {
    auto id = std::move(waiting_.front());
    waiting_.pop_front();
    auto it = subs_.find(id);
    if (it == subs_.end() || !it->second.waiting) continue;
    it->second.waiting = false;
    append(step, peer_refused_ ? fall_back(id, false) : next_session(id, it->second));
  }
  resume_fetches(step);
  return step;
}

std::optional<std::string> NegentropyHistory::owner_of(const std::string& wire_id) const {
  auto id = wire_id.substr(0, wire_id.find(wire_separator));
  if (!subs_.count(id)) return std::nullopt;
  return id;
}

bool NegentropyHistory::asked_for(const std::string& wire_id, const nostr::Event& ev) const {
  auto owner = owner_of(wire_id);
  if (!owner) return false;
  // A page's filters are some of the subscription's: one match suffices.
  if (HistoryPager::is_page_id(wire_id, *owner)) return pager_.asked_for(wire_id, ev);
  const auto& state = subs_.at(*owner);
  if (!nostr::matches_any(state.asked, ev)) return false;
  if (wire_id == *owner) return true;
  return state.fetch_open && wire_id == fetch_id(*owner, state) && state.fetching.count(ev.id);
}

std::size_t NegentropyHistory::probing() const {
  return static_cast<std::size_t>(std::count_if(subs_.begin(), subs_.end(), [](const auto& s) {
    return s.second.session && !s.second.answered;
  }));
}

NegentropyHistory::Step NegentropyHistory::next_session(const std::string& id, State& state) {
  Step step;
  state.session.reset();
  if (state.windows.empty()) {
    finish_if_done(id, state, step);
    return step;
  }
  if (!may_open_session()) {
    state.waiting = true;
    waiting_.push_back(id);
    return step;
  }
  if (state.refused) {
    state.session = std::exchange(state.refused, std::nullopt);
  } else {
    auto ours = our_records(state.windows.front(), limits_.max_records);
    if (!ours) return fall_back(id, false);  // our side alone is past the bound
    ++state.session_seq;
    auto session = nostr::negentropy::ClientSession::open(
        session_id(id, state), state.windows.front(), std::move(*ours), limits_.frame_size_limit,
        limits_.max_rounds);
    if (!session) return fall_back(id, false);
    state.session = std::move(*session);
  }
  state.answered = false;
  state.waited_ticks = 0;
  ++opened_this_tick_;
  step.frames.push_back(state.session->open_frame());
  return step;
}

void NegentropyHistory::queue_needs(State& state, const std::vector<nostr::EventId>& need,
                                    Step& step) {
  for (const auto& id : need) {
    if (state.queued.size() >= limits_.max_needed) return;
    if (!state.queued.insert(id).second) continue;
    state.needs.push_back(id);
    ++step.ids_needed;
  }
}

void NegentropyHistory::next_fetch(const std::string& id, State& state, Step& step) {
  if (state.fetch_open || state.needs.empty() || state.fetch_waiting) return;
  state.fetch_waiting = true;
  if (fetch_pause_ticks_ > 0) {
    paused_.push_back(id);
    return;
  }
  if (!slots_->take(fetch_user_, id)) return;
  state.fetch_waiting = false;
  send_fetch(id, state, step);
}

void NegentropyHistory::resume_fetch(const std::string& id, Step& step) {
  auto it = subs_.find(id);
  if (it == subs_.end() || it->second.fetch_open || it->second.needs.empty()) {
    slots_->give_back();
    return;
  }
  if (fetch_pause_ticks_ > 0) {  // asked before the pause: waits for its end
    slots_->give_back();
    paused_.push_back(id);
    return;
  }
  it->second.fetch_waiting = false;
  send_fetch(id, it->second, step);
}

void NegentropyHistory::resume_fetches(Step& step) {
  while (fetch_pause_ticks_ == 0 && !paused_.empty()) {
    auto id = std::move(paused_.front());
    paused_.pop_front();
    auto it = subs_.find(id);
    if (it == subs_.end()) continue;
    it->second.fetch_waiting = false;
    next_fetch(id, it->second, step);
  }
  for (;;) {
    if (auto id = slots_->grant(fetch_user_)) {
      resume_into(fetch_user_, *id, step);
    } else if (auto page = slots_->grant(pager_.slot_user())) {
      resume_into(pager_.slot_user(), *page, step);
    } else {
      return;
    }
  }
}

void NegentropyHistory::resume_into(HistorySlots::User user, const std::string& id, Step& step) {
  if (user == fetch_user_)
    resume_fetch(id, step);
  else if (user == pager_.slot_user())
    absorb_pages(id, pager_.resume(id), step);
}

NegentropyHistory::Step NegentropyHistory::resume(HistorySlots::User user, const std::string& id) {
  Step step;
  resume_into(user, id, step);
  return step;
}

void NegentropyHistory::send_fetch(const std::string& id, State& state, Step& step) {
  state.fetching.clear();
  state.delivered.clear();
  while (!state.needs.empty() && state.fetching.size() < state.batch_size) {
    state.fetching.insert(state.needs.front());
    state.needs.pop_front();
  }
  nostr::Filter by_id;
  by_id.ids = std::vector<nostr::EventId>(state.fetching.begin(), state.fetching.end());
  ++state.fetch_seq;
  state.fetch_open = true;
  step.frames.push_back(nostr::client_req(fetch_id(id, state), {by_id}));
  ++step.fetches;
}

void NegentropyHistory::finish_if_done(const std::string& id, State& state, Step& step) {
  if (state.windows.empty() && !state.session && !state.fetch_open && state.needs.empty() &&
      !state.paging)
    step.completed = id;
}

NegentropyHistory::Step NegentropyHistory::fall_back(const std::string& id, bool unsupported) {
  Step step;
  auto it = subs_.find(id);
  if (it == subs_.end()) return step;
  if (it->second.session) step.frames.push_back(it->second.session->close_frame());
  drop_requests(id, it->second, step);
  step.fallback.emplace_back(id, std::move(it->second.asked));
  step.unsupported = unsupported;
  peer_refused_ = peer_refused_ || unsupported;
  subs_.erase(it);
  return step;
}

NegentropyHistory::Step NegentropyHistory::split_or_fall_back(const std::string& id, State& state) {
  // The peer refused the window as too large (strfry's maxSyncEvents): reconcile its two
  // halves in turn; a window of one second cannot be split and goes to REQ pagination.
  auto window = state.windows.front();
  const std::int64_t lo = window.since.value_or(0);
  const std::int64_t hi = window.until.value_or(state.now);
  if (lo >= hi) return fall_back(id, false);
  const std::int64_t mid = lo + (hi - lo) / 2;
  auto lower = window;
  lower.until = mid;
  auto upper = window;
  upper.since = mid + 1;
  state.windows.pop_front();
  state.windows.push_front(upper);
  state.windows.push_front(lower);
  return next_session(id, state);
}

void NegentropyHistory::on_event(const std::string& wire_id, const nostr::Event& ev) {
  auto owner = owner_of(wire_id);
  if (!owner) return;
  auto& state = subs_.at(*owner);
  if (state.paging && (wire_id == *owner || HistoryPager::is_page_id(wire_id, *owner)))
    pager_.on_event(wire_id, ev);
  if (state.fetch_open && wire_id == fetch_id(*owner, state) && state.fetching.count(ev.id))
    state.delivered.insert(ev.id);
}

void NegentropyHistory::requeue_capped(State& state) {
  // Some but not all of a batch came back: the peer caps its answers at that count (strfry's
  // maxFilterLimit, a stricter public relay), so the rest is asked again in batches that fit.
  // The batch size only shrinks, so this ends; ids missing from a batch within the cap are gone
  // from the peer (deleted) and are not asked again.
  const auto delivered = state.delivered.size();
  if (delivered == 0 || delivered >= state.fetching.size() || delivered >= state.batch_size) return;
  state.batch_size = delivered;
  for (const auto& id : state.fetching)
    if (!state.delivered.count(id)) state.needs.push_front(id);
}

NegentropyHistory::Step NegentropyHistory::on_neg_msg(const std::string& wire_id,
                                                      const std::string& hex) {
  auto owner = owner_of(wire_id);
  if (!owner) return {};
  auto& state = subs_.at(*owner);
  if (!state.session || wire_id != session_id(*owner, state)) return {};  // stale session
  auto round = state.session->on_message(hex);
  if (!round) return fall_back(*owner, !peer_speaks_nip77_);
  Step step;
  step.rounds = 1;
  step.supported = !peer_speaks_nip77_;
  peer_speaks_nip77_ = true;
  state.answered = true;
  state.open_refusals = 0;
  queue_needs(state, round->need, step);
  step.frames.push_back(std::move(round->frame));
  next_fetch(*owner, state, step);
  if (round->done) {
    // The session is over: the next window of this subscription queues behind the others.
    state.session.reset();
    state.windows.pop_front();
    if (state.windows.empty()) {
      finish_if_done(*owner, state, step);
    } else {
      state.waiting = true;
      waiting_.push_back(*owner);
    }
    append(step, resume_waiting());
  }
  return step;
}

NegentropyHistory::Step NegentropyHistory::on_neg_err(const std::string& wire_id,
                                                      const std::string& reason) {
  auto owner = owner_of(wire_id);
  if (!owner) return {};
  auto& state = subs_.at(*owner);
  if (!state.session || wire_id != session_id(*owner, state)) return {};
  // The peer dropped the session with its answer: no NEG-CLOSE is due.
  auto dropped = std::exchange(state.session, std::nullopt);
  Step step;
  if (reason.rfind("blocked:", 0) == 0) {
    // Too many results: split the window. Blocked for another reason (too many sessions on
    // this connection): this subscription pages by REQ; the peer speaks NIP-77 either way.
    step = reason.find("too many query results") != std::string::npos
               ? split_or_fall_back(*owner, state)
               : fall_back(*owner, false);
    step.supported = !peer_speaks_nip77_;
    peer_speaks_nip77_ = true;
  } else if (reason.rfind("rate-limited:", 0) == 0) {
    step = retry_after_rate_limit(*owner, state);
    // Kept only while the window waits for its turn (a fall back to pages may drop the state).
    auto waiting = subs_.find(*owner);
    if (waiting != subs_.end() && waiting->second.waiting)
      waiting->second.refused = std::move(dropped);
  } else {
    step = fall_back(*owner, !peer_speaks_nip77_);
  }
  append(step, resume_waiting());
  return step;
}

NegentropyHistory::Step NegentropyHistory::retry_after_rate_limit(const std::string& id,
                                                                  State& state) {
  // The peer speaks NIP-77 and asks us to slow down. Paging by REQ instead would move every
  // stored event of the window (100× the bytes of a catch-up): the window keeps its place at
  // the front of the queue and the opens are paced, the rest of this tick included.
  Step step;
  step.supported = !peer_speaks_nip77_;
  peer_speaks_nip77_ = true;
  if (++state.open_refusals >= limits_.max_open_refusals) return fall_back(id, false);
  if (!refused_this_tick_) {  // one decrease per tick, however many opens it refuses
    const auto current = opens_per_tick_.value_or(std::max<std::size_t>(limits_.max_sessions, 1));
    opens_per_tick_ = std::max<std::size_t>(current / 2, 1);
    refused_this_tick_ = true;
  }
  opened_this_tick_ = *opens_per_tick_;
  state.waiting = true;
  waiting_.push_front(id);
  return step;
}

NegentropyHistory::Step NegentropyHistory::on_eose(const std::string& wire_id) {
  Step step;
  auto owner = owner_of(wire_id);
  if (!owner) return step;
  auto& state = subs_.at(*owner);
  if (state.paging && (wire_id == *owner || HistoryPager::is_page_id(wire_id, *owner))) {
    absorb_pages(*owner, pager_.on_eose(wire_id), step);
    resume_fetches(step);
    return step;
  }
  if (!state.fetch_open || wire_id != fetch_id(*owner, state)) return step;
  step.frames.push_back(nostr::client_close(wire_id));
  requeue_capped(state);
  state.fetch_open = false;
  slots_->give_back();
  state.fetching.clear();
  state.fetch_closes = 0;
  resume_fetches(step);  // subscriptions already waiting go first
  next_fetch(*owner, state, step);
  finish_if_done(*owner, state, step);
  return step;
}

NegentropyHistory::Step NegentropyHistory::on_closed(const std::string& wire_id, bool& forgotten,
                                                     bool rate_limited) {
  forgotten = false;
  Step step;
  auto owner = owner_of(wire_id);
  if (!owner) return step;
  auto& state = subs_.at(*owner);
  if (wire_id == *owner) {
    if (state.session) step.frames.push_back(state.session->close_frame());
    drop_requests(*owner, state, step);
    subs_.erase(*owner);
    forgotten = true;
    append(step, resume_waiting());
    return step;
  }
  if (state.session && wire_id == session_id(*owner, state)) {
    state.session.reset();
    step = fall_back(*owner, !peer_speaks_nip77_);
    append(step, resume_waiting());
    return step;
  }
  if (state.paging && HistoryPager::is_page_id(wire_id, *owner)) {
    absorb_pages(*owner, pager_.on_closed(wire_id), step);
    resume_fetches(step);
    return step;
  }
  if (state.fetch_open && wire_id == fetch_id(*owner, state)) {
    state.fetch_open = false;
    slots_->give_back();
    // What did not arrive is asked again, unless the peer keeps refusing this batch.
    if (++state.fetch_closes < limits_.max_fetch_attempts) {
      for (const auto& id : state.fetching)
        if (!state.delivered.count(id)) state.needs.push_front(id);
    } else {
      state.fetch_closes = 0;
    }
    state.fetching.clear();
    if (rate_limited) fetch_pause_ticks_ = limits_.rate_limit_ticks;
    resume_fetches(step);
    next_fetch(*owner, state, step);
    finish_if_done(*owner, state, step);
  }
  return step;
}

NegentropyHistory::Step NegentropyHistory::on_notice(const std::string& message) {
  Step step;
  if (peer_speaks_nip77_ || !nostr::negentropy::notice_refuses_negentropy(message)) return step;
  std::vector<std::string> probing_ids;
  for (const auto& [id, state] : subs_)
    if (state.session && !state.answered) probing_ids.push_back(id);
  for (const auto& id : probing_ids) append(step, fall_back(id, true));
  append(step, resume_waiting());
  return step;
}

NegentropyHistory::Step NegentropyHistory::on_tick() {
  Step step;
  std::vector<std::string> expired;
  for (auto& [id, state] : subs_)
    if (state.session && !state.answered && ++state.waited_ticks >= limits_.probe_ticks)
      expired.push_back(id);
  for (const auto& id : expired) append(step, fall_back(id, !peer_speaks_nip77_));
  if (fetch_pause_ticks_ > 0) --fetch_pause_ticks_;
  if (opens_per_tick_ && !refused_this_tick_) ++*opens_per_tick_;
  opened_this_tick_ = 0;
  refused_this_tick_ = false;
  append(step, resume_waiting());
  return step;
}

}  // namespace graspd::sync
