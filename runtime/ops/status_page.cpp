#include "runtime/ops/status_page.hpp"

#include <rapidjson/document.h>

#include <algorithm>
#include <ctime>
#include <map>
#include <string_view>
#include <tuple>
#include <vector>

#include "messages/nostr/nip19.hpp"
#include "messages/nostr/nip34.hpp"
#include "runtime/net/http_routes.hpp"
#include "runtime/ops/status_page_assets.hpp"
#include "store/lmdb/event_store.hpp"

namespace graspd::runtime {

namespace {

using Values = std::map<std::string_view, std::string>;

/// Replaces every `{{key}}` of `page` by its (already escaped) value. Values are not scanned
/// again, so a `{{` inside a repository name stays text.
std::string fill(std::string_view page, const Values& values) {
  std::string out;
  out.reserve(page.size() * 2);
  while (true) {
    auto open = page.find("{{");
    auto close = open == std::string_view::npos ? open : page.find("}}", open);
    if (close == std::string_view::npos) break;
    out.append(page.substr(0, open));
    auto it = values.find(page.substr(open + 2, close - open - 2));
    if (it != values.end()) out += it->second;
    page.remove_prefix(close + 2);
  }
  out.append(page);
  return out;
}

std::string utc_text(std::int64_t seconds) {
  auto t = static_cast<std::time_t>(seconds);
  std::tm parts{};
  gmtime_r(&t, &parts);
  char text[32];
  auto length = std::strftime(text, sizeof text, "%Y-%m-%d %H:%M:%S UTC", &parts);
  return std::string(text, length);
}

std::string_view string_of(const rapidjson::Value& object, const char* key) {
  if (!object.IsObject()) return {};
  auto it = object.FindMember(key);
  if (it == object.MemberEnd() || !it->value.IsString()) return {};
  return {it->value.GetString(), it->value.GetStringLength()};
}

std::optional<std::int64_t> int_of(const rapidjson::Value& object, const char* key) {
  if (!object.IsObject()) return std::nullopt;
  auto it = object.FindMember(key);
  if (it == object.MemberEnd() || !it->value.IsInt64()) return std::nullopt;
  return it->value.GetInt64();
}

// ---- plots ----

constexpr int kPlotWidth = 480;
constexpr int kPlotHeight = 120;
constexpr int kPlotTop = 16;

/// Bars of one series of StatusHistory's buckets over the last `buckets` bucket lengths.
std::string plot_svg(const rapidjson::Document& history, const char* series) {
  std::string svg = "<svg class=\"plot\" viewBox=\"0 0 " + std::to_string(kPlotWidth) + " " +
                    std::to_string(kPlotHeight + 14) + "\" role=\"img\">";
  auto now = int_of(history, "now");
  auto bucket_secs = int_of(history, "bucket_secs");
  const rapidjson::Value* buckets = nullptr;
  if (history.IsObject() && history.HasMember("buckets") && history["buckets"].IsArray())
    buckets = &history["buckets"];
  if (!now || !bucket_secs || *bucket_secs <= 0 || !buckets) {
    return svg + "<text x=\"8\" y=\"60\">no data yet</text></svg>";
  }
  constexpr int kSlots = 24;
  auto first = *now - *now % *bucket_secs - (kSlots - 1) * *bucket_secs;
  // (slot, start, value) of the buckets inside the window; older ones are neither drawn nor scaled.
  std::vector<std::tuple<std::int64_t, std::int64_t, std::uint64_t>> bars;
  std::uint64_t highest = 0;
  for (const auto& bucket : buckets->GetArray()) {
    auto start = int_of(bucket, "start");
    if (!start || !bucket.HasMember(series) || !bucket[series].IsUint64()) continue;
    auto index = (*start - first) / *bucket_secs;
    if (*start < first || index >= kSlots) continue;
    bars.emplace_back(index, *start, bucket[series].GetUint64());
    highest = std::max(highest, bucket[series].GetUint64());
  }
  const double slot = static_cast<double>(kPlotWidth) / kSlots;
  for (auto [index, start, value] : bars) {
    if (highest == 0) break;
    auto height = static_cast<double>(kPlotHeight - kPlotTop) * static_cast<double>(value) /
                  static_cast<double>(highest);
    svg += "<rect x=\"" + std::to_string(static_cast<double>(index) * slot + 1) + "\" y=\"" +
           std::to_string(kPlotHeight - height) + "\" width=\"" + std::to_string(slot - 2) +
           "\" height=\"" + std::to_string(height) + "\"><title>" + utc_text(start) + ": " +
           std::to_string(value) + "</title></rect>";
  }
  svg += "<text x=\"4\" y=\"11\">max " + std::to_string(highest) + "</text>";
  svg += "<text x=\"4\" y=\"" + std::to_string(kPlotHeight + 12) + "\">24 h ago</text>";
  svg += "<text x=\"" + std::to_string(kPlotWidth - 4) + "\" y=\"" +
         std::to_string(kPlotHeight + 12) + "\" text-anchor=\"end\">now</text></svg>";
  return svg;
}

// ---- sync ----

std::string td(std::string_view text, std::string_view css_class = {}) {
  std::string cell = css_class.empty() ? "<td>" : "<td class=\"" + html_escape(css_class) + "\">";
  return cell + html_escape(text) + "</td>";
}

std::string relay_row(const rapidjson::Value& relay) {
  auto connect = int_of(relay, "last_connect");
  auto disconnect = int_of(relay, "last_disconnect");
  std::optional<std::int64_t> contact = connect;
  if (disconnect && (!contact || *disconnect > *contact)) contact = disconnect;
  auto stored =
      relay.IsObject() && relay.HasMember("events_stored") && relay["events_stored"].IsUint64()
          ? relay["events_stored"].GetUint64()
          : 0;
  bool bootstrap = relay.IsObject() && relay.HasMember("bootstrap") &&
                   relay["bootstrap"].IsBool() && relay["bootstrap"].GetBool();
  return "<tr>" + td(string_of(relay, "url")) +
         td(string_of(relay, "status"), string_of(relay, "status")) +
         td(string_of(relay, "health"), string_of(relay, "health")) +
         td(bootstrap ? "bootstrap" : string_of(relay, "role")) +
         td(contact ? utc_text(*contact) : "never") + td(std::to_string(stored), "num") +
         td(string_of(relay, "last_error"), "error") + "</tr>";
}

std::string control_row(const rapidjson::Value& relay) {
  bool open = relay.IsObject() && relay.HasMember("open") && relay["open"].IsBool() &&
              relay["open"].GetBool();
  const char* status = open ? "open" : "closed";
  return "<tr>" + td(string_of(relay, "url")) + td(status, status) + td("") +
         td(string_of(relay, "role")) + td("") + td("", "num") + td("", "error") + "</tr>";
}

void fill_sync(const std::shared_ptr<const std::string>& json, Values& values) {
  rapidjson::Document doc;
  if (!json || doc.Parse(json->c_str(), json->size()).HasParseError() || !doc.IsObject()) {
    values["sync_summary"] = "Sync (GRASP-02) is off on this relay.";
    return;
  }
  std::string rows;
  std::size_t relays = 0;
  if (doc.HasMember("relays") && doc["relays"].IsArray()) {
    for (const auto& relay : doc["relays"].GetArray()) rows += relay_row(relay), ++relays;
  }
  if (doc.HasMember("control_connections") && doc["control_connections"].IsArray()) {
    for (const auto& relay : doc["control_connections"].GetArray()) rows += control_row(relay);
  }
  auto followed = doc.HasMember("repositories") && doc["repositories"].IsUint64()
                      ? doc["repositories"].GetUint64()
                      : 0;
  values["sync_rows"] = rows;
  values["sync_summary"] = std::to_string(relays) + " tracked relays, " + std::to_string(followed) +
                           " repositories followed.";
}

// ---- repositories ----

std::string repository_row(const HostedRepository& repo) {
  auto npub = nostr::encode_npub(repo.author);
  auto naddr =
      nostr::encode_naddr(nostr::nip34::kind::repo_announcement, repo.author, repo.identifier);
  auto title = repo.name.empty() ? repo.identifier : repo.name;
  std::string search = title + " " + repo.identifier + " " + repo.description + " " + npub;
  std::transform(search.begin(), search.end(), search.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  std::string row = "<li data-search=\"" + html_escape(search) + "\"><a class=\"repo\" href=\"/" +
                    npub + "/" + html_escape(percent_encode(repo.identifier)) + ".git\">" +
                    html_escape(title) + "</a>";
  if (!repo.description.empty()) row += " <span>" + html_escape(repo.description) + "</span>";
  row += "<br><span class=\"meta\">by <a href=\"nostr:" + npub + "\">" + npub.substr(0, 14) + "…" +
         npub.substr(npub.size() - 6) + "</a> · <a href=\"nostr:" + naddr +
         "\">naddr</a> · announced " + utc_text(repo.created_at) + "</span></li>";
  return row;
}

void fill_repositories(const HostedRepositories& repositories, Values& values) {
  values["repository_count"] = std::to_string(repositories.total);
  std::string rows;
  for (const auto& repo : repositories.newest) rows += repository_row(repo);
  values["repository_rows"] = rows;
  if (repositories.total == 0) {
    values["repository_summary"] = "No repository is hosted here yet.";
  } else if (repositories.total > repositories.newest.size()) {
    values["repository_summary"] = "The newest " + std::to_string(repositories.newest.size()) +
                                   " of " + std::to_string(repositories.total) + ", newest first.";
  } else {
    values["repository_summary"] = "Newest first.";
  }
}

// ---- the relay ----

void fill_relay(const RelayInformation& info, const std::string& domain, Values& values) {
  values["name"] = html_escape(info.name.empty() ? "graspd" : info.name);
  values["description"] = html_escape(info.description);
  values["ws_url"] = html_escape("ws://" + domain);  // wss:// behind a TLS proxy
  values["git_url"] = html_escape(domain + "/<npub>/<identifier>.git");
  values["criteria"] = html_escape(info.repo_acceptance_criteria);
  std::string contact = "not published";
  nostr::Pubkey key{};
  if (!info.pubkey_hex.empty() && nostr::from_hex(info.pubkey_hex, key)) {
    auto npub = nostr::encode_npub(key);
    contact = "<a href=\"nostr:" + npub + "\">" + npub + "</a>";
  }
  values["contact"] = contact;
  std::string nips;
  for (int nip : info.supported_nips) nips += (nips.empty() ? "" : ", ") + std::to_string(nip);
  values["nips"] = nips;
  std::string grasps;
  for (const auto& g : info.supported_grasps) grasps += (grasps.empty() ? "" : ", ") + g;
  values["grasps"] = html_escape(grasps);
  values["software"] = html_escape(info.software);
  values["version"] = html_escape(info.version);
}

}  // namespace

HostedRepositories hosted_repositories(const store::EventStore& store, std::size_t max) {
  nostr::Filter filter;
  filter.kinds = std::vector<std::uint32_t>{nostr::nip34::kind::repo_announcement};
  HostedRepositories result;
  result.total = store.count({filter});
  filter.limit = max;
  store::QueryOptions options;
  options.max_limit = max;
  store.query(
      {filter},
      [&](const store::QueryHit& hit) {
        auto event = nostr::parse_event(hit.json, nostr::ParseLimits{});
        if (!event) return;
        result.newest.push_back({event->pubkey, std::string(event->d_tag()),
                                 std::string(event->first_tag_value("name")),
                                 std::string(event->first_tag_value("description")),
                                 event->created_at});
      },
      options);
  return result;
}

std::string status_page_html(const StatusPageInput& input) {
  Values values;
  values["css"] = status_assets::style_css;
  values["js"] = status_assets::app_js;
  if (input.info) fill_relay(*input.info, input.domain, values);
  fill_sync(input.sync_json, values);
  fill_repositories(input.repositories, values);
  rapidjson::Document history;
  if (input.history_json) history.Parse(input.history_json->c_str(), input.history_json->size());
  values["stored_plot"] = plot_svg(history, "stored");
  values["synced_plot"] = plot_svg(history, "synced");
  return fill(status_assets::index_html, values);
}

}  // namespace graspd::runtime
