// The fixture shared by the sync manager and relay connection tests: a sync manager over a real
// LMDB store in a temp dir, whose relay connections dial a scripted peer instead of the network.
#pragma once

#include <gtest/gtest.h>
#include <rapidjson/document.h>
#include <caf/typed_event_based_actor.hpp>

#include "actors/relay/verifier.hpp"
#include "actors/store/store_writer.hpp"
#include "actors/sync/sync_manager.hpp"
#include "messages/nostr/json.hpp"
#include "messages/nostr/relay_message.hpp"
#include "tests/support/actor_fixture.hpp"
#include "tests/support/nostr_builders.hpp"
#include "tests/support/temp_dir.hpp"

namespace graspd::sync_test {

using namespace std::chrono_literals;

/// A peer relay scripted by the test: records what graspd sends and lets the
/// test deliver frames or drop the connection through the handler.
struct ScriptedPeer : runtime::RelayClient {
  std::shared_ptr<runtime::RelayClientHandler> handler;
  std::vector<std::string> sent;
  bool closed = false;
  bool paused = false;
  void send(std::string text) override { sent.push_back(std::move(text)); }
  void close() override { closed = true; }
  void pause_reading() override { paused = true; }
  void resume_reading() override { paused = false; }
  std::size_t consumed_bytes = 0;  // reported through consumed()
  void consumed(std::size_t bytes) override { consumed_bytes += bytes; }

  /// The frames sent so far whose verb is `verb`, parsed.
  std::vector<std::string> frames(const std::string& verb) const {
    std::vector<std::string> out;
    for (const auto& frame : sent)
      if (frame.rfind("[\"" + verb + "\"", 0) == 0) out.push_back(frame);
    return out;
  }

  /// Subscription ids and filters of the REQ frames sent so far.
  std::vector<std::pair<std::string, nostr::Filters>> reqs() const {
    std::vector<std::pair<std::string, nostr::Filters>> out;
    for (const auto& frame : sent) {
      rapidjson::Document doc;
      doc.Parse(frame.c_str(), frame.size());
      if (std::string(doc[0].GetString()) != "REQ") continue;
      nostr::Filters filters;
      for (rapidjson::SizeType i = 2; i < doc.Size(); ++i)
        filters.push_back(nostr::parse_filter(doc[i], nostr::ParseLimits{}).value());
      out.emplace_back(doc[1].GetString(), std::move(filters));
    }
    return out;
  }
};

using test::signed_event;

/// A sync manager over a real store writer, dialling scripted peers: the relay connections it
/// spawns are the real ones, so both actors are tested through it.
class SyncFixture : public test::ActorTest {
 protected:
  SyncFixture() {
    store::StoreOptions options;
    options.path = dir_.path();
    store_ = std::make_shared<store::EventStore>(options);
    writer_ = spawn(store_writer, store_, StoreWriterConfig{});
    run();
  }

  std::int64_t unix_now() {
    return 1'700'000'000 +
           std::chrono::duration_cast<std::chrono::seconds>(now().time_since_epoch()).count();
  }

  /// Verifies on two real verifier actors unless `verifiers` says otherwise (empty = inline).
  sync_manager_actor start_manager(std::optional<std::string> bootstrap = std::nullopt,
                                   std::optional<std::vector<verifier_actor>> verifiers = {}) {
    SyncManagerConfig config;
    config.bootstrap_relay = bootstrap;
    config.peers = cluster_peers_;
    config.unix_now = [this] { return unix_now(); };
    config.connection.traffic_report_interval = 1s;
    config.connection.already_stored = [this](const nostr::EventId& id) {
      return store_->contains(id);
    };
    config.connection.local_records = [this](const nostr::Filter& filter, std::size_t max) {
      return store_->negentropy_items(filter, max);
    };
    config.connection.verifiers =
        verifiers ? *verifiers : std::vector<verifier_actor>{spawn(verifier), spawn(verifier)};
    config.random_seed = 42;
    config.purgatory = purgatory_;
    config.connection.auth_key = auth_key_;
    auto factory = [this](const ParsedUrl& url, const runtime::RelayClientOptions& options,
                          std::shared_ptr<runtime::RelayClientHandler> handler) {
      auto peer = std::make_shared<ScriptedPeer>();
      peer->handler = std::move(handler);
      dials_.push_back({url.host, options.allow_private_addresses});
      peers_.push_back(peer);
      return peer;
    };
    manager_ = spawn(sync_manager, config, acceptance_, writer_, factory, board_, nullptr);
    run();
    return manager_;
  }

  SyncManagerState& manager_state() {
    return state<SyncManagerState, sync_manager_actor::base>(manager_);
  }
  const sync::RelayState& relay_state(const std::string& relay) {
    return manager_state().plan->relays().at(relay);
  }

  RepoDiscovery discovery(const std::string& repo, std::set<std::string> relays,
                          std::set<nostr::EventId> roots = {}) {
    RepoDiscovery d;
    d.repos.push_back(RepoDiscovery::Repo{repo, std::move(relays), std::move(roots)});
    return d;
  }

  /// What the scripted peers' NIP-11 says: NIPs listed without 77, so history is paged by REQ.
  static runtime::PeerLimits req_only_peer() {
    runtime::PeerLimits limits;
    limits.nip77 = false;
    return limits;
  }

  /// Starts the manager, discovers repo_ on relay_ and opens the scripted connection.
  void connect_first_peer(std::optional<std::vector<verifier_actor>> verifiers = {}) {
    start_manager(std::nullopt, std::move(verifiers));
    anon_send(manager_, discovery(repo_, {relay_}));
    run();
    peers_[0]->handler->on_open(req_only_peer(), false);
    run();
  }

  /// Answers every REQ not answered yet with EOSE (an empty remote history).
  void answer_all_with_eose(ScriptedPeer& peer) {
    for (const auto& [id, filters] : peer.reqs()) {
      if (answered_.count(id)) continue;
      answered_.insert(id);
      peer.handler->on_message(nostr::relay_eose(id));
    }
    run();
  }

  test::TempDir dir_{"graspd-sync-actors"};
  std::shared_ptr<store::EventStore> store_;
  store_writer_actor writer_;
  sync_manager_actor manager_;
  std::shared_ptr<runtime::StatusBoard> board_ = std::make_shared<runtime::StatusBoard>();
  /// NGIT_SYNC_PEERS and the acceptance actor the manager is given (set before start_manager).
  std::vector<std::string> cluster_peers_;
  acceptance_actor acceptance_;
  /// Purgatory figures shown in /api/sync; null = no section (set before start_manager).
  std::shared_ptr<policy::PurgatoryFigures> purgatory_;
  /// The relay key that answers peers' AUTH challenges; unset = none (set before start_manager).
  std::optional<nostr::SecretKey> auth_key_;
  std::vector<std::shared_ptr<ScriptedPeer>> peers_;
  std::vector<std::pair<std::string, bool>> dials_;
  std::set<std::string> answered_;
  const std::string repo_ = "30617:" + std::string(64, 'a') + ":demo";
  const std::string relay_ = "wss://peer.example";
};

}  // namespace graspd::sync_test
