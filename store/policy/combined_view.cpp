#include <algorithm>

#include "store/policy/acceptance_policy.hpp"

namespace graspd::policy {

using nostr::Event;
using nostr::EventId;
using nostr::Filters;

void CombinedView::scan(const Filters& filters,
                        const std::function<bool(const Event&)>& visit) const {
  bool stopped = false;
  store_.scan(filters, [&](const Event& ev) { return !(stopped = !visit(ev)); });
  if (stopped) return;
  if (auto stopped_on = pending_.scan(filters, visit)) record(*stopped_on);
}

bool CombinedView::exists(const Filters& filters) const {
  if (store_.exists(filters)) return true;
  auto found = pending_.scan(filters, [](const Event&) { return false; });
  if (found) record(*found);
  return found.has_value();
}

std::vector<EventId> CombinedView::take_recorded() const {
  auto out = std::move(recorded_);
  recorded_.clear();
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace graspd::policy
