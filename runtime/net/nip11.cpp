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

bool any_archive_source(const Config& config) {
  return config.archive_all || !config.archive_whitelist.empty() ||
         !config.archive_grasp_services.empty();
}

std::string service_list(const Config& config) {
  std::string out;
  for (const auto& service : config.archive_grasp_services) {
    if (!out.empty()) out += ", ";
    out += service.port ? service.host + ":" + std::to_string(*service.port) : service.host;
  }
  return out;
}

/// What the archive rules take, as a phrase ("all repositories found on network", ...).
std::string archived_repositories(const Config& config) {
  if (config.archive_all) return "all repositories found on network";
  if (!config.archive_whitelist.empty()) return "whitelisted repositories and maintainers";
  return "repositories hosted on " + service_list(config);
}

/// NIP-11 `curation` (GRASP-01): ngit-grasp's sentences where it has one (clients compare them),
/// and one wherever a list or an archive rule curates, which ngit-grasp leaves out.
std::string curation_text(const Config& config) {
  std::vector<std::string> parts;
  const bool archives = any_archive_source(config);
  if (archives && config.archive_read_only)
    parts.push_back("Read-only sync of " + archived_repositories(config));
  else if (archives)
    parts.push_back(
        (config.repository_whitelist.empty()
             ? std::string("Accepts repositories that list this service")
             : std::string("Accepts only whitelisted repositories and maintainers that list this "
                           "service")) +
        ", and archives " + archived_repositories(config));
  else if (!config.repository_whitelist.empty())
    parts.push_back("Accepts only whitelisted repositories and maintainers that list this service");
  if (!config.repository_blacklist.empty())
    parts.push_back("Refuses the repositories on its blacklist");
  if (!config.event_blacklist.empty()) parts.push_back("Refuses events of blacklisted authors");
  std::string out;
  for (const auto& part : parts) out += (out.empty() ? "" : ". ") + part;
  return out;
}

/// The archive rules in force, for repo_acceptance_criteria; empty without any.
std::string archive_criteria(const Config& config) {
  if (!any_archive_source(config)) return "";
  std::string out =
      " Also accepted, as archives (GRASP-05: events synced, git data fetched from "
      "their clone URLs, no push taken): announcements of " +
      archived_repositories(config) + ".";
  if (config.archive_read_only)
    out += " Read-only: an announcement listing this service that is not archived is refused.";
  return out;
}

/// GRASP-06's sentence for repo_acceptance_criteria; empty when it is off.
std::string pr_submission_criteria(const Config& config) {
  if (!config.grasp06_enable) return "";
  return " Pull requests (GRASP-06): anyone may push refs/nostr/<event id> to " +
         config.domain.text +
         "/prs/<npub>/<identifier>.git (no other ref, no deletion, no move), and a pull request "
         "(kind 1618/1619) signed by that npub whose clone tag names that URL is accepted even "
         "when its repository is not here; it is served once its commit is pushed, and copied as "
         "refs/nostr/<id> into the repositories here it tags.";
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
  info.supported_nips = {1, 9, 11, 40, 45, 77, 86};
  if (config.acceptance_policy == AcceptanceMode::grasp01)
    info.supported_grasps.push_back("GRASP-01");
  if (config.sync_enabled) info.supported_grasps.push_back("GRASP-02");
  // The Sync+ overlay extends the GRASP-02 manager: it runs only with it.
  if (config.sync_enabled && config.sync_plus_enabled) info.supported_grasps.push_back("GRASP-03");
  if (config.acceptance_policy == AcceptanceMode::grasp01 && any_archive_source(config))
    info.supported_grasps.push_back("GRASP-05");
  if (config.acceptance_policy == AcceptanceMode::grasp01 && config.grasp06_enable)
    info.supported_grasps.push_back("GRASP-06");
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
        "(kind 30618) of the owner or their maintainers." +
        archive_criteria(config) + pr_submission_criteria(config);
  if (config.acceptance_policy == AcceptanceMode::grasp01) info.curation = curation_text(config);
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
  if (!info.curation.empty()) {
    writer.Key("curation");
    write_string(writer, info.curation);
  }
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
