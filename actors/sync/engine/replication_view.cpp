#include "actors/sync/engine/replication_view.hpp"

#include <algorithm>

#include "actors/ops/status_json.hpp"
#include "messages/nostr/nip19.hpp"
#include "messages/nostr/nip34.hpp"
#include "messages/relay_url.hpp"

namespace graspd::sync {

namespace {

namespace nip34 = nostr::nip34;

/// Root ids per e/E/q filter, like the sync filters (one NIP-77 session each).
constexpr std::size_t roots_per_filter = 100;

nostr::Filter tagging(char letter, std::vector<std::string> values) {
  nostr::Filter filter;
  filter.tags[letter] = std::move(values);
  filter.normalize();
  return filter;
}

void write_optional(JsonWriter& w, const char* key, const std::optional<std::uint64_t>& value) {
  w.Key(key);
  value ? w.Uint64(*value) : w.Null();
}

void write_time(JsonWriter& w, const char* key, const std::optional<std::int64_t>& value) {
  w.Key(key);
  value ? w.Int64(*value) : w.Null();
}

void write_bool(JsonWriter& w, const char* key, const std::optional<bool>& value) {
  w.Key(key);
  value ? w.Bool(*value) : w.Null();
}

void write_reason(JsonWriter& w, const Measurement& m) {
  w.Key("reason");
  m.reason.empty() ? w.Null() : w.String(m.reason.c_str(), m.reason.size());
}

void write_string(JsonWriter& w, const char* key, const std::string& value) {
  w.Key(key);
  w.String(value.c_str(), static_cast<rapidjson::SizeType>(value.size()));
}

void write_state(JsonWriter& w, const RepositoryTargets& targets) {
  w.Key("state");
  if (!targets.state_id) return void(w.Null());
  w.StartObject();
  write_string(w, "id", *targets.state_id);
  w.Key("created_at");
  w.Int64(targets.state_created_at);
  w.EndObject();
}

void write_relays(JsonWriter& w, const RepositoryReplication& replication) {
  w.Key("relays");
  w.StartArray();
  for (const auto& [url, source] : replication.targets.relays) {
    auto it = replication.relays.find(url);
    const RelayFigures figures = it == replication.relays.end() ? RelayFigures{} : it->second;
    w.StartObject();
    write_string(w, "url", url);
    write_string(w, "source", source == RelaySource::announcement ? "announcement" : "sync_plus");
    write_optional(w, "only_there", figures.only_there);
    write_optional(w, "only_here", figures.only_here);
    write_bool(w, "complete", complete(figures));
    write_time(w, "measured_at", figures.measured_at);
    w.Key("pending");
    w.Bool(figures.pending);
    write_reason(w, figures);
    w.EndObject();
  }
  w.EndArray();
}

void write_refs(JsonWriter& w, const ServerRefs& server, const RepositoryTargets& targets) {
  w.Key("refs");
  w.StartArray();
  for (const auto& [ref, want] : targets.wanted_refs) {
    w.StartObject();
    write_string(w, "ref", ref);
    write_string(w, "want", want);
    w.Key("have");
    const std::string* have = nullptr;
    if (server.refs)
      if (auto it = server.refs->find(ref); it != server.refs->end()) have = &it->second;
    have ? w.String(have->c_str(), have->size()) : w.Null();
    w.Key("status");
    if (!server.refs)
      w.Null();
    else
      w.String(!have ? "missing" : *have == want ? "current" : "differs");
    w.EndObject();
  }
  w.EndArray();
}

void write_servers(JsonWriter& w, const RepositoryReplication& replication) {
  const auto& targets = replication.targets;
  w.Key("servers");
  w.StartArray();
  for (const auto& url : targets.servers) {
    auto it = replication.servers.find(url);
    const ServerRefs server = it == replication.servers.end() ? ServerRefs{} : it->second;
    w.StartObject();
    write_string(w, "url", url);
    w.Key("self");
    w.Bool(targets.own_servers.contains(url));
    write_bool(w, "current", current(server, targets));
    write_time(w, "measured_at", server.measured_at);
    w.Key("pending");
    w.Bool(server.pending);
    write_reason(w, server);
    write_refs(w, server, targets);
    w.EndObject();
  }
  w.EndArray();
}

void write_summary(JsonWriter& w, const ReplicationSummary& summary) {
  w.StartObject();
  write_count(w, "relays", summary.relays);
  write_count(w, "relays_complete", summary.relays_complete);
  write_count(w, "servers", summary.servers);
  write_count(w, "servers_current", summary.servers_current);
  write_time(w, "measured_at", summary.measured_at);
  w.EndObject();
}

void newest(std::optional<std::int64_t>& into, const std::optional<std::int64_t>& value) {
  if (value && (!into || *value > *into)) into = value;
}

}  // namespace

std::vector<std::string> announced_relays(const nostr::Event& announcement) {
  std::vector<std::string> out;
  for (const auto& url : nip34::tag_values(announcement, nip34::tag::relays)) {
    auto key = untrusted_relay_key(url);
    if (key && std::find(out.begin(), out.end(), *key) == out.end()) out.push_back(*key);
  }
  return out;
}

nostr::Filters replication_filters(const std::string& repo, const std::string& identifier,
                                   const std::set<nostr::Pubkey>& maintainers,
                                   const std::set<nostr::EventId>& roots) {
  nostr::Filters out;
  nostr::Filter own;
  own.kinds = std::vector<std::uint32_t>{nip34::kind::repo_announcement, nip34::kind::repo_state};
  own.authors = std::vector<nostr::Pubkey>(maintainers.begin(), maintainers.end());
  own.tags['d'] = {identifier};
  own.normalize();
  out.push_back(std::move(own));
  for (char letter : {'a', 'A', 'q'}) out.push_back(tagging(letter, {repo}));
  std::vector<std::string> chunk;
  auto flush = [&] {
    for (char letter : {'e', 'E', 'q'}) out.push_back(tagging(letter, chunk));
    chunk.clear();
  };
  for (const auto& root : roots) {
    chunk.push_back(nostr::to_hex(root));
    if (chunk.size() == roots_per_filter) flush();
  }
  if (!chunk.empty()) flush();
  return out;
}

std::optional<bool> complete(const RelayFigures& figures) {
  if (!figures.only_there || !figures.only_here) return std::nullopt;
  return *figures.only_there == 0 && *figures.only_here == 0;
}

std::optional<bool> current(const ServerRefs& server, const RepositoryTargets& targets) {
  if (!server.refs || !targets.state_id) return std::nullopt;
  for (const auto& [ref, want] : targets.wanted_refs) {
    auto it = server.refs->find(ref);
    if (it == server.refs->end() || it->second != want) return false;
  }
  return true;
}

ReplicationSummary RepositoryReplication::summary() const {
  ReplicationSummary out;
  out.relays = targets.relays.size();
  out.servers = targets.servers.size();
  for (const auto& [url, source] : targets.relays) {
    auto it = relays.find(url);
    if (it == relays.end()) continue;
    if (complete(it->second).value_or(false)) ++out.relays_complete;
    newest(out.measured_at, it->second.measured_at);
  }
  for (const auto& url : targets.servers) {
    auto it = servers.find(url);
    if (it == servers.end()) continue;
    if (current(it->second, targets).value_or(false)) ++out.servers_current;
    newest(out.measured_at, it->second.measured_at);
  }
  return out;
}

bool RepositoryReplication::pending() const {
  auto busy = [](const auto& entry) { return entry.second.pending; };
  return std::any_of(relays.begin(), relays.end(), busy) ||
         std::any_of(servers.begin(), servers.end(), busy);
}

std::string replication_json(const RepositoryReplication& replication) {
  const auto& targets = replication.targets;
  rapidjson::StringBuffer buffer;
  JsonWriter w(buffer);
  w.StartObject();
  write_string(w, "repository", targets.repo);
  write_string(w, "npub", nostr::encode_npub(targets.owner));
  write_string(w, "identifier", targets.identifier);
  write_state(w, targets);
  write_relays(w, replication);
  write_servers(w, replication);
  w.Key("summary");
  write_summary(w, replication.summary());
  w.EndObject();
  return {buffer.GetString(), buffer.GetSize()};
}

RepositoryReplication& ReplicationCache::refresh(RepositoryTargets targets) {
  auto repo = targets.repo;
  auto [it, added] = entries_.try_emplace(repo);
  auto& entry = it->second;
  std::erase_if(entry.relays, [&](const auto& kept) {
    return std::none_of(targets.relays.begin(), targets.relays.end(),
                        [&](const auto& relay) { return relay.first == kept.first; });
  });
  std::erase_if(entry.servers, [&](const auto& kept) {
    return std::find(targets.servers.begin(), targets.servers.end(), kept.first) ==
           targets.servers.end();
  });
  entry.targets = std::move(targets);
  if (!added) recency_.remove(repo);
  recency_.push_front(repo);
  evict();
  return entries_.at(repo);
}

RepositoryReplication* ReplicationCache::find(const std::string& repo) {
  auto it = entries_.find(repo);
  return it == entries_.end() ? nullptr : &it->second;
}

void ReplicationCache::evict() {
  // From the least recently used; the most recent one (the caller's) always stays.
  auto it = recency_.end();
  while (entries_.size() > max_ && it != recency_.begin()) {
    --it;
    if (it == recency_.begin()) break;
    auto entry = entries_.find(*it);
    if (entry->second.pending()) continue;
    entries_.erase(entry);
    it = recency_.erase(it);
  }
}

std::string ReplicationCache::summary_json() const {
  rapidjson::StringBuffer buffer;
  JsonWriter w(buffer);
  w.StartObject();
  w.Key("repositories");
  w.StartObject();
  for (const auto& [repo, entry] : entries_) {
    auto summary = entry.summary();
    if (!summary.measured_at) continue;
    w.Key(repo.c_str(), static_cast<rapidjson::SizeType>(repo.size()));
    write_summary(w, summary);
  }
  w.EndObject();
  w.EndObject();
  return {buffer.GetString(), buffer.GetSize()};
}

}  // namespace graspd::sync
