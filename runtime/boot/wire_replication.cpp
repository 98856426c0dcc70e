#include "runtime/boot/wire_replication.hpp"

#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/send.hpp>

#include <chrono>
#include <utility>

#include "messages/nostr/nip19.hpp"
#include "runtime/boot/wire_sync.hpp"
#include "runtime/git/engine/git_fetch_schedule.hpp"
#include "runtime/ops/status_board.hpp"
#include "store/lmdb/store_view.hpp"

namespace graspd::boot {

namespace {

/// The sync's connection rules: the same URL guard, limits and own-endpoint check.
ReplicationProbeConfig probe_config(const Services& services, const WiredStore& store,
                                    std::shared_ptr<runtime::RelayClientRegistry> clients) {
  const auto& config = services.config;
  ReplicationProbeConfig out;
  out.clients = network_relay_clients(services.io, std::move(clients));
  out.client = sync_manager_config(config).connection.client;
  out.local_records = [events = store.store](const nostr::Filter& filter, std::size_t max) {
    return events->negentropy_items(filter, max);
  };
  out.max_records = config.negentropy_max_sync_events;
  out.max_rounds = config.negentropy_max_rounds;
  return out;
}

runtime::HttpResponse http_answer(const ReplicationAnswer& answer) {
  if (answer.status == 404) return {404, "text/plain; charset=utf-8", "no such repository here\n"};
  return {answer.status, "application/json", answer.json};
}

}  // namespace

WiredReplication wire_replication(const Services& services, const WiredStore& store,
                                  ServerProbe probe_server, sync_plus_actor plus) {
  WiredReplication wired;
  wired.clients = std::make_shared<runtime::RelayClientRegistry>();
  ReplicationConfig config;
  config.view = std::make_shared<store::EventStoreView>(
      std::shared_ptr<const store::EventStore>(store.store));
  config.probe = probe_config(services, store, wired.clients);
  config.probe_server = std::move(probe_server);
  config.plus = std::move(plus);
  config.is_own_server = [service = services.config.domain.address](std::string_view url) {
    return runtime::git::judge_clone_url(url, service) ==
           runtime::git::CloneUrlVerdict::this_service;
  };
  config.own_relays = own_relay_urls(services.config);
  config.publish = [board = services.status](std::string json) {
    board->publish("replication", std::move(json));
  };
  config.sweep_interval = std::chrono::seconds(services.config.replication_sweep_secs);
  wired.actor = services.system.spawn(replication, std::move(config));
  return wired;
}

std::function<void(std::string, std::string, runtime::HttpRespond)> replication_entry(
    caf::actor_system& system, const WiredReplication& wired) {
  return [&system, actor = wired.actor](std::string npub, std::string identifier,
                                        runtime::HttpRespond respond) {
    auto owner = nostr::decode_npub(npub);
    if (!owner) return respond({404, "text/plain; charset=utf-8", "not an npub\n"});
    system.spawn([actor, query = ReplicationQuery{*owner, std::move(identifier)},
                  respond = std::move(respond)](caf::event_based_actor* self) {
      self->request(actor, std::chrono::seconds(30), query)
          .then(
              [self, respond](const ReplicationAnswer& answer) {
                respond(http_answer(answer));
                self->quit();
              },
              [self, respond](caf::error&) {
                respond({503, "text/plain; charset=utf-8", "try again later\n"});
                self->quit();
              });
      return caf::behavior{[](atom::shutdown) {}};
    });
  };
}

void close_connections(const WiredReplication& wired) {
  if (wired.clients) wired.clients->close_all();
}

void stop(const WiredReplication& wired) {
  caf::anon_send_exit(wired.actor, caf::exit_reason::user_shutdown);
}

}  // namespace graspd::boot
