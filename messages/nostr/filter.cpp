#include "messages/nostr/filter.hpp"

#include <algorithm>

namespace graspd::nostr {

namespace {
template <class T>
void sort_unique(std::vector<T>& values) {
  std::sort(values.begin(), values.end());
  values.erase(std::unique(values.begin(), values.end()), values.end());
}

template <class T>
bool contains_sorted(const std::optional<std::vector<T>>& values, const T& x) {
  return !values || std::binary_search(values->begin(), values->end(), x);
}

bool tag_condition_holds(char letter, const std::vector<std::string>& wanted, const Event& ev) {
  for (const auto& tag : ev.tags) {
    if (tag.size() < 2 || tag[0].size() != 1 || tag[0][0] != letter) continue;
    if (std::binary_search(wanted.begin(), wanted.end(), tag[1])) return true;
  }
  return false;
}
}  // namespace

void Filter::normalize() {
  if (ids) sort_unique(*ids);
  if (authors) sort_unique(*authors);
  if (kinds) sort_unique(*kinds);
  for (auto& [letter, values] : tags) sort_unique(values);
}

bool Filter::matches(const Event& ev) const {
  if (since && ev.created_at < *since) return false;
  if (until && ev.created_at > *until) return false;
  if (!contains_sorted(kinds, ev.kind)) return false;
  if (!contains_sorted(authors, ev.pubkey)) return false;
  if (!contains_sorted(ids, ev.id)) return false;
  for (const auto& [letter, values] : tags)
    if (!tag_condition_holds(letter, values, ev)) return false;
  return true;
}

bool Filter::is_unsatisfiable() const {
  if ((ids && ids->empty()) || (authors && authors->empty()) || (kinds && kinds->empty()))
    return true;
  for (const auto& [letter, values] : tags)
    if (values.empty()) return true;
  return since && until && *since > *until;
}

bool matches_any(const Filters& filters, const Event& ev) {
  return std::any_of(filters.begin(), filters.end(),
                     [&](const Filter& f) { return f.matches(ev); });
}

std::size_t value_count(const Filters& filters) {
  std::size_t values = 0;
  for (const auto& f : filters) {
    values += 1 + (f.ids ? f.ids->size() : 0) + (f.authors ? f.authors->size() : 0) +
              (f.kinds ? f.kinds->size() : 0);
    for (const auto& [letter, tag_values] : f.tags) values += tag_values.size();
  }
  return values;
}

}  // namespace graspd::nostr
