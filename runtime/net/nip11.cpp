#include "runtime/net/nip11.hpp"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "messages/nostr/event.hpp"
#include "runtime/ops/version.hpp"

namespace graspd::runtime {

namespace {

constexpr const char* software_url = "https://github.com/graspd/graspd";

void write_string(rapidjson::Writer<rapidjson::StringBuffer>& writer, const std::string& text) {
  writer.String(text.data(), static_cast<rapidjson::SizeType>(text.size()));
}

}  // namespace

RelayInformation relay_information(const Config& config) {
  RelayInformation info;
  info.name = config.relay_name.empty() ? "graspd" : config.relay_name;
  info.description = config.relay_description.empty()
                         ? "GRASP relay: git repositories announced and served over Nostr"
                         : config.relay_description;
  if (config.owner_npub) info.pubkey_hex = nostr::to_hex(*config.owner_npub);
  info.software = software_url;
  info.version = std::string(version());
  info.supported_nips = {1, 9, 11, 40, 45, 77};
  if (config.acceptance_policy == AcceptanceMode::grasp01)
    info.supported_grasps.push_back("GRASP-01");
  if (config.sync_enabled) info.supported_grasps.push_back("GRASP-02");
  // The Sync+ overlay extends the GRASP-02 manager: it runs only with it.
  if (config.sync_enabled && config.sync_plus_enabled) info.supported_grasps.push_back("GRASP-03");
  if (config.acceptance_policy == AcceptanceMode::open)
    info.repo_acceptance_criteria = "Stores every valid event (open relay mode).";
  else
    info.repo_acceptance_criteria =
        "Stores repository announcements (kind 30617) that list " + config.domain.text +
        " in both their clone and relays tags (or whose author maintains such a repository), "
        "state events from their maintainers, and events that reference a stored repository or "
        "event or are referenced by one; profiles and relay lists only from repository owners, "
        "maintainers and thread participants. Each repository announced with this service in "
        "its clone tag is hosted over git Smart HTTP at " +
        config.domain.text +
        "/<npub>/<identifier>.git, created when the announcement is accepted; a push is accepted "
        "only when the repository's branches and tags afterwards equal the newest state event "
        "(kind 30618) of the owner or their maintainers.";
  auto limit = [&info](const char* key, std::uint64_t value) {
    info.limitation.emplace_back(key, static_cast<std::int64_t>(value));
  };
  limit("max_message_length", config.max_message_bytes);
  limit("max_event_bytes", config.max_event_bytes);
  limit("max_subscriptions", config.max_subscriptions);
  // Not in NIP-11's list: lets a syncing node (graspd reads it) keep its live REQs within it.
  limit("max_subscription_values", config.max_subscription_values);
  limit("max_filters", config.max_filters);
  limit("max_limit", config.max_limit);
  limit("default_limit", config.default_limit);
  limit("max_subid_length", config.max_subid_length);
  limit("max_event_tags", config.max_event_tags);
  limit("max_content_length", config.max_content_length);
  limit("negentropy_max_sync_events", config.negentropy_max_sync_events);
  return info;
}

std::string nip11_json(const RelayInformation& info) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> writer(buffer);
  writer.StartObject();
  writer.Key("name");
  write_string(writer, info.name);
  writer.Key("description");
  write_string(writer, info.description);
  if (!info.pubkey_hex.empty()) {
    writer.Key("pubkey");
    write_string(writer, info.pubkey_hex);
  }
  writer.Key("software");
  write_string(writer, info.software);
  writer.Key("version");
  write_string(writer, info.version);
  writer.Key("supported_nips");
  writer.StartArray();
  for (int nip : info.supported_nips) writer.Int(nip);
  writer.EndArray();
  writer.Key("supported_grasps");
  writer.StartArray();
  for (const auto& grasp : info.supported_grasps) write_string(writer, grasp);
  writer.EndArray();
  writer.Key("repo_acceptance_criteria");
  write_string(writer, info.repo_acceptance_criteria);
  writer.Key("limitation");
  writer.StartObject();
  for (const auto& [key, value] : info.limitation) {
    write_string(writer, key);
    writer.Int64(value);
  }
  writer.EndObject();
  writer.EndObject();
  return std::string(buffer.GetString(), buffer.GetSize());
}

std::string build_nip11_document(const Config& config) {
  return nip11_json(relay_information(config));
}

}  // namespace graspd::runtime
