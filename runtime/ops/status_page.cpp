#include "runtime/ops/status_page.hpp"

#include <rapidjson/document.h>

#include <algorithm>
#include <ctime>
#include <map>
#include <optional>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "messages/nostr/nip19.hpp"
#include "messages/nostr/nip34.hpp"
#include "runtime/git/git_repository.hpp"
#include "runtime/net/http_routes.hpp"
#include "runtime/net/site_url.hpp"
#include "runtime/ops/status_page_assets.hpp"
#include "store/lmdb/event_store.hpp"

namespace graspd::runtime {

namespace {

using Values = std::map<std::string_view, std::string>;

/// Index entries the repository count examines at most (then shown as a lower bound).
constexpr std::uint64_t count_bound = 1'000'000;

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

/// Each shown field of a sync row is cut to this (the rows come from peers and events).
struct Cells {
  std::size_t max_field_bytes;
  std::string operator()(std::string_view text, std::string_view css_class = {}) const {
    std::string cell = css_class.empty()
                           ? "<td>"
                           : "<td class=\"" + html_escape(truncate_utf8(css_class, 32)) + "\">";
    return cell + html_escape(truncate_utf8(text, max_field_bytes)) + "</td>";
  }
};

std::string relay_row(const rapidjson::Value& relay, const Cells& td) {
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

std::string control_row(const rapidjson::Value& relay, const Cells& td) {
  bool open = relay.IsObject() && relay.HasMember("open") && relay["open"].IsBool() &&
              relay["open"].GetBool();
  const char* status = open ? "open" : "closed";
  return "<tr>" + td(string_of(relay, "url")) + td(status, status) + td("") +
         td(string_of(relay, "role")) + td("") + td("", "num") + td("", "error") + "</tr>";
}

/// Rows are added while they fit in `budget` bytes; the summary says how many did not.
void fill_sync(const std::shared_ptr<const std::string>& json, const Cells& td, std::size_t budget,
               Values& values) {
  rapidjson::Document doc;
  if (!json || doc.Parse(json->c_str(), json->size()).HasParseError() || !doc.IsObject()) {
    values["sync_summary"] = "Sync (GRASP-02) is off on this relay.";
    return;
  }
  std::string rows;
  std::size_t relays = 0;
  std::size_t left_out = 0;
  auto add = [&](std::string row) {
    if (rows.size() + row.size() > budget) return void(++left_out);
    rows += row;
  };
  if (doc.HasMember("relays") && doc["relays"].IsArray()) {
    for (const auto& relay : doc["relays"].GetArray()) add(relay_row(relay, td)), ++relays;
  }
  if (doc.HasMember("control_connections") && doc["control_connections"].IsArray()) {
    for (const auto& relay : doc["control_connections"].GetArray()) add(control_row(relay, td));
  }
  auto followed = doc.HasMember("repositories") && doc["repositories"].IsUint64()
                      ? doc["repositories"].GetUint64()
                      : 0;
  values["sync_rows"] = rows;
  values["sync_summary"] = std::to_string(relays) + " tracked relays, " + std::to_string(followed) +
                           " repositories followed.";
  if (left_out > 0)
    values["sync_summary"] += " " + std::to_string(left_out) + " rows not shown (page size limit).";
}

// ---- replication ----

/// The StatusBoard's "replication" document, indexed by repository key (`30617:<hex>:<d>`):
/// parsed once per rendering, looked up once per repository row.
class ReplicationFigures {
 public:
  explicit ReplicationFigures(const std::shared_ptr<const std::string>& json) {
    if (!json || doc_.Parse(json->c_str(), json->size()).HasParseError() || !doc_.IsObject())
      return;
    // Through a const reference: clang finds the mutable iterators' comparisons ambiguous.
    const rapidjson::Value& doc = doc_;
    auto map = doc.FindMember("repositories");
    if (map == doc.MemberEnd() || !map->value.IsObject()) return;
    for (const auto& entry : map->value.GetObject())
      if (entry.value.IsObject())
        by_key_.emplace(std::string_view(entry.name.GetString(), entry.name.GetStringLength()),
                        &entry.value);
  }

  /// The figures of `repo`; null when it was not measured yet.
  const rapidjson::Value* find(const HostedRepository& repo) const {
    auto key = std::to_string(nostr::nip34::kind::repo_announcement) + ":" +
               nostr::to_hex(repo.author) + ":" + repo.identifier;
    auto it = by_key_.find(key);
    return it == by_key_.end() ? nullptr : it->second;
  }

 private:
  rapidjson::Document doc_;
  std::unordered_map<std::string_view, const rapidjson::Value*> by_key_;
};

std::optional<std::uint64_t> uint_of(const rapidjson::Value& object, const char* key) {
  auto it = object.FindMember(key);
  if (it == object.MemberEnd() || !it->value.IsUint64()) return std::nullopt;
  return it->value.GetUint64();
}

/// "4/4 relays complete, 2/3 servers current, measured <time>"; "replication not checked yet"
/// without figures (the repository is not in the map, or its entry lacks a figure).
std::string replication_text(const rapidjson::Value* figures) {
  constexpr std::string_view unchecked = "replication not checked yet";
  if (!figures) return std::string(unchecked);
  auto relays = uint_of(*figures, "relays");
  auto complete = uint_of(*figures, "relays_complete");
  auto servers = uint_of(*figures, "servers");
  auto current = uint_of(*figures, "servers_current");
  if (!relays || !complete || !servers || !current) return std::string(unchecked);
  auto text = std::to_string(*complete) + "/" + std::to_string(*relays) + " relays complete, " +
              std::to_string(*current) + "/" + std::to_string(*servers) + " servers current";
  if (auto at = int_of(*figures, "measured_at")) text += ", measured " + utc_text(*at);
  return text;
}

// ---- repositories ----

/// What every repository row needs besides its announcement.
struct RowContext {
  std::string_view domain;
  const ReplicationFigures& replication;
  std::size_t max_field_bytes;
};

/// The row's clone URL and replication line: the figures at a glance, the repository page's
/// Replication section and the JSON behind it.
std::string repository_links(const HostedRepository& repo, const RowContext& context) {
  auto page = html_escape(repository_path(repo.author, repo.identifier));
  auto figures = context.replication.find(repo);
  return "<br><code class=\"clone\">" +
         html_escape(repository_clone_url(context.domain, repo.author, repo.identifier)) +
         "</code><br><span class=\"replication" + (figures ? "" : " unchecked") + "\">" +
         html_escape(replication_text(figures)) + " · <a href=\"" + page +
         "#replication\">replication</a> · <a href=\"" +
         html_escape(replication_api_path(repo.author, repo.identifier)) + "\">JSON</a></span>";
}

std::string repository_row(const HostedRepository& repo, const RowContext& context) {
  auto max_field_bytes = context.max_field_bytes;
  auto npub = nostr::encode_npub(repo.author);
  auto naddr =
      nostr::encode_naddr(nostr::nip34::kind::repo_announcement, repo.author, repo.identifier);
  auto shown_identifier = truncate_utf8(repo.identifier, max_field_bytes);
  auto title = truncate_utf8(repo.name.empty() ? repo.identifier : repo.name, max_field_bytes);
  auto description = truncate_utf8(repo.description, max_field_bytes);
  std::string search = title + " " + shown_identifier + " " + description + " " + npub;
  std::transform(search.begin(), search.end(), search.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  std::string row = "<li data-search=\"" + html_escape(search) + "\"><a class=\"repo\" href=\"" +
                    html_escape(repository_path(repo.author, repo.identifier)) + "\">" +
                    html_escape(title) + "</a>";
  if (!description.empty()) row += " <span>" + html_escape(description) + "</span>";
  row += repository_links(repo, context);
  row += "<br><span class=\"meta\">by <a href=\"nostr:" + npub + "\">" + npub.substr(0, 14) + "…" +
         npub.substr(npub.size() - 6) + "</a> · <a href=\"nostr:" + naddr +
         "\">naddr</a> · announced " + utc_text(repo.created_at) + "</span></li>";
  return row;
}

/// Rows are added, newest first, while they fit in `budget` bytes.
void fill_repositories(const HostedRepositories& repositories, const RowContext& context,
                       std::size_t budget, Values& values) {
  values["repository_count"] = std::to_string(repositories.total);
  std::string rows;
  std::size_t shown = 0;
  for (const auto& repo : repositories.newest) {
    auto row = repository_row(repo, context);
    if (rows.size() + row.size() > budget) break;
    rows += row;
    ++shown;
  }
  values["repository_rows"] = rows;
  if (repositories.total == 0) {
    values["repository_summary"] = "No repository is hosted here yet.";
  } else if (shown < repositories.newest.size()) {
    values["repository_summary"] = "The newest " + std::to_string(shown) + " of " +
                                   std::to_string(repositories.total) +
                                   ", newest first (page size limit).";
  } else if (repositories.total > shown) {
    values["repository_summary"] = "The newest " + std::to_string(shown) + " of " +
                                   std::to_string(repositories.total) + ", newest first.";
  } else {
    values["repository_summary"] = "Newest first.";
  }
}

// ---- the relay ----

void fill_relay(const RelayInformation& info, const std::string& domain, Values& values) {
  values["name"] = html_escape(info.name.empty() ? "graspd" : info.name);
  values["description"] = html_escape(info.description);
  values["ws_url"] = html_escape(site_url(domain, SiteProtocol::websocket));
  values["git_url"] =
      html_escape(site_url(domain, SiteProtocol::http) + "/<npub>/<identifier>.git");
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

std::string truncate_utf8(std::string_view text, std::size_t max_bytes) {
  if (text.size() <= max_bytes) return std::string(text);
  constexpr std::string_view ellipsis = "…";
  if (max_bytes < ellipsis.size()) return {};
  auto cut = max_bytes - ellipsis.size();
  // Back to the start of a character: continuation bytes are 10xxxxxx.
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xc0) == 0x80) --cut;
  return std::string(text.substr(0, cut)) + std::string(ellipsis);
}

HostedRepositories hosted_repositories(const store::EventStore& store,
                                       const StatusPageLimits& limits) {
  nostr::Filter filter;
  filter.kinds = std::vector<std::uint32_t>{nostr::nip34::kind::repo_announcement};
  HostedRepositories result;
  // Bounded like a client's COUNT: the figure is shown, never worth an unbounded scan.
  result.total = store.count_bounded({filter}, count_bound).count;
  filter.limit = limits.repositories;
  store::QueryOptions options;
  options.max_limit = limits.repositories;
  // Parsing is the cost (an announcement may be as large as the relay accepts): past the budget
  // the rest of the newest are not read, and the page lists fewer.
  std::size_t scan_budget = 16 * limits.max_bytes;
  std::size_t scanned = 0;
  store.query(
      {filter},
      [&](const store::QueryHit& hit) {
        if (scanned + hit.json.size() > scan_budget) return void(scanned = scan_budget);
        scanned += hit.json.size();
        auto event = nostr::parse_event(hit.json, nostr::ParseLimits{});
        // An identifier git hosting would refuse names no repository here: no row to link.
        if (!event || event->d_tag().size() > git::max_identifier_bytes) return;
        result.newest.push_back(
            {event->pubkey, std::string(event->d_tag()),
             truncate_utf8(event->first_tag_value("name"), limits.max_field_bytes),
             truncate_utf8(event->first_tag_value("description"), limits.max_field_bytes),
             event->created_at});
      },
      options);
  return result;
}

std::string status_page_html(const StatusPageInput& input) {
  const auto& limits = input.limits;
  Values values;
  values["css"] = status_assets::style_css;
  values["js"] = status_assets::app_js;
  if (input.info) fill_relay(*input.info, input.domain, values);
  ReplicationFigures replication(input.replication_json);
  RowContext rows{input.domain, replication, limits.max_field_bytes};
  fill_sync(input.sync_json, Cells{limits.max_field_bytes}, 0, values);
  fill_repositories(input.repositories, rows, 0, values);
  rapidjson::Document history;
  if (input.history_json) history.Parse(input.history_json->c_str(), input.history_json->size());
  values["stored_plot"] = plot_svg(history, "stored");
  values["synced_plot"] = plot_svg(history, "synced");
  // The fixed part first (the operator's texts, the plots, the assets); the lists share what is
  // left of the cap, the sync rows at most half of it. The slack covers the summaries' growth.
  constexpr std::size_t summary_slack = 512;
  auto fixed = fill(status_assets::index_html, values).size() + summary_slack;
  auto budget = limits.max_bytes > fixed ? limits.max_bytes - fixed : 0;
  fill_sync(input.sync_json, Cells{limits.max_field_bytes}, budget / 2, values);
  auto sync_bytes = values["sync_rows"].size();
  fill_repositories(input.repositories, rows, budget - sync_bytes, values);
  return fill(status_assets::index_html, values);
}

}  // namespace graspd::runtime
