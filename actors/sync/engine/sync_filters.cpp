#include "actors/sync/engine/sync_filters.hpp"

#include "messages/nostr/json.hpp"
#include "messages/nostr/nip34.hpp"

namespace graspd::sync {

namespace {

/// The identifier part of "30617:<owner>:<identifier>"; empty when `repo` is no address.
std::string identifier_of(const RepoRef& repo) {
  auto address = nostr::nip34::parse_address(repo);
  return address ? std::move(address->identifier) : std::string{};
}

template <class T, class ToText>
std::vector<std::vector<std::string>> chunks(const std::set<T>& values, std::size_t size,
                                             ToText to_text) {
  std::vector<std::vector<std::string>> out;
  for (const auto& value : values) {
    if (out.empty() || out.back().size() >= size) out.emplace_back();
    out.back().push_back(to_text(value));
  }
  return out;
}

nostr::Filter tag_filter(char letter, std::vector<std::string> values,
                         std::optional<std::int64_t> since) {
  nostr::Filter f;
  f.tags[letter] = std::move(values);
  f.since = since;
  f.normalize();
  return f;
}

/// Kind 30618 with one of the repositories' identifiers (two owners sharing one are asked once:
/// normalize() drops repeats).
nostr::Filter state_filter(const std::vector<std::string>& repos,
                           std::optional<std::int64_t> since) {
  std::vector<std::string> identifiers;
  for (const auto& repo : repos) identifiers.push_back(identifier_of(repo));
  auto state = tag_filter('d', std::move(identifiers), since);
  state.kinds = std::vector<std::uint32_t>{nostr::nip34::kind::repo_state};
  return state;
}

// ["REQ","<id>",...] around the filters; ids are short ("gs" + counter).
constexpr std::size_t req_frame_overhead = 32;

}  // namespace

void SyncItems::merge(const SyncItems& other) {
  repos.insert(other.repos.begin(), other.repos.end());
  roots.insert(other.roots.begin(), other.roots.end());
  states.insert(other.states.begin(), other.states.end());
  everything = everything || other.everything;
}

SyncItems SyncItems::minus(const SyncItems& a, const SyncItems& b) const {
  SyncItems out;
  for (const auto& repo : repos)
    if (!a.repos.contains(repo) && !b.repos.contains(repo)) out.repos.insert(repo);
  for (const auto& root : roots)
    if (!a.roots.contains(root) && !b.roots.contains(root)) out.roots.insert(root);
  for (const auto& repo : states)
    if (!a.states.contains(repo) && !b.states.contains(repo)) out.states.insert(repo);
  out.everything = everything && !a.everything && !b.everything;
  return out;
}

nostr::Filters announcement_filters(std::optional<std::int64_t> since) {
  nostr::Filter f;
  f.kinds = std::vector<std::uint32_t>{nostr::nip34::kind::repo_announcement};
  f.since = since;
  return {f};
}

nostr::Filters item_filters(const SyncItems& items, std::optional<std::int64_t> since,
                            std::size_t refs_per_filter) {
  nostr::Filters out;
  if (items.everything) {
    nostr::Filter all;
    all.since = since;
    return {all};
  }
  auto as_is = [](const RepoRef& r) { return r; };
  for (auto& chunk : chunks(items.repos, refs_per_filter, as_is)) {
    for (char letter : {'a', 'A', 'q'}) out.push_back(tag_filter(letter, chunk, since));
    out.push_back(state_filter(chunk, since));
  }
  for (auto& chunk : chunks(items.states, refs_per_filter, as_is))
    out.push_back(state_filter(chunk, since));
  auto to_hex = [](const EventId& id) { return nostr::to_hex(id); };
  for (auto& chunk : chunks(items.roots, refs_per_filter, to_hex))
    for (char letter : {'e', 'E', 'q'}) out.push_back(tag_filter(letter, chunk, since));
  return out;
}

namespace {

/// The one tag list of `f` when it is its only list of values (no ids, no authors, at most a kinds
/// list, which then must be equal to join); null otherwise.
const std::pair<const char, std::vector<std::string>>* sole_tag_list(const nostr::Filter& f) {
  if (f.ids || f.authors || f.tags.size() != 1) return nullptr;
  return &*f.tags.begin();
}

/// True when `a` and `b` differ at most in the values of the same sole tag list.
bool same_shape(const nostr::Filter& a, const nostr::Filter& b) {
  const auto* la = sole_tag_list(a);
  const auto* lb = sole_tag_list(b);
  return la && lb && la->first == lb->first && a.kinds == b.kinds && a.since == b.since &&
         a.until == b.until;
}

}  // namespace

nostr::Filters reconcile_windows(const nostr::Filters& filters, std::size_t max_values,
                                 std::size_t max_bytes) {
  nostr::Filters out;
  for (auto filter : filters) {
    filter.limit.reset();
    bool joined = false;
    for (auto& window : out) {
      if (!same_shape(window, filter)) continue;
      auto candidate = window;
      auto& values = candidate.tags.begin()->second;
      const auto& more = filter.tags.begin()->second;
      values.insert(values.end(), more.begin(), more.end());
      candidate.normalize();
      if (values.size() > max_values || nostr::serialize_filter(candidate).size() > max_bytes)
        continue;
      window = std::move(candidate);
      joined = true;
      break;
    }
    if (!joined) out.push_back(std::move(filter));
  }
  return out;
}

std::vector<nostr::Filters> pack_filters(const nostr::Filters& filters, std::size_t max_bytes,
                                         std::size_t max_filters) {
  std::vector<nostr::Filters> out;
  std::size_t used = 0;
  for (const auto& filter : filters) {
    auto bytes = nostr::serialize_filter(filter).size() + 1;
    if (out.empty() || used + bytes > max_bytes || out.back().size() >= max_filters) {
      out.emplace_back();
      used = req_frame_overhead;
    }
    out.back().push_back(filter);
    used += bytes;
  }
  return out;
}

}  // namespace graspd::sync
