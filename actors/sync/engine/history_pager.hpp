// Historic sync by REQ pagination (docs/spec/protocol.md §4.5), owned by one
// RelayConnection. A subscription's first REQ stays open for live events;
// older history is fetched with separate page REQs (`until` = the oldest
// created_at each filter saw, inclusive, for the events sharing that second).
// A page that brings nothing new at its own boundary steps one second past
// it, so a remote cap of 1 still walks the whole history and a flood of events
// sharing one timestamp cannot loop forever (the flood's events beyond the cap
// are out of REQ's reach: NIP-77 gets them). `until` falls with every page; an
// empty page, or one bringing only older events already seen, ends the filter.
// Pure: it returns the frames to send. Against peers that speak NIP-77,
// NegentropyHistory replaces this step, and pages with a HistoryPager of its own
// the filters we hold nothing of (`adopt`, `report_capped_seconds`).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "actors/sync/engine/history_slots.hpp"
#include "messages/nostr/event.hpp"
#include "messages/nostr/filter.hpp"

namespace graspd::sync {

class HistoryPager {
 public:
  /// Bound on remembered ids per subscription; past it pagination stops
  /// (the subscription is reported complete) instead of growing memory.
  /// Every page REQ holds a slot of `slots` (the connection's history REQ slots, shared with
  /// NegentropyHistory's fetches): a peer's REQ cap has room for them beside the live
  /// subscriptions (SyncConfig::reserved_subscriptions); other pages wait their turn in order.
  explicit HistoryPager(std::shared_ptr<HistorySlots> slots,
                        std::size_t max_seen_per_subscription = 1'000'000);
  /// A pager with slots of its own: `max_pages` page REQs open at once.
  explicit HistoryPager(std::size_t max_seen_per_subscription = 1'000'000,
                        std::size_t max_pages = 2)
      : HistoryPager(std::make_shared<HistorySlots>(max_pages), max_seen_per_subscription) {}

  /// Frames opening `id` (history + live).
  std::vector<std::string> open(const std::string& id, nostr::Filters filters);
  /// Frames paging the history of `id` while its live REQ (opened elsewhere,
  /// under `id` itself) stays as it is: the first page is a separate REQ, so
  /// an EOSE of the live REQ is never taken for the end of a page.
  std::vector<std::string> open_history(const std::string& id, nostr::Filters filters);
  /// Takes over the history of `id` whose first REQ, under `id` itself, another engine sent
  /// with `filters` among its own (NegentropyHistory's live REQ, for the windows it pages):
  /// that REQ's EOSE ends the first page.
  void adopt(const std::string& id, nostr::Filters filters);
  /// Frames closing `id` and its page in flight.
  std::vector<std::string> close(const std::string& id);
  /// Frames closing `id`'s page in flight only (the first REQ belongs to the adopting engine).
  std::vector<std::string> close_history(const std::string& id);

  /// The subscription an incoming frame's subscription id belongs to, if any.
  std::optional<std::string> owner_of(const std::string& wire_id) const;
  /// True when `ev` matches a filter of the subscription `wire_id` belongs
  /// to. Events a peer sends that we did not ask for are dropped before any
  /// costly check: a hostile peer cannot make us verify and park them.
  bool asked_for(const std::string& wire_id, const nostr::Event& ev) const;
  /// Records an event received on `wire_id`; true when it is new to the
  /// subscription's history.
  bool on_event(const std::string& wire_id, const nostr::Event& ev);

  struct Step {
    std::vector<std::string> frames;
    /// Set when the subscription's history is complete.
    std::optional<std::string> completed;
    bool page_requested = false;
    /// Seconds a page found full (see `report_capped_seconds`), each as the filter narrowed to
    /// `since` = `until` = that second.
    nostr::Filters capped;
  };
  Step on_eose(const std::string& wire_id);
  /// The peer closed `wire_id`. A closed page ends the history (complete);
  /// a closed main subscription is forgotten.
  Step on_closed(const std::string& wire_id);
  /// The slot pool granted `id` the slot its queued page waited for (HistorySlots::grant).
  Step resume(const std::string& id);

  /// From now on, a page that steps past its boundary second having brought as many events of
  /// that second alone as the peer's cap is reported in Step::capped: that cap may have hidden
  /// more events of that second than REQ can reach. The cap is `page_events` when the peer
  /// `advertised` it; otherwise at most `page_events` and no more than the largest page one filter
  /// brought so far (a history whose every page was that small is ambiguous: its last second is
  /// reported too, one NEG round of one second).
  void report_capped_seconds(std::size_t page_events, bool advertised = false) {
    capped_at_ = page_events;
    cap_advertised_ = advertised;
  }

  HistorySlots::User slot_user() const { return user_; }
  std::size_t open_subscriptions() const { return subs_.size(); }
  /// Wire ids: the subscription id, then this separator and a suffix (a page number here; the
  /// NegentropyHistory's sessions and fetches add a letter first). No sync id contains it.
  static constexpr char wire_separator = '~';
  static std::string page_id(const std::string& id, std::uint32_t page);
  /// True when `wire_id` names one of `id`'s pages (page_id's form).
  static bool is_page_id(const std::string& wire_id, const std::string& id);

 private:
  struct FilterProgress {
    std::optional<std::int64_t> oldest;
    std::size_t new_events = 0;
    /// Events of the page matching the filter, new or not.
    std::size_t events = 0;
  };
  struct State {
    /// The filters as opened: the main subscription stays open on them.
    nostr::Filters asked;
    /// The filters still paging back, each with the `until` of its next page.
    nostr::Filters filters;
    std::set<nostr::EventId> seen;
    std::vector<FilterProgress> progress;
    std::uint32_t page = 0;  // 0 = the main subscription's first page
    bool in_history = true;
    bool page_open = false;
    /// The REQ of the next page, held while no history slot is free.
    std::optional<std::string> queued_page;
  };
  /// Sends `frame` for page `state.page` of `id` now, or queues it until a slot is free.
  void send_page(const std::string& id, State& state, std::string frame,
                 std::vector<std::string>& frames);
  /// `id`'s page in flight ended: its slot goes back.
  void end_page(State& state);
  /// A slot came free: this pager's pages first in line go out.
  void release_pages(std::vector<std::string>& frames);
  /// Sends the queued page of `id`, which now holds a slot (or gives the slot back).
  void send_queued(const std::string& id, std::vector<std::string>& frames);
  void forget(const std::string& id);
  /// Frames closing `id`'s page in flight (and its first REQ `with_main`); waiting pages go next.
  std::vector<std::string> end(const std::string& id, bool with_main);
  Step next_page(const std::string& id, State& state);
  /// The next page's filter `i`, or nothing when the filter is done; reports a capped second.
  std::optional<nostr::Filter> next_filter(State& state, std::size_t i, Step& step);
  /// Opens `id` with its first REQ on the main id (page 0) or on page `first_page`.
  std::vector<std::string> start(const std::string& id, nostr::Filters filters,
                                 std::uint32_t first_page);

  std::shared_ptr<HistorySlots> slots_;
  HistorySlots::User user_;
  std::size_t max_seen_;
  std::optional<std::size_t> capped_at_;
  bool cap_advertised_ = false;
  /// The most events one filter brought in one page: what the peer's cap is at least.
  std::size_t largest_page_ = 0;
  std::map<std::string, State> subs_;
};

}  // namespace graspd::sync
