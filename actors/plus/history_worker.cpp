#include "actors/plus/history_worker.hpp"

#include <caf/typed_event_based_actor.hpp>

namespace graspd {

namespace {

using HistoryWorkerSelf = history_worker_actor::stateful_pointer<HistoryWorkerState>;

void report(HistoryWorkerSelf self, bool ok) {
  auto& st = self->state;
  self->send(st.controller, HistoryNext{st.relay, true, ok});
}

/// One group through the sync manager's fetch path; a failed reply counts as a failed group (the
/// controller counts and retries it).
void fetch(HistoryWorkerSelf self, HistoryGroup& group) {
  auto& st = self->state;
  if (group.done) return self->quit();
  ++st.groups;
  self->request(st.manager, caf::infinite,
                RelayFetch{st.relay, std::move(group.filters), group.trusted, FetchRole::history,
                           group.budget_seconds})
      .then([=](const FetchOutcome& outcome) { report(self, outcome.ok); },
            [=](caf::error&) { report(self, false); });
}

}  // namespace

history_worker_actor::behavior_type history_worker(HistoryWorkerSelf self, std::string relay,
                                                   sync_plus_actor controller,
                                                   sync_manager_actor manager) {
  auto& st = self->state;
  st.relay = std::move(relay);
  st.controller = std::move(controller);
  st.manager = std::move(manager);
  self->send(st.controller, HistoryNext{st.relay, false, false});
  return {
      [=](HistoryGroup& group) { fetch(self, group); },
  };
}

}  // namespace graspd
