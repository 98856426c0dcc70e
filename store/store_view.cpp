#include "store/store_view.hpp"

#include <limits>

#include "messages/nostr/json.hpp"

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

}  // namespace graspd::store
