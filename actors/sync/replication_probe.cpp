#include "actors/sync/replication_probe.hpp"

#include <caf/send.hpp>

#include "actors/sync/relay_bridge.hpp"

namespace graspd {

namespace {

using ProbeSelf = replication_probe_actor::stateful_pointer<ReplicationProbeState>;

/// Sends the outcome once, hangs up and quits.
void report(ProbeSelf self, bool ok, std::string reason) {
  auto& st = self->state;
  if (st.reported) return;
  st.reported = true;
  RelayProbeOutcome outcome{st.probe, ok, std::move(reason), 0, 0};
  if (ok && st.comparison) {
    outcome.only_there = st.comparison->only_there();
    outcome.only_here = st.comparison->only_here();
  }
  self->send(st.owner, std::move(outcome));
  if (st.client) st.client->close();
  self->quit();
}

void apply(ProbeSelf self, sync::RelayComparison::Step step) {
  auto& st = self->state;
  if (st.client)
    for (auto& frame : step.frames) st.client->send(std::move(frame));
  if (!step.finished) return;
  const bool ok = step.failure.empty();
  report(self, ok, std::move(step.failure));
}

void on_gone(ProbeSelf self, bool was_open, const std::string& why) {
  self->state.client.reset();
  if (!was_open) return report(self, false, "unreachable: " + why);
  report(self, false, "the relay closed the connection: " + why);
}

void on_deadline(ProbeSelf self) {
  const auto& st = self->state;
  if (!st.opened) return report(self, false, "unreachable: no connection before the deadline");
  const auto& comparison = st.comparison;
  if (comparison && !comparison->answered())
    return report(self, false, std::string(sync::no_nip77) + " (no answer to NEG-OPEN)");
  report(self, false, "timeout");
}

}  // namespace

replication_probe_actor::behavior_type replication_probe(ProbeSelf self,
                                                         ReplicationProbeConfig config,
                                                         std::string relay, nostr::Filters filters,
                                                         std::uint64_t probe,
                                                         replication_actor owner) {
  auto& st = self->state;
  st.probe = probe;
  st.owner = std::move(owner);
  st.comparison.emplace(std::move(filters), config.local_records, config.max_records,
                        config.max_rounds);
  auto bridge =
      std::make_shared<RelayBridge<replication_probe_actor>>(replication_probe_actor{self});
  if (auto url = parse_url(relay); url && config.clients)
    st.client = config.clients(*url, config.client, bridge);
  else
    bridge->on_close(false, "not a relay URL");
  self->delayed_send(self, config.timeout, atom::replication_wait::value);
  return {
      [=](atom::relay_open, const RelayUp& up) {
        self->state.opened = true;
        apply(self, self->state.comparison->start(up.nip77()));
      },
      [=](atom::relay_msg, const std::string& text) {
        apply(self, self->state.comparison->on_frame(text));
        if (self->state.client) self->state.client->consumed(text.size());
      },
      [=](atom::relay_gone, bool was_open, const std::string& why) {
        on_gone(self, was_open, why);
      },
      [=](atom::replication_wait) { on_deadline(self); },
  };
}

}  // namespace graspd
