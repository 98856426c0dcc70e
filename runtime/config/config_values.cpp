#include "runtime/config/config_values.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <cctype>
#include <charconv>

#include "messages/nostr/nip19.hpp"

namespace graspd::runtime {

namespace {

bool is_hostname(std::string_view host) {
  if (host.empty() || host.size() > 253) return false;
  return std::all_of(host.begin(), host.end(), [](unsigned char c) {
    return std::isalnum(c) || c == '-' || c == '.' || c == '_';
  });
}

bool is_ip_literal(const std::string& host) {
  unsigned char buffer[16];
  return inet_pton(AF_INET, host.c_str(), buffer) == 1 ||
         inet_pton(AF_INET6, host.c_str(), buffer) == 1;
}

bool is_bracketed(std::string_view host) {
  return host.size() >= 2 && host.front() == '[' && host.back() == ']';
}

/// What the listener and the service may be called: a host name or a bracketed IP literal.
bool is_acceptable_host(std::string_view host) {
  if (is_bracketed(host)) return is_ip_literal(std::string(host.substr(1, host.size() - 2)));
  return is_hostname(host);
}

}  // namespace

std::string_view trim(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) {
    text.remove_prefix(1);
  }
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) {
    text.remove_suffix(1);
  }
  return text;
}

std::vector<std::string> split_list(std::string_view text) {
  std::vector<std::string> items;
  while (true) {
    auto comma = text.find(',');
    auto item = trim(text.substr(0, comma));
    if (!item.empty()) items.emplace_back(item);
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  return items;
}

std::optional<std::uint64_t> parse_uint(std::string_view text) {
  std::uint64_t value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc{} || end != text.data() + text.size()) return std::nullopt;
  return value;
}

std::optional<bool> parse_bool(std::string_view text) {
  auto lower = ascii_lowercase(text);
  if (lower == "true" || lower == "1" || lower == "yes" || lower == "on") return true;
  if (lower == "false" || lower == "0" || lower == "no" || lower == "off") return false;
  return std::nullopt;
}

std::optional<BindAddress> parse_bind_address(std::string_view text) {
  auto parts = split_host_port(text);
  if (!parts || !parts->port || !is_acceptable_host(parts->host)) return std::nullopt;
  BindAddress out;
  out.text = std::string(text);
  out.host =
      is_bracketed(parts->host) ? parts->host.substr(1, parts->host.size() - 2) : parts->host;
  out.port = *parts->port;
  return out;
}

std::optional<Domain> parse_domain(std::string_view text) {
  auto parts = parse_host_port(text);
  if (!parts || !is_acceptable_host(parts->host)) return std::nullopt;
  return Domain{std::string(text), std::move(*parts)};
}

Domain domain_of(const BindAddress& bind, std::uint16_t port) {
  Domain out;
  out.text = port == bind.port ? bind.text : endpoint_text(bind.host, port);
  // The text passed (or was built like) parse_bind_address; only the host's case changes.
  auto parts = split_host_port(out.text);
  out.address.host = ascii_lowercase(parts ? parts->host : bind.host);
  out.address.port = port;
  return out;
}

std::string endpoint_text(std::string_view host, std::uint16_t port) {
  auto shown =
      host.find(':') != std::string_view::npos ? "[" + std::string(host) + "]" : std::string(host);
  return shown + ":" + std::to_string(port);
}

std::optional<policy::RepositoryRule> parse_repository_rule(std::string_view entry) {
  policy::RepositoryRule rule;
  auto slash = entry.find('/');
  auto head = entry.substr(0, slash);
  if (head.rfind("npub1", 0) == 0) {
    rule.owner = nostr::parse_pubkey(head);
    if (!rule.owner) return std::nullopt;
    if (slash != std::string_view::npos) rule.identifier = std::string(entry.substr(slash + 1));
  } else {
    rule.identifier = std::string(entry);
  }
  if (rule.identifier && !policy::is_valid_identifier(*rule.identifier)) return std::nullopt;
  return rule;
}

std::optional<AcceptanceMode> parse_acceptance_mode(std::string_view text) {
  if (text == "grasp01") return AcceptanceMode::grasp01;
  if (text == "open") return AcceptanceMode::open;
  return std::nullopt;
}

}  // namespace graspd::runtime
