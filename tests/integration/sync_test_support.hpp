// Helpers for the GRASP-02 end-to-end tests: the fault-injecting peer relay
// (tests/interop/fault_peer.mjs under node), a NIP-01 client for graspd and
// the peer, and reading graspd's /api/sync (which follows within one status interval, 1 s: read
// its figures inside wait_until).
#pragma once

#include <gtest/gtest.h>
#include <rapidjson/document.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "tests/integration/relay_test_helpers.hpp"
#include "tests/support/graspd_process.hpp"
#include "tests/support/http_client.hpp"
#include "tests/support/wait_until.hpp"

namespace graspd::test {

/// A script of tests/interop run with node for one test. It prints "listening <port>" once ready
/// (port() stays 0 when it did not start) and is killed when this object goes.
class NodeScript {
 public:
  NodeScript(const std::string& script, std::vector<std::string> args) {
    const char* source = std::getenv("GRASPD_SOURCE_DIR");
    std::string path = std::string(source ? source : ".") + "/tests/interop/" + script;
    std::vector<char*> argv{const_cast<char*>("node"), path.data()};
    for (auto& arg : args) argv.push_back(arg.data());
    argv.push_back(nullptr);
    int fds[2];
    if (::pipe(fds) != 0) return;
    pid_ = ::fork();
    if (pid_ == 0) {
      ::dup2(fds[1], STDOUT_FILENO);
      ::close(fds[0]);
      ::execvp("node", argv.data());
      ::_exit(127);
    }
    ::close(fds[1]);
    FILE* out = ::fdopen(fds[0], "r");
    char line[128] = {0};
    if (out && std::fgets(line, sizeof line, out)) std::sscanf(line, "listening %hu", &port_);
    if (out) std::fclose(out);
  }
  ~NodeScript() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  NodeScript(const NodeScript&) = delete;
  NodeScript& operator=(const NodeScript&) = delete;

  std::uint16_t port() const { return port_; }

 private:
  pid_t pid_ = -1;
  std::uint16_t port_ = 0;
};

/// The scriptable fault-injecting relay (tests/interop/fault_peer.mjs).
class FaultPeer {
 public:
  /// Listening on `host`: another loopback address than graspd's (127.0.0.2) when it plays an
  /// attacker.
  explicit FaultPeer(std::string host = "127.0.0.1")
      : process_("fault_peer.mjs", {"0", host}), host_(std::move(host)), port_(process_.port()) {}

  std::uint16_t port() const { return port_; }
  std::string url() const { return "ws://" + host_ + ":" + std::to_string(port_); }

  /// Sends a CONTROL message (settings as a JSON object) and waits for "ok".
  bool control(const std::string& settings_json) {
    auto reply = roundtrip("[\"CONTROL\"," + settings_json + "]");
    return reply.find("\"ok\"") != std::string::npos;
  }
  /// One statistic of the peer (connections, open_subscriptions, max_open_subscriptions, reqs).
  std::int64_t stat(const char* name) {
    auto reply = roundtrip("[\"STATS\"]");
    rapidjson::Document doc;
    doc.Parse(reply.c_str(), reply.size());
    if (doc.HasParseError() || !doc.IsArray() || doc.Size() < 2 || !doc[1].HasMember(name))
      return -1;
    return doc[1][name].GetInt64();
  }
  /// Stores an event on the peer (it checks nothing) over one kept connection. A fault may
  /// have dropped that connection without the client knowing yet, so a publish without an OK
  /// reconnects (waiting while the peer refuses connections) and tries again; the peer keeps
  /// each id once.
  bool seed(const nostr::Event& ev) {
    for (int attempt = 0; attempt < 3; ++attempt) {
      if (!seeder_ || !seeder_->ws().is_open()) reconnect_seeder();
      if (!seeder_) continue;
      seeder_->send(event_frame(ev));
      auto ok = seeder_->next_as<nostr::RelayOk>(std::chrono::seconds(2));
      if (ok && ok->accepted) return true;
      seeder_.reset();
    }
    ADD_FAILURE() << "fault peer did not store event " << nostr::to_hex(ev.id);
    return false;
  }

 private:
  void reconnect_seeder() {
    seeder_.reset();
    wait_until(
        [&] {
          runtime::WsClient::Options options;
          auto ws = runtime::WsClient::connect(host_, port_, "/", std::move(options));
          if (!ws) return false;
          (*ws)->close();
          return true;
        },
        std::chrono::seconds(10));
    seeder_ = TestClient::connect_with(port_, {}, host_);
  }

  std::string roundtrip(const std::string& frame) {
    runtime::WsClient::Options options;
    auto connected = runtime::WsClient::connect(host_, port_, "/", std::move(options));
    if (!connected) return {};
    auto& ws = *connected;
    ws->send(frame);
    auto reply = ws->receive(std::chrono::seconds(5));
    ws->close();
    return reply.value_or("");
  }

  NodeScript process_;
  std::string host_;
  std::uint16_t port_ = 0;
  std::unique_ptr<TestClient> seeder_;
};

/// Events of one repository: announcement, issues and comments.
struct RepoFixture {
  nostr::Event announcement;
  std::vector<nostr::Event> issues;
  std::vector<nostr::Event> comments;

