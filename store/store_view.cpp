#include "store/store_view.hpp"

#include <limits>

#include "messages/nostr/json.hpp"
#include "store/record.hpp"

namespace graspd::store {

namespace {
// Stored events were validated on the way in; only the size limits matter
// when decoding them again, and those must admit everything stored.
const nostr::ParseLimits& stored_event_limits() {
  static const nostr::ParseLimits limits = [] {
    nostr::ParseLimits l;
    l.max_event_bytes = std::numeric_limits<std::size_t>::max();
    l.max_message_bytes = std::numeric_limits<std::size_t>::max();
    l.max_tags = std::numeric_limits<std::size_t>::max();
    l.max_tag_elements = std::numeric_limits<std::size_t>::max();
    l.max_content_bytes = std::numeric_limits<std::size_t>::max();
    return l;
  }();
  return limits;
}
}  // namespace

void EventStoreView::scan(const nostr::Filters& filters,
                          const std::function<bool(const nostr::Event&)>& visit) const {
  bool stopped = false;
  QueryOptions options;
  options.max_limit = std::numeric_limits<std::uint64_t>::max();
  store_->query(
      filters,
      [&](const QueryHit& hit) {
        if (stopped) return;
        auto parsed = nostr::parse_event(hit.json, stored_event_limits());
        if (parsed.ok() && !visit(parsed.value())) stopped = true;
      },
      options);
}

bool EventStoreView::exists(const nostr::Filters& filters) const {
  bool found = false;
  QueryOptions options;
  options.max_limit = 1;
  store_->query(
      filters, [&](const QueryHit&) { found = true; }, options);
  return found;
}

namespace {

constexpr char held_announcement = 'a';
constexpr char held_state = 's';
constexpr char expired_id = 'x';
constexpr std::size_t header_bytes = 9;

std::string header(char kind, std::int64_t time) {
  std::string out(1, kind);
  detail::append_be64(out, static_cast<std::uint64_t>(time));
  return out;
}

std::optional<nostr::Event> held_event(std::string_view record) {
  if (record.size() <= header_bytes || record[0] == expired_id) return std::nullopt;
  auto parsed = nostr::parse_event(record.substr(header_bytes), stored_event_limits());
  if (!parsed.ok()) return std::nullopt;
  return std::move(parsed.value());
}

}  // namespace

void StoreAndHeldView::scan(const nostr::Filters& filters,
                            const std::function<bool(const nostr::Event&)>& visit) const {
  bool stopped = false;
  stored_.scan(filters, [&](const nostr::Event& ev) { return !(stopped = !visit(ev)); });
  if (stopped) return;
  store_->for_each_held([&](const nostr::EventId&, std::string_view record) {
    auto ev = held_event(record);
    return !ev || !nostr::matches_any(filters, *ev) || visit(*ev);
  });
}

std::string encode_held(const policy::HeldEvent& entry) {
  char kind = entry.kind == policy::HeldKind::state ? held_state : held_announcement;
  return header(kind, entry.expires_at) + nostr::serialize_event(*entry.event);
}

std::string encode_expired(std::int64_t forget_at) {
  return header(expired_id, forget_at);
}

std::size_t load_purgatory(const EventStore& store, policy::Purgatory& purgatory) {
  std::size_t unreadable = 0;
  store.for_each_held([&](const nostr::EventId& id, std::string_view record) {
    if (record.size() < header_bytes) return ++unreadable, true;
    auto time = static_cast<std::int64_t>(detail::read_be64(record.data() + 1));
    if (record[0] == expired_id) {
      purgatory.restore_expired(id, time);
      return true;
    }
    auto ev = held_event(record);
    if (!ev || ev->id != id || (record[0] != held_announcement && record[0] != held_state))
      return ++unreadable, true;
    auto kind = record[0] == held_state ? policy::HeldKind::state : policy::HeldKind::announcement;
    purgatory.restore(
        policy::HeldEvent{std::make_shared<const nostr::Event>(std::move(*ev)), kind, time});
    return true;
  });
  return unreadable;
}

}  // namespace graspd::store
