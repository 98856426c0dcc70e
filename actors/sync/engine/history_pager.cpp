#include "actors/sync/engine/history_pager.hpp"

#include <algorithm>
#include <cctype>

#include "messages/nostr/json.hpp"

namespace graspd::sync {

namespace {

// Page subscriptions share the main id plus a suffix no sync id contains.

std::string req_frame(const std::string& id, const nostr::Filters& filters) {
  std::string frame = "[\"REQ\",\"" + id + "\"";
  for (const auto& f : filters) frame += "," + nostr::serialize_filter(f);
  return frame + "]";
}

std::string close_frame(const std::string& id) {
  return "[\"CLOSE\",\"" + id + "\"]";
}

}  // namespace

std::string HistoryPager::page_id(const std::string& id, std::uint32_t page) {
  return id + wire_separator + std::to_string(page);
}

bool HistoryPager::is_page_id(const std::string& wire_id, const std::string& id) {
  return wire_id.size() > id.size() + 1 && wire_id.compare(0, id.size(), id) == 0 &&
         wire_id[id.size()] == wire_separator &&
         std::isdigit(static_cast<unsigned char>(wire_id[id.size() + 1]));
}

HistoryPager::HistoryPager(std::shared_ptr<HistorySlots> slots,
                           std::size_t max_seen_per_subscription)
    : slots_(std::move(slots)), user_(slots_->join()), max_seen_(max_seen_per_subscription) {}

void HistoryPager::send_page(const std::string& id, State& state, std::string frame,
                             std::vector<std::string>& frames) {
  if (!slots_->take(user_, id)) {
    state.queued_page = std::move(frame);
    return;
  }
  state.page_open = true;
  frames.push_back(std::move(frame));
}

void HistoryPager::end_page(State& state) {
  if (!state.page_open) return;
  state.page_open = false;
  slots_->give_back();
}

void HistoryPager::send_queued(const std::string& id, std::vector<std::string>& frames) {
  auto it = subs_.find(id);
  if (it == subs_.end() || !it->second.queued_page) {
    slots_->give_back();  // nothing left to send: the slot goes to the next in line
    return;
  }
  it->second.page_open = true;
  frames.push_back(std::move(*it->second.queued_page));
  it->second.queued_page.reset();
}

void HistoryPager::release_pages(std::vector<std::string>& frames) {
  while (auto id = slots_->grant(user_)) send_queued(*id, frames);
}

HistoryPager::Step HistoryPager::resume(const std::string& id) {
  Step step;
  send_queued(id, step.frames);
  return step;
}

void HistoryPager::forget(const std::string& id) {
  auto it = subs_.find(id);
  if (it == subs_.end()) return;
  end_page(it->second);
  slots_->forget(user_, id);
  subs_.erase(it);
}

std::vector<std::string> HistoryPager::start(const std::string& id, nostr::Filters filters,
                                             std::uint32_t first_page) {
  std::vector<std::string> frames;
  if (subs_.count(id)) frames = close(id);
  State state;
  state.progress.resize(filters.size());
  state.asked = filters;
  state.filters = std::move(filters);
  state.page = first_page;
  auto& stored = subs_[id] = std::move(state);
  if (first_page > 0)
    send_page(id, stored, req_frame(page_id(id, first_page), stored.filters), frames);
  else
    frames.push_back(req_frame(id, stored.filters));
  return frames;
}

std::vector<std::string> HistoryPager::open(const std::string& id, nostr::Filters filters) {
  return start(id, std::move(filters), 0);
}

std::vector<std::string> HistoryPager::open_history(const std::string& id, nostr::Filters filters) {
  return start(id, std::move(filters), 1);
}

void HistoryPager::adopt(const std::string& id, nostr::Filters filters) {
  forget(id);
  State state;
  state.progress.resize(filters.size());
  state.asked = filters;
  state.filters = std::move(filters);
  subs_[id] = std::move(state);
}

std::vector<std::string> HistoryPager::close(const std::string& id) {
  return end(id, true);
}

std::vector<std::string> HistoryPager::close_history(const std::string& id) {
  return end(id, false);
}

std::vector<std::string> HistoryPager::end(const std::string& id, bool with_main) {
  std::vector<std::string> frames;
  auto it = subs_.find(id);
  if (it == subs_.end()) return frames;
  if (it->second.page_open) frames.push_back(close_frame(page_id(id, it->second.page)));
  if (with_main) frames.push_back(close_frame(id));
  forget(id);
  release_pages(frames);  // after the CLOSEs: the peer counts them first
  return frames;
}

std::optional<std::string> HistoryPager::owner_of(const std::string& wire_id) const {
  auto id = wire_id.substr(0, wire_id.find(wire_separator));
  if (!subs_.count(id)) return std::nullopt;
  return id;
}

bool HistoryPager::asked_for(const std::string& wire_id, const nostr::Event& ev) const {
  auto owner = owner_of(wire_id);
  if (!owner) return false;
  return nostr::matches_any(subs_.at(*owner).asked, ev);
}

bool HistoryPager::on_event(const std::string& wire_id, const nostr::Event& ev) {
  auto owner = owner_of(wire_id);
  if (!owner) return false;
  auto& state = subs_[*owner];
  const bool is_page = wire_id != *owner;
  // Live events on the main subscription after its first EOSE are not history.
  if (!state.in_history || (!is_page && state.page > 0)) return false;
  if (state.seen.size() >= max_seen_) return false;
  const bool fresh = state.seen.insert(ev.id).second;
  for (std::size_t i = 0; i < state.filters.size(); ++i) {
    if (!state.filters[i].matches(ev)) continue;
    auto& progress = state.progress[i];
    if (!progress.oldest || ev.created_at < *progress.oldest) progress.oldest = ev.created_at;
    if (fresh) ++progress.new_events;
    ++progress.events;
  }
  return fresh;
}

namespace {

/// The next page's `until`, or nothing when the filter's history is done. The oldest second seen
/// stays included (other events of that second may lie past the remote cap). A page that brought
/// nothing new and nothing older than its own `until` moves one second past it: that is how a cap
/// smaller than the events of one second moves on. A page that brought only older events already
/// seen (through another filter of the subscription) ends the filter, as before.
std::optional<std::int64_t> next_until(std::optional<std::int64_t> until, std::int64_t oldest,
                                       bool brought_new) {
  if (brought_new) return until ? std::min(*until, oldest) : oldest;
  if (until && oldest >= *until) return *until - 1;
  return std::nullopt;
}

}  // namespace

std::optional<nostr::Filter> HistoryPager::next_filter(State& state, std::size_t i, Step& step) {
  auto& progress = state.progress[i];
  if (!progress.oldest) return std::nullopt;  // an empty page: no older history
  auto filter = state.filters[i];
  const auto until = filter.until;
  // A page of the boundary second alone that brought nothing new steps past it; if that page was
  // full, the peer's cap may hide more events of that second than REQ can reach.
  const bool steps_past = until && progress.new_events == 0 && *progress.oldest >= *until;
  // A cap the peer did not advertise shows as the largest page it sent.
  largest_page_ = std::max(largest_page_, progress.events);
  const auto cap =
      capped_at_ && !cap_advertised_ ? std::min(*capped_at_, largest_page_) : capped_at_;
  if (steps_past && cap && progress.events >= *cap) {
    auto second = filter;
    second.since = *until;
    second.limit.reset();
    step.capped.push_back(std::move(second));
  }
  filter.until = next_until(until, *progress.oldest, progress.new_events > 0);
  progress = FilterProgress{};
  if (!filter.until || (filter.since && *filter.until < *filter.since)) return std::nullopt;
  state.filters[i].until = filter.until;
  return filter;
}

HistoryPager::Step HistoryPager::next_page(const std::string& id, State& state) {
  Step step;
  nostr::Filters page_filters;
  for (std::size_t i = 0; i < state.filters.size(); ++i)
    if (auto filter = next_filter(state, i, step)) page_filters.push_back(std::move(*filter));
  if (page_filters.empty() || state.seen.size() >= max_seen_) {
    state.in_history = false;
    step.completed = id;
    return step;
  }
  ++state.page;
  // Only the filters still bringing history stay in the next pages.
  nostr::Filters remaining;
  std::vector<FilterProgress> progress;
  for (std::size_t i = 0; i < state.filters.size(); ++i)
    if (std::find(page_filters.begin(), page_filters.end(), state.filters[i]) !=
        page_filters.end()) {
      remaining.push_back(state.filters[i]);
      progress.emplace_back();
    }
  state.filters = std::move(remaining);
  state.progress = std::move(progress);
  send_page(id, state, req_frame(page_id(id, state.page), page_filters), step.frames);
  step.page_requested = true;
  return step;
}

HistoryPager::Step HistoryPager::on_eose(const std::string& wire_id) {
  auto owner = owner_of(wire_id);
  if (!owner) return {};
  auto& state = subs_[*owner];
  if (!state.in_history) return {};
  const bool is_page = wire_id != *owner;
  if (is_page && wire_id != page_id(*owner, state.page)) return {};  // stale page
  if (!is_page && state.page > 0) return {};
  Step prefix;
  if (is_page) {
    end_page(state);
    prefix.frames.push_back(close_frame(wire_id));
    release_pages(prefix.frames);  // subscriptions already waiting go first
  }
  auto step = next_page(*owner, state);
  step.frames.insert(step.frames.begin(), prefix.frames.begin(), prefix.frames.end());
  return step;
}

HistoryPager::Step HistoryPager::on_closed(const std::string& wire_id) {
  Step step;
  auto owner = owner_of(wire_id);
  if (!owner) return step;
  auto& state = subs_[*owner];
  if (wire_id == *owner) {
    forget(*owner);
    release_pages(step.frames);
    return step;
  }
  end_page(state);
  if (state.in_history) {
    state.in_history = false;
    step.completed = *owner;
  }
  release_pages(step.frames);
  return step;
}

}  // namespace graspd::sync
