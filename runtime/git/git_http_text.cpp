// The texts git hosting writes itself: pkt-lines, the report-status of a refused push, the HTML
// page of a repository (with its replication view), and the check of a forwarded Git-Protocol
// header.
#include <cctype>
#include <cstdio>

#include "messages/nostr/nip19.hpp"
#include "runtime/git/git_http.hpp"
#include "runtime/git/repository_page_assets.hpp"
#include "runtime/net/http_routes.hpp"
#include "runtime/net/site_url.hpp"

namespace graspd::runtime::git {

using ::graspd::git::PushDecision;

std::string pkt_line(std::string_view payload) {
  char length[5];
  std::snprintf(length, sizeof length, "%04zx", payload.size() + 4);
  return std::string(length, 4) + std::string(payload);
}

std::string refusal_report(const PushDecision& decision, bool side_band) {
  std::string report = pkt_line("unpack ok\n");
  for (const auto& ref : decision.refs) {
    // A reason must stay on one line; keep it printable.
    std::string reason = ref.ok ? "refused with the rest of the push" : ref.reason;
    for (auto& c : reason)
      if (static_cast<unsigned char>(c) < 0x20) c = ' ';
    report += pkt_line("ng " + ref.ref + " " + reason + "\n");
  }
  report += "0000";
  if (!side_band) return report;
  std::string out;
  out += pkt_line("\2" + std::string("graspd: push refused: ") + decision.reason + "\n");
  // Band 1 carries the report, in pieces that fit a side-band-64k packet.
  constexpr std::size_t max_payload = 65515;
  for (std::size_t at = 0; at < report.size(); at += max_payload)
    out += pkt_line("\1" + report.substr(at, max_payload));
  out += "0000";
  return out;
}

namespace {

/// The Replication section of a repository's page: empty tables the embedded script fills from
/// the replication view's JSON (textContent only); without JavaScript, a link to that JSON.
std::string replication_section(const RepositoryRef& name) {
  auto json = html_escape(replication_api_path(name.owner, name.identifier));
  return "<section id=\"replication\" data-src=\"" + json +
         "\">\n<h2>Replication</h2>\n<p id=\"replication-summary\"></p>\n"
         "<noscript><p>The replication view as <a href=\"" +
         json +
         "\">JSON</a>.</p></noscript>\n"
         "<table id=\"replication-relays\" hidden><caption>Relays</caption><thead><tr>"
         "<th>Relay</th><th>Source</th><th>Only there</th><th>Only here</th><th>Measured</th>"
         "<th>Reason</th></tr></thead><tbody></tbody></table>\n"
         "<table id=\"replication-servers\" hidden><caption>Git servers</caption><thead><tr>"
         "<th>Server</th><th>Current</th><th>Refs</th></tr></thead><tbody></tbody></table>\n"
         "</section>\n<script>" +
         std::string(repository_assets::replication_js) + "</script>\n";
}

}  // namespace

std::string repository_page_html(const RepositoryRef& name, std::string_view domain, bool archive) {
  auto npub = nostr::encode_npub(name.owner);
  auto host = std::string(domain);
  auto url = repository_clone_url(domain, name.owner, name.identifier);
  auto nostr_url = "nostr://" + npub + "/" + host + "/" + percent_encode(name.identifier);
  auto web = "https://gitworkshop.dev/" + npub + "/" + percent_encode(name.identifier);
  auto title = html_escape(name.identifier);
  return "<!DOCTYPE html>\n<html lang=\"en\">\n<head><meta charset=\"utf-8\"><meta "
         "name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>" +
         title + "</title><style>" + std::string(repository_assets::repository_page_css) +
         "</style></head>\n<body>\n<h1>" + title +
         "</h1>\n<p>A git repository announced on Nostr "
         "by <code>" +
         npub +
         (archive
              ? std::string("</code>, mirrored here as a read-only archive (GRASP-05): it takes "
                            "no push, its git data is fetched from its other clone URLs.")
              : std::string("</code>, hosted here.")) +
         "</p>\n<ul>\n<li>Clone with a nostr-aware git "
         "client: <code>git clone " +
         html_escape(nostr_url) +
         "</code></li>\n<li>Plain git: "
         "<code>git clone " +
         html_escape(url) + "</code></li>\n<li>Browse: <a href=\"" + html_escape(web) + "\">" +
         html_escape(web) + "</a></li>\n</ul>\n" + replication_section(name) + "</body>\n</html>\n";
}

bool is_valid_git_protocol(std::string_view value) {
  if (value.empty() || value.size() > 256) return false;
  while (true) {
    auto colon = value.find(':');
    auto item = value.substr(0, colon);
    auto eq = item.find('=');
    if (item.empty()) return false;
    for (std::size_t i = 0; i < item.size(); ++i) {
      char c = item[i];
      bool ok = std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-' ||
                (c == '=' && i == eq);
      if (!ok) return false;
    }
    if (colon == std::string_view::npos) return true;
    value.remove_prefix(colon + 1);
  }
}

}  // namespace graspd::runtime::git
