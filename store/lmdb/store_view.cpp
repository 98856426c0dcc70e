#include "store/lmdb/store_view.hpp"

#include <algorithm>
#include <charconv>
#include <limits>

#include "messages/nostr/json.hpp"
#include "store/lmdb/record.hpp"

namespace graspd::store {

namespace {
// Stored events were validated on the way in; only the size limits matter
// when decoding them again, and those must admit everything stored.
const nostr::ParseLimits& stored_event_limits() {
  static const nostr::ParseLimits limits = [] {
    nostr::ParseLimits l;
    l.max_event_bytes = std::numeric_limits<std::size_t>::max();
    l.max_message_bytes = std::numeric_limits<std::size_t>::max();
    l.max_event_tags = std::numeric_limits<std::size_t>::max();
    l.max_tag_elements = std::numeric_limits<std::size_t>::max();
    l.max_content_length = std::numeric_limits<std::size_t>::max();
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
  return store_->exists(filters);
}

namespace {

constexpr char held_announcement = 'a';
constexpr char held_state = 's';
constexpr char held_pull_request = 'p';
constexpr char expired_id = 'x';
constexpr char placeholders = 'r';
constexpr std::size_t header_bytes = 9;

std::string header(char kind, std::int64_t time) {
  std::string out(1, kind);
  detail::append_be64(out, static_cast<std::uint64_t>(time));
  return out;
}

/// The source a held event's record names after its JSON (a line of its own; none in records of
/// older versions). JSON text never holds a raw newline.
std::string_view held_source(std::string_view record) {
  auto newline = record.find('\n', header_bytes);
  return newline == std::string_view::npos ? std::string_view{} : record.substr(newline + 1);
}

std::optional<nostr::Event> held_event(std::string_view record) {
  if (record.size() <= header_bytes || record[0] == expired_id || record[0] == placeholders)
    return std::nullopt;
  auto json = record.substr(header_bytes);
  json = json.substr(0, json.find('\n'));
  auto parsed = nostr::parse_event(json, stored_event_limits());
  if (!parsed.ok()) return std::nullopt;
  return std::move(parsed.value());
}

}  // namespace

void StoreAndHeldView::scan(const nostr::Filters& filters,
                            const std::function<bool(const nostr::Event&)>& visit) const {
  // Held records first: a released event's record is erased only after its write committed, so an
  // event that leaves the records between the two reads is found by the second.
  bool stopped = false;
  store_->for_each_held([&](const nostr::EventId&, std::string_view record) {
    auto ev = held_event(record);
    return !ev || !nostr::matches_any(filters, *ev) || !(stopped = !visit(*ev));
  });
  if (stopped) return;
  stored_.scan(filters, visit);
}

std::string encode_held(const policy::HeldEvent& entry) {
  char kind = held_announcement;
  if (entry.kind == policy::HeldKind::state) kind = held_state;
  if (entry.kind == policy::HeldKind::pull_request) kind = held_pull_request;
  auto out = header(kind, entry.expires_at) + nostr::serialize_event(*entry.event);
  // Its share survives a restart; a source never holds a newline (an address, a relay URL).
  if (!entry.source.empty() && entry.source.find('\n') == std::string::npos)
    out += "\n" + entry.source;
  return out;
}

std::string encode_placeholders(const std::vector<policy::Placeholder>& list) {
  std::int64_t first = list.empty() ? 0 : list.front().expires_at;
  for (const auto& p : list) first = std::min(first, p.expires_at);
  auto out = header(placeholders, first);
  for (const auto& p : list)
    out += p.commit + " " + nostr::to_hex(p.repository.owner) + " " + std::to_string(p.expires_at) +
           " " + p.repository.identifier + "\n";
  return out;
}

std::string encode_expired(std::int64_t forget_at) {
  return header(expired_id, forget_at);
}

namespace {

/// One `<commit> <owner hex> <expiry> <identifier>` line of a placeholder record.
std::optional<policy::Placeholder> placeholder_line(const nostr::EventId& id,
                                                    std::string_view line) {
  policy::Placeholder out;
  out.id = id;
  auto next_word = [&line]() {
    auto space = line.find(' ');
    if (space == std::string_view::npos) return std::optional<std::string_view>{};
    auto word = line.substr(0, space);
    line.remove_prefix(space + 1);
    return std::optional<std::string_view>{word};
  };
  auto commit = next_word();
  auto owner = next_word();
  auto expiry = next_word();
  if (!commit || commit->size() != 40 || !owner || !nostr::from_hex(*owner, out.repository.owner) ||
      !expiry || line.empty())
    return std::nullopt;
  out.commit = std::string(*commit);
  auto [end, error] =
      std::from_chars(expiry->data(), expiry->data() + expiry->size(), out.expires_at);
  if (error != std::errc{} || end != expiry->data() + expiry->size()) return std::nullopt;
  out.repository.identifier = std::string(line);
  return out;
}

/// Reads a placeholder record into `sink`; false when any line is unreadable.
bool load_placeholders(const nostr::EventId& id, std::string_view body,
                       policy::PrPlaceholders& sink) {
  bool ok = true;
  while (!body.empty()) {
    auto eol = body.find('\n');
    if (eol == std::string_view::npos) return false;
    if (auto p = placeholder_line(id, body.substr(0, eol)))
      sink.restore(std::move(*p));
    else
      ok = false;
    body.remove_prefix(eol + 1);
  }
  return ok;
}

}  // namespace

std::size_t load_purgatory(const EventStore& store, policy::Purgatory& purgatory,
                           policy::PrPlaceholders* placeholder_sink) {
  std::size_t unreadable = 0;
  store.for_each_held([&](const nostr::EventId& id, std::string_view record) {
    if (record.size() < header_bytes) return ++unreadable, true;
    auto time = static_cast<std::int64_t>(detail::read_be64(record.data() + 1));
    if (record[0] == expired_id) {
      purgatory.restore_expired(id, time);
      return true;
    }
    if (record[0] == placeholders) {
      if (placeholder_sink &&
          !load_placeholders(id, record.substr(header_bytes), *placeholder_sink))
        ++unreadable;
      return true;
    }
    auto ev = held_event(record);
    if (!ev || ev->id != id ||
        (record[0] != held_announcement && record[0] != held_state &&
         record[0] != held_pull_request))
      return ++unreadable, true;
    auto kind = record[0] == held_state ? policy::HeldKind::state : policy::HeldKind::announcement;
    if (record[0] == held_pull_request) kind = policy::HeldKind::pull_request;
    purgatory.restore(policy::HeldEvent{std::make_shared<const nostr::Event>(std::move(*ev)), kind,
                                        time, std::string(held_source(record))});
    return true;
  });
  return unreadable;
}

}  // namespace graspd::store
