// Internal to the option table (config_table*.cpp): the setter factories, one per option type,
// that parse a value into its Config field (value parsers in config_values.hpp), and the table's
// sections defined in files of their own.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "messages/nostr/nip19.hpp"
#include "messages/nostr/verify.hpp"
#include "runtime/config/config.hpp"
#include "runtime/config/config_values.hpp"

namespace graspd::runtime::option_setters {

using Expectation = std::optional<std::string>;
using C = Config;
inline constexpr std::uint64_t unlimited = UINT64_MAX;

// ---- setters: one small factory per option type ----

template <class Field>
using Member = Field Config::*;

inline OptionSetter string_option(Member<std::string> field) {
  return [field](Config& config, std::string_view text) -> Expectation {
    config.*field = std::string(text);
    return std::nullopt;
  };
}

inline OptionSetter bool_option(Member<bool> field) {
  return [field](Config& config, std::string_view text) -> Expectation {
    auto value = parse_bool(text);
    if (!value) return "expected true or false";
    config.*field = *value;
    return std::nullopt;
  };
}

inline OptionSetter uint_option(Member<std::uint64_t> field, std::uint64_t min,
                                std::uint64_t max = UINT32_MAX) {
  return [=](Config& config, std::string_view text) -> Expectation {
    auto value = parse_uint(text);
    if (!value || *value < min || *value > max) {
      return "expected an integer from " + std::to_string(min) + " to " + std::to_string(max);
    }
    config.*field = *value;
    return std::nullopt;
  };
}

/// A comma separated list (split_list), each item parsed by `parse` into the container's element
/// type; the first item `parse` refuses fails the option with `expected` and the item.
template <class Container, class Parse>
inline OptionSetter list_option(Member<Container> field, Parse parse, std::string_view expected) {
  return [=](Config& config, std::string_view text) -> Expectation {
    Container items;
    for (const auto& item : split_list(text)) {
      auto value = parse(item);
      if (!value) return std::string(expected) + " (item \"" + item + "\")";
      items.insert(items.end(), std::move(*value));
    }
    config.*field = std::move(items);
    return std::nullopt;
  };
}

inline std::optional<nostr::Pubkey> pubkey_item(std::string_view item) {
  return nostr::parse_pubkey(item);
}

inline std::optional<CanonicalRelayUrl> relay_url_item(std::string_view item) {
  return CanonicalRelayUrl::parse(item);
}

inline constexpr std::string_view pubkey_list_expected =
    "expected comma separated npubs or 64-hex public keys";
inline constexpr std::string_view repository_list_expected =
    "expected comma separated npub, npub/identifier or identifier entries";
// Relay URLs are parsed by the parser sync dials with, so a value that passes here is the key
// sync uses.
inline constexpr std::string_view relay_list_expected =
    "expected comma separated ws:// or wss:// URLs";

inline std::optional<HostPort> service_item(std::string_view item) {
  return parse_host_port(item);
}

inline constexpr std::string_view service_list_expected =
    "expected comma separated host or host:port entries (no scheme, path or user)";

inline Expectation archive_read_only_setter(Config& config, std::string_view text) {
  if (text.empty()) {
    config.archive_read_only_option.reset();
    return std::nullopt;
  }
  auto value = parse_bool(text);
  if (!value) return "expected true or false (or empty: true iff an archive source is set)";
  config.archive_read_only_option = *value;
  return std::nullopt;
}

inline Expectation trusted_proxy_cidrs_setter(Config& config, std::string_view text) {
  std::string bad_item;
  auto networks = parse_ip_networks(text, &bad_item);
  if (!networks) {
    return "expected comma or blank separated IPv4/IPv6 CIDRs or addresses (item \"" + bad_item +
           "\")";
  }
  config.trusted_proxies.networks = std::move(*networks);
  return std::nullopt;
}

inline Expectation trusted_proxy_header_setter(Config& config, std::string_view text) {
  auto header = parse_forwarding_header(text);
  if (!header) return "expected x-forwarded-for, forwarded or x-real-ip";
  config.trusted_proxies.header = *header;
  return std::nullopt;
}

inline Expectation acceptance_policy_setter(Config& config, std::string_view text) {
  auto mode = parse_acceptance_mode(text);
  if (!mode) return "expected grasp01 or open";
  config.acceptance_policy = *mode;
  return std::nullopt;
}

inline Expectation bind_address_setter(Config& config, std::string_view text) {
  auto address = parse_bind_address(text);
  if (!address) return "expected host:port";
  config.bind_address = std::move(*address);
  return std::nullopt;
}

inline Expectation domain_setter(Config& config, std::string_view text) {
  if (text.empty()) {
    config.domain = Domain{};
    return std::nullopt;
  }
  auto domain = parse_domain(text);
  if (!domain) return "expected host[:port] without scheme";
  config.domain = std::move(*domain);
  return std::nullopt;
}

inline Expectation log_level_setter(Config& config, std::string_view text) {
  auto level = log::parse_level(text);
  if (!level) return "expected one of trace, debug, info, warn, error";
  config.log_level = *level;
  return std::nullopt;
}

inline Expectation owner_npub_setter(Config& config, std::string_view text) {
  if (text.empty()) {
    config.owner_npub.reset();
    return std::nullopt;
  }
  auto key = nostr::decode_npub(text);
  if (!key) return "expected an npub1... public key";
  config.owner_npub = *key;
  return std::nullopt;
}

/// NGIT_RELAY_OWNER_NSEC (a secret: load_config refuses it set empty and never echoes it).
inline Expectation relay_owner_nsec_setter(Config& config, std::string_view text) {
  config.relay_owner_nsec.reset();
  if (trim(text).empty()) return std::nullopt;
  auto key = nostr::parse_secret_key(text);
  if (!key || !nostr::pubkey_from_secret(*key)) return "expected an nsec1... or 64-hex secret key";
  config.relay_owner_nsec = *key;
  return std::nullopt;
}

inline Expectation bootstrap_url_setter(Config& config, std::string_view text) {
  if (text.empty()) {
    config.sync_bootstrap_relay_url.reset();
    return std::nullopt;
  }
  auto url = CanonicalRelayUrl::parse(text);
  if (!url) return "expected a ws:// or wss:// URL";
  config.sync_bootstrap_relay_url = std::move(*url);
  return std::nullopt;
}

inline Expectation data_path_setter(Config& config, std::string_view text) {
  if (text.empty()) return "expected a directory path";
  config.data_path = std::string(text);
  return std::nullopt;
}

/// Git hosting, purgatory and pull requests (config_table_git.cpp).
std::vector<OptionSpec> git_options();

}  // namespace graspd::runtime::option_setters
