#include "actors/plus/engine/mailboxes.hpp"

#include <algorithm>
#include <cctype>

#include "messages/relay_url.hpp"
#include "runtime/net/relay_client.hpp"

namespace graspd::sync {

namespace {

/// True for a host written as an IPv4 or bracketed IPv6 literal.
bool is_ip_literal(std::string_view host) {
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') return true;
  return !host.empty() && std::all_of(host.begin(), host.end(), [](char c) {
    return std::isdigit(static_cast<unsigned char>(c)) || c == '.';
  });
}

bool private_host(std::string_view host) {
  if (host == "localhost" || (host.size() > 10 && host.substr(host.size() - 10) == ".localhost"))
    return true;
  if (!is_ip_literal(host)) return false;
  if (host.front() == '[') host = host.substr(1, host.size() - 2);
  return !runtime::is_public_address(host);
}

void add_bounded(std::vector<std::string>& out, const std::string& relay) {
  if (out.size() >= max_relays_per_purpose) return;
  if (std::find(out.begin(), out.end(), relay) == out.end()) out.push_back(relay);
}

}  // namespace

std::optional<std::string> hygienic_relay(std::string_view url, const HygieneConfig& config) {
  auto key = untrusted_relay_key(url);
  if (!key) return std::nullopt;
  auto parsed = parse_url(*key);
  if (!parsed) return std::nullopt;
  if (!config.allow_private_addresses && private_host(parsed->host)) return std::nullopt;
  if (config.own_relays.count(*key)) return std::nullopt;
  return key;
}

AuthorMailboxes select_mailboxes(const RelayList& list, const HygieneConfig& config) {
  AuthorMailboxes out;
  std::vector<std::string> read_only;
  for (const auto& entry : list.entries) {
    auto relay = hygienic_relay(entry.url, config);
    if (!relay) {
      ++out.refused;
      continue;
    }
    if (entry.marker != RelayMarker::write) add_bounded(out.inboxes, *relay);
    if (entry.marker != RelayMarker::read) {
      add_bounded(out.outboxes, *relay);
      add_bounded(out.history, *relay);
    } else {
      add_bounded(read_only, *relay);
    }
  }
  for (const auto& relay : read_only) add_bounded(out.history, relay);
  return out;
}

}  // namespace graspd::sync
