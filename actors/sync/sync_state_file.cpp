// Content of the sync state file: each relay's confirmed items and last
// connection time as JSON, restored at start so a restart resumes with a
// catch-up instead of a full download.
#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "actors/sync/engine/sync_plan.hpp"
#include "messages/nostr/json.hpp"

namespace graspd::sync {

std::string SyncPlan::snapshot_json(std::int64_t now) const {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> w(buffer);
  auto string = [&](const std::string& text) {
    w.String(text.c_str(), static_cast<rapidjson::SizeType>(text.size()));
  };
  w.StartObject();
  w.Key("saved_at");
  w.Int64(now);
  w.Key("relays");
  w.StartArray();
  for (const auto& [relay, state] : relays_) {
    // A relay still connected is saved as if it disconnected now.
    auto last = state.status == ConnectionStatus::connected ? std::optional<std::int64_t>(now)
                                                            : state.last_connected;
    if (!last || state.confirmed.empty()) continue;
    w.StartObject();
    w.Key("url");
    string(relay);
    w.Key("last_connected");
    w.Int64(*last);
    w.Key("repos");
    w.StartArray();
    for (const auto& repo : state.confirmed.repos) string(repo);
    w.EndArray();
    w.Key("roots");
    w.StartArray();
    for (const auto& root : state.confirmed.roots) string(nostr::to_hex(root));
    w.EndArray();
    w.Key("states");
    w.StartArray();
    for (const auto& repo : state.confirmed.states) string(repo);
    w.EndArray();
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  return {buffer.GetString(), buffer.GetSize()};
}

bool SyncPlan::restore_json(const std::string& json) {
  rapidjson::Document doc;
  doc.Parse(json.c_str(), json.size());
  if (doc.HasParseError() || !doc.IsObject() || !doc.HasMember("relays") ||
      !doc["relays"].IsArray() || !doc.HasMember("saved_at") || !doc["saved_at"].IsInt64())
    return false;
  const auto saved_at = doc["saved_at"].GetInt64();
  for (const auto& entry : doc["relays"].GetArray()) {
    if (!entry.IsObject() || !entry.HasMember("url") || !entry["url"].IsString() ||
        !entry.HasMember("last_connected") || !entry["last_connected"].IsInt64())
      continue;
    auto& state = ensure_relay(entry["url"].GetString());
    state.last_connected = entry["last_connected"].GetInt64();
    state.disconnected_at = saved_at;
    for (auto [key, items] :
         {std::pair{"repos", &state.confirmed.repos}, std::pair{"states", &state.confirmed.states}})
      if (entry.HasMember(key) && entry[key].IsArray())
        for (const auto& repo : entry[key].GetArray())
          if (repo.IsString()) items->insert(repo.GetString());
    if (entry.HasMember("roots") && entry["roots"].IsArray())
      for (const auto& root : entry["roots"].GetArray()) {
        EventId id;
        if (root.IsString() && nostr::from_hex(root.GetString(), id))
          state.confirmed.roots.insert(id);
      }
  }
  return true;
}

std::optional<std::string> read_state_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

bool write_state_file(const std::string& path, const std::string& text, std::string& error) {
  auto temporary = path + ".tmp";
  {
    std::ofstream out(temporary, std::ios::trunc);
    out << text;
    if (!out) {
      error = "cannot write " + temporary;
      return false;
    }
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    error = "cannot replace " + path;
    return false;
  }
  return true;
}

}  // namespace graspd::sync