  std::string address() const { return nostr::address_of(announcement); }
};

inline std::string host_of(const std::string& ws_url) {
  return ws_url.substr(5);
}

/// An announcement listing every relay in `relays` (clone and relays tags).
inline nostr::Event announcement_listing(const std::vector<std::string>& relays,
                                         const std::string& d = "demo",
                                         std::int64_t created_at = 1700000000) {
  nostr::Tag clone{"clone"}, relay_tag{"relays"};
  for (const auto& relay : relays) {
    clone.push_back("http://" + host_of(relay) + "/owner/" + d + ".git");
    relay_tag.push_back(relay);
  }
  return make_event(30617, "repository " + d, {{"d", d}, clone, relay_tag}, created_at, 11);
}

inline nostr::Event issue_for(const std::string& address, int n, std::int64_t created_at) {
  return make_event(1621, "issue " + std::to_string(n), {{"a", address}, {"subject", "s"}},
                    created_at, static_cast<std::uint8_t>(20 + n % 5));
}

inline nostr::Event comment_on(const nostr::Event& root, int n, std::int64_t created_at) {
  auto id = nostr::to_hex(root.id);
  return make_event(1111, "comment " + std::to_string(n), {{"E", id}, {"e", id}, {"K", "1621"}},
                    created_at, static_cast<std::uint8_t>(40 + n % 5));
}

/// How many of `events` graspd at `port` serves.
inline std::size_t stored_count(std::uint16_t port, const std::vector<nostr::Event>& events) {
  if (events.empty()) return 0;
  auto client = TestClient::connect(port);
  if (!client) return 0;
  std::string ids;
  for (const auto& ev : events) ids += (ids.empty() ? "\"" : ",\"") + nostr::to_hex(ev.id) + "\"";
  auto found = client->query("count", "{\"ids\":[" + ids + "],\"limit\":5000}");
  return found ? found->size() : 0;
}

/// The /api/sync entry of `relay` (an object), or null.
inline std::string sync_status(std::uint16_t port) {
  return http_get(port, "/api/sync").body;
}

inline std::int64_t relay_figure(std::uint16_t port, const std::string& relay, const char* key) {
  rapidjson::Document doc;
  auto body = sync_status(port);
  doc.Parse(body.c_str(), body.size());
  if (doc.HasParseError() || !doc.IsObject() || !doc.HasMember("relays")) return -1;
  for (const auto& entry : doc["relays"].GetArray())
    if (entry["url"].GetString() == relay && entry.HasMember(key) && entry[key].IsInt64())
      return entry[key].GetInt64();
  return -1;
}

/// A true/false field of `relay`'s /api/sync entry (e.g. "compression"); nullopt when the relay
/// or the field is not there.
inline std::optional<bool> relay_flag(std::uint16_t port, const std::string& relay,
                                      const char* key) {
  rapidjson::Document doc;
  auto body = sync_status(port);
  doc.Parse(body.c_str(), body.size());
  if (doc.HasParseError() || !doc.IsObject() || !doc.HasMember("relays")) return std::nullopt;
  for (const auto& entry : doc["relays"].GetArray())
    if (entry["url"].GetString() == relay && entry.HasMember(key) && entry[key].IsBool())
      return entry[key].GetBool();
  return std::nullopt;
}

/// A top-level count of graspd's /api/sync (e.g. "over_value_budget"), or -1.
inline std::int64_t sync_total(std::uint16_t port, const char* key) {
  rapidjson::Document doc;
  auto body = sync_status(port);
  doc.Parse(body.c_str(), body.size());
  if (doc.HasParseError() || !doc.IsObject() || !doc.HasMember(key) || !doc[key].IsInt64())
    return -1;
  return doc[key].GetInt64();
}

/// A text field of `relay`'s /api/sync entry (e.g. "status"), or "" when the relay or the field
/// is not there.
inline std::string relay_text(std::uint16_t port, const std::string& relay, const char* key) {
  rapidjson::Document doc;
  auto body = sync_status(port);
  doc.Parse(body.c_str(), body.size());
  if (doc.HasParseError() || !doc.IsObject() || !doc.HasMember("relays")) return "";
  for (const auto& entry : doc["relays"].GetArray())
    if (entry["url"].GetString() == relay && entry.HasMember(key) && entry[key].IsString())
      return entry[key].GetString();
  return "";
}

/// The `history_method` of `relay` in graspd's /api/sync ("negentropy", "req", "unknown"), or ""
/// when the relay is not listed.
inline std::string relay_history_method(std::uint16_t port, const std::string& relay) {
  return relay_text(port, relay, "history_method");
}

inline std::int64_t now_seconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

/// Publishes `events` to graspd at `port`, each accepted.
inline void publish_all(std::uint16_t port, const std::vector<nostr::Event>& events) {
  auto client = TestClient::connect(port);
  ASSERT_TRUE(client);
  for (const auto& ev : events) {
    auto ok = client->publish(ev);
    ASSERT_TRUE(ok && ok->accepted) << (ok ? ok->message : "no OK");
  }
}

/// Environment of a graspd that syncs from loopback peers quickly.
inline std::vector<std::pair<std::string, std::string>> fast_sync_env() {
  return {{"NGIT_SYNC_ALLOW_PRIVATE_ADDRESSES", "true"},
          {"NGIT_SYNC_BASE_BACKOFF_SECS", "1"},
          {"NGIT_SYNC_MAX_BACKOFF_SECS", "2"},
          {"NGIT_SYNC_BATCH_WINDOW_MS", "100"},
          {"NGIT_SYNC_RATE_LIMIT_COOLDOWN_SECS", "1"},
          {"NGIT_SYNC_DISCONNECT_CHECK_INTERVAL_SECS", "1"}};
}

}  // namespace graspd::test
