#include "runtime/config.hpp"

#include "store/acceptance_policy.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>

#include "messages/relay_url.hpp"
#include "runtime/npub.hpp"

namespace graspd::runtime {

namespace {

// ---- value parsers (each returns what was expected on failure) ----

using Expectation = std::optional<std::string>;

std::string_view trim(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) {
    text.remove_prefix(1);
  }
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) {
    text.remove_suffix(1);
  }
  return text;
}

std::optional<std::uint64_t> parse_uint(std::string_view text) {
  std::uint64_t value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc{} || end != text.data() + text.size()) return std::nullopt;
  return value;
}

std::optional<bool> parse_bool(std::string_view text) {
  std::string lower(text);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (lower == "true" || lower == "1" || lower == "yes" || lower == "on") return true;
  if (lower == "false" || lower == "0" || lower == "no" || lower == "off") return false;
  return std::nullopt;
}

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

struct HostPort {
  std::string host;
  std::optional<std::uint16_t> port;
};

/// "host", "host:port", "[v6]", "[v6]:port"; std::nullopt when malformed.
std::optional<HostPort> split_host_port(std::string_view text) {
  HostPort result;
  std::string_view port_text;
  bool has_port = false;
  if (!text.empty() && text.front() == '[') {
    auto close = text.find(']');
    if (close == std::string_view::npos) return std::nullopt;
    result.host = std::string(text.substr(1, close - 1));
    if (!is_ip_literal(result.host)) return std::nullopt;
    auto rest = text.substr(close + 1);
    if (!rest.empty()) {
      if (rest.front() != ':') return std::nullopt;
      port_text = rest.substr(1);
      has_port = true;
    }
  } else {
    auto colon = text.rfind(':');
    if (colon != std::string_view::npos) {
      port_text = text.substr(colon + 1);
      text = text.substr(0, colon);
      has_port = true;
    }
    result.host = std::string(text);
    if (!is_hostname(result.host)) return std::nullopt;
  }
  if (has_port) {
    auto port = parse_uint(port_text);
    if (!port || *port > 65535) return std::nullopt;
    result.port = static_cast<std::uint16_t>(*port);
  }
  return result;
}

// ---- setters: one small factory per option type ----

template <class Field>
using Member = Field Config::*;

OptionSetter string_option(Member<std::string> field) {
  return [field](Config& config, std::string_view text) -> Expectation {
    config.*field = std::string(text);
    return std::nullopt;
  };
}

OptionSetter bool_option(Member<bool> field) {
  return [field](Config& config, std::string_view text) -> Expectation {
    auto value = parse_bool(text);
    if (!value) return "expected true or false";
    config.*field = *value;
    return std::nullopt;
  };
}

OptionSetter uint_option(Member<std::uint64_t> field, std::uint64_t min,
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

/// Per-item validation hook for lists: returns what an item should be, or nullopt when fine.
using ItemCheck = std::function<Expectation(std::string_view item)>;

OptionSetter list_option(Member<std::vector<std::string>> field, ItemCheck check = nullptr) {
  return [=](Config& config, std::string_view text) -> Expectation {
    auto items = split_list(text);
    if (check) {
      for (const auto& item : items) {
        if (auto expected = check(item)) return *expected + " (item \"" + item + "\")";
      }
    }
    config.*field = std::move(items);
    return std::nullopt;
  };
}

Expectation pubkey_item(std::string_view item) {
  if (policy::parse_pubkey_list(item).error.empty()) return std::nullopt;
  return "expected comma separated npubs or 64-hex public keys";
}

Expectation repository_item(std::string_view item) {
  if (policy::parse_repository_list(item).error.empty()) return std::nullopt;
  return "expected comma separated npub, npub/identifier or identifier entries";
}

Expectation acceptance_policy_setter(Config& config, std::string_view text) {
  if (text != "grasp01" && text != "open") return "expected grasp01 or open";
  config.acceptance_policy = std::string(text);
  return std::nullopt;
}

// Relay URLs are checked by the parser sync dials with, so a value that passes here is never
// dropped at boot.
Expectation relay_url_item(std::string_view item) {
  if (canonical_relay_url(item)) return std::nullopt;
  return "expected comma separated ws:// or wss:// URLs";
}

Expectation bind_address_setter(Config& config, std::string_view text) {
  auto parts = split_host_port(text);
  if (!parts || !parts->port) return "expected host:port";
  config.bind_address = std::string(text);
  config.bind_host = parts->host;
  config.bind_port = *parts->port;
  return std::nullopt;
}

Expectation domain_setter(Config& config, std::string_view text) {
  if (!text.empty()) {
    auto parts = split_host_port(text);
    if (!parts || (parts->port && *parts->port == 0)) return "expected host[:port] without scheme";
  }
  config.domain = std::string(text);
  return std::nullopt;
}

Expectation log_level_setter(Config& config, std::string_view text) {
  auto level = log::parse_level(text);
  if (!level) return "expected one of trace, debug, info, warn, error";
  config.log_level = *level;
  return std::nullopt;
}

Expectation owner_npub_setter(Config& config, std::string_view text) {
  if (!text.empty() && !decode_npub_hex(text)) return "expected an npub1... public key";
  config.owner_npub = std::string(text);
  return std::nullopt;
}

Expectation bootstrap_url_setter(Config& config, std::string_view text) {
  if (!text.empty() && !canonical_relay_url(text)) return "expected a ws:// or wss:// URL";
  config.sync_bootstrap_relay_url = std::string(text);
  return std::nullopt;
}

Expectation data_path_setter(Config& config, std::string_view text) {
  if (text.empty()) return "expected a directory path";
  config.data_path = std::string(text);
  return std::nullopt;
}

// ---- the table ----

constexpr std::string_view sync_plus_missing = "GRASP-03 Sync+ is not implemented";

std::vector<OptionSpec> build_table() {
  using C = Config;
  constexpr std::uint64_t unlimited = UINT64_MAX;
  return {
      {"bind_address", "NGIT_BIND_ADDRESS", "--bind-address", "host:port", "127.0.0.1:7334",
       "Listen address for HTTP, WebSocket, NIP-11 and /metrics (port 0 = any free port).",
       bind_address_setter},
      {"domain", "NGIT_DOMAIN", "--domain", "host[:port]", "",
       "Public host[:port] of this service; empty = the bind address.", domain_setter},
      {"relay_data_path", "NGIT_RELAY_DATA_PATH", "--relay-data-path", "path", "./data/relay",
       "LMDB directory of the event store.", data_path_setter},
      {"relay_name", "NGIT_RELAY_NAME", "--relay-name", "string", "", "NIP-11 name of this relay.",
       string_option(&C::relay_name)},
      {"relay_description", "NGIT_RELAY_DESCRIPTION", "--relay-description", "string", "",
       "NIP-11 description of this relay.", string_option(&C::relay_description)},
      {"owner_npub", "NGIT_OWNER_NPUB", "--owner-npub", "npub", "",
       "Operator public key (npub1...), published as the NIP-11 pubkey.", owner_npub_setter},
      {"log_level", "NGIT_LOG_LEVEL", "--log-level", "trace|debug|info|warn|error", "info",
       "Least severe log level written to stderr.", log_level_setter},
      {"metrics_enabled", "NGIT_METRICS_ENABLED", "--metrics-enabled", "bool", "true",
       "Serve Prometheus metrics on /metrics.", bool_option(&C::metrics_enabled)},
      {"scheduler_threads", "NGIT_SCHEDULER_THREADS", "--scheduler-threads", "integer", "0",
       "Actor scheduler worker threads; 0 = one per core (at least 2).",
       uint_option(&C::scheduler_threads, 0, 256)},
      {"io_threads", "NGIT_IO_THREADS", "--io-threads", "integer", "0",
       "Network I/O threads; 0 = one per core.", uint_option(&C::io_threads, 0, 256)},
      {"max_connections", "NGIT_MAX_CONNECTIONS", "--max-connections", "integer", "0",
       "WebSocket connection cap; 0 = unlimited (bounded then by the file descriptor limit).",
       uint_option(&C::max_connections, 0, unlimited)},
      {"max_message_bytes", "NGIT_MAX_MESSAGE_BYTES", "--max-message-bytes", "integer", "1048576",
       "Largest WebSocket message accepted, from clients and from peers.",
       uint_option(&C::max_message_bytes, 1024, 1ull << 30)},
      {"max_event_bytes", "NGIT_MAX_EVENT_BYTES", "--max-event-bytes", "integer", "524288",
       "Largest event JSON accepted, from clients and from peers.",
       uint_option(&C::max_event_bytes, 256, 1ull << 30)},
      {"max_connections_per_ip", "NGIT_MAX_CONNECTIONS_PER_IP", "--max-connections-per-ip",
       "integer", "256",
       "WebSocket connections allowed from one IP address (behind a reverse proxy every client "
       "shares the proxy's address: raise it there); 0 = unlimited.",
       uint_option(&C::max_connections_per_ip, 0, unlimited)},
      {"max_subscriptions", "NGIT_MAX_SUBSCRIPTIONS", "--max-subscriptions", "integer", "50",
       "Open subscriptions (REQ) per connection.", uint_option(&C::max_subscriptions, 1, 1000000)},
      {"max_filters", "NGIT_MAX_FILTERS", "--max-filters", "integer", "20",
       "Filters in one REQ or COUNT.", uint_option(&C::max_filters, 1, 10000)},
      {"max_subscription_values", "NGIT_MAX_SUBSCRIPTION_VALUES", "--max-subscription-values",
       "integer", "100000",
       "Filter values (ids, authors, kinds, tag values) one connection's open subscriptions may "
       "hold together; a REQ past it is CLOSED.",
       uint_option(&C::max_subscription_values, 1, unlimited)},
      {"max_count_examined", "NGIT_MAX_COUNT_EXAMINED", "--max-count-examined", "integer", "200000",
       "Index entries one COUNT may examine; past it the count is answered approximate (NIP-45).",
       uint_option(&C::max_count_examined, 1, unlimited)},
      {"max_limit", "NGIT_MAX_LIMIT", "--max-limit", "integer", "5000",
       "Largest `limit` honoured per filter (larger ones are capped).",
       uint_option(&C::max_limit, 1, 10000000)},
      {"default_limit", "NGIT_DEFAULT_LIMIT", "--default-limit", "integer", "500",
       "Stored events returned per filter without a `limit`.",
       uint_option(&C::default_limit, 1, 10000000)},
      {"max_subid_length", "NGIT_MAX_SUBID_LENGTH", "--max-subid-length", "integer", "64",
       "Longest subscription id accepted.", uint_option(&C::max_subid_length, 1, 1024)},
      {"max_event_tags", "NGIT_MAX_EVENT_TAGS", "--max-event-tags", "integer", "10000",
       "Most tags in one event.", uint_option(&C::max_event_tags, 1, 1000000)},
      {"max_content_length", "NGIT_MAX_CONTENT_LENGTH", "--max-content-length", "integer", "524288",
       "Largest event content in bytes.", uint_option(&C::max_content_length, 1, 1ull << 30)},
      {"event_rate", "NGIT_EVENT_RATE", "--event-rate", "integer", "1000",
       "Sustained EVENTs per second per connection (token bucket).",
       uint_option(&C::event_rate, 1, unlimited)},
      {"event_burst", "NGIT_EVENT_BURST", "--event-burst", "integer", "20000",
       "EVENTs one connection may send in a burst above the rate.",
       uint_option(&C::event_burst, 1, unlimited)},
      {"max_outbound_bytes", "NGIT_MAX_OUTBOUND_BYTES", "--max-outbound-bytes", "integer",
       "16777216",
       "Bytes queued for a client that does not read; past it the client is disconnected.",
       uint_option(&C::max_outbound_bytes, 65536, 1ull << 34)},
      {"ping_interval_secs", "NGIT_PING_INTERVAL_SECS", "--ping-interval-secs", "seconds", "60",
       "Idle WebSocket connections are pinged after this long and closed after twice it without "
       "reply.",
       uint_option(&C::ping_interval_secs, 1, 86400)},
      {"websocket_compression", "NGIT_WEBSOCKET_COMPRESSION", "--websocket-compression", "bool",
       "true", "Negotiate permessage-deflate when a client offers it.",
       bool_option(&C::websocket_compression)},
      {"acceptance_policy", "NGIT_ACCEPTANCE_POLICY", "--acceptance-policy", "grasp01|open",
       "grasp01",
       "grasp01 stores only what GRASP-01 accepts; open stores every valid event (a plain "
       "Nostr relay, for benchmarks and relay tests).",
       acceptance_policy_setter},
      {"event_blacklist", "NGIT_EVENT_BLACKLIST", "--event-blacklist", "list", "",
       "Comma separated authors (npub or hex) whose events are refused.",
       list_option(&C::event_blacklist, pubkey_item)},
      {"repository_whitelist", "NGIT_REPOSITORY_WHITELIST", "--repository-whitelist", "list", "",
       "Comma separated repositories accepted (npub, npub/identifier or identifier); empty = "
       "no whitelist.",
       list_option(&C::repository_whitelist, repository_item)},
      {"repository_blacklist", "NGIT_REPOSITORY_BLACKLIST", "--repository-blacklist", "list", "",
       "Comma separated repositories refused (npub, npub/identifier or identifier); wins over "
       "the whitelist.",
       list_option(&C::repository_blacklist, repository_item)},
      {"sync_enabled", "NGIT_SYNC_ENABLED", "--sync-enabled", "bool", "true",
       "Run the GRASP-02 sync manager.", bool_option(&C::sync_enabled)},
      {"sync_bootstrap_relay_url", "NGIT_SYNC_BOOTSTRAP_RELAY_URL", "--sync-bootstrap-relay-url",
       "ws(s) URL", "", "Relay that is always connected; empty = none.", bootstrap_url_setter},
      {"sync_base_backoff_secs", "NGIT_SYNC_BASE_BACKOFF_SECS", "--sync-base-backoff-secs",
       "seconds", "5", "First reconnect delay after a failure.",
       uint_option(&C::sync_base_backoff_secs, 1)},
      {"sync_max_backoff_secs", "NGIT_SYNC_MAX_BACKOFF_SECS", "--sync-max-backoff-secs", "seconds",
       "3600", "Longest reconnect delay.", uint_option(&C::sync_max_backoff_secs, 1)},
      {"sync_batch_window_ms", "NGIT_SYNC_BATCH_WINDOW_MS", "--sync-batch-window-ms",
       "milliseconds", "5000", "Self-subscriber batch window.",
       uint_option(&C::sync_batch_window_ms, 0)},
      {"sync_quick_reconnect_secs", "NGIT_SYNC_QUICK_RECONNECT_SECS", "--sync-quick-reconnect-secs",
       "seconds", "900",
       "Reconnects within this time resume from the last event (the 15-minute rule).",
       uint_option(&C::sync_quick_reconnect_secs, 0)},
      {"sync_consolidation_threshold", "NGIT_SYNC_CONSOLIDATION_THRESHOLD",
       "--sync-consolidation-threshold", "integer", "70",
       "Filters per relay before they are consolidated.",
       uint_option(&C::sync_consolidation_threshold, 1)},
      {"sync_daily_resync_min_secs", "NGIT_SYNC_DAILY_RESYNC_MIN_SECS",
       "--sync-daily-resync-min-secs", "seconds", "82800",
       "Lower bound of the random daily fresh sync.",
       uint_option(&C::sync_daily_resync_min_secs, 1)},
      {"sync_daily_resync_max_secs", "NGIT_SYNC_DAILY_RESYNC_MAX_SECS",
       "--sync-daily-resync-max-secs", "seconds", "90000",
       "Upper bound of the random daily fresh sync.",
       uint_option(&C::sync_daily_resync_max_secs, 1)},
      {"sync_disconnect_check_interval_secs", "NGIT_SYNC_DISCONNECT_CHECK_INTERVAL_SECS",
       "--sync-disconnect-check-interval-secs", "seconds", "60",
       "Period of the empty-relay disconnect checker.",
       uint_option(&C::sync_disconnect_check_interval_secs, 1)},
      {"sync_dead_after_secs", "NGIT_SYNC_DEAD_AFTER_SECS", "--sync-dead-after-secs", "seconds",
       "86400", "Failing this long makes a relay count as dead.",
       uint_option(&C::sync_dead_after_secs, 1)},
      {"sync_rate_limit_cooldown_secs", "NGIT_SYNC_RATE_LIMIT_COOLDOWN_SECS",
       "--sync-rate-limit-cooldown-secs", "seconds", "65",
       "Pause after a peer signals a rate limit.",
       uint_option(&C::sync_rate_limit_cooldown_secs, 0)},
      {"sync_max_relays", "NGIT_SYNC_MAX_RELAYS", "--sync-max-relays", "integer", "1000",
       "Most remote relays tracked and connected at once; more wait for a free slot.",
       uint_option(&C::sync_max_relays, 1, 1000000)},
      {"sync_allow_private_addresses", "NGIT_SYNC_ALLOW_PRIVATE_ADDRESSES",
       "--sync-allow-private-addresses", "bool", "false",
       "Allow sync connections to loopback/private/link-local addresses.",
       bool_option(&C::sync_allow_private_addresses)},
      {"sync_plus_enabled", "NGIT_SYNC_PLUS_ENABLED", "--sync-plus-enabled", "bool", "true",
       "Run the GRASP-03 Sync+ overlay.", bool_option(&C::sync_plus_enabled), sync_plus_missing},
      {"sync_plus_user_index_relays", "NGIT_SYNC_PLUS_USER_INDEX_RELAYS",
       "--sync-plus-user-index-relays", "list of ws(s) URLs", "",
       "Where relay lists of authors without a known one are looked up.",
       list_option(&C::sync_plus_user_index_relays, relay_url_item), sync_plus_missing},
      {"sync_plus_fallback_relays", "NGIT_SYNC_PLUS_FALLBACK_RELAYS", "--sync-plus-fallback-relays",
       "list of ws(s) URLs", "", "Mailboxes for authors with no relay list.",
       list_option(&C::sync_plus_fallback_relays, relay_url_item), sync_plus_missing},
      {"sync_plus_reconcile_secs", "NGIT_SYNC_PLUS_RECONCILE_SECS", "--sync-plus-reconcile-secs",
       "seconds", "60", "Sync+ reconcile cadence.", uint_option(&C::sync_plus_reconcile_secs, 1),
       sync_plus_missing},
      {"sync_plus_refresh_secs", "NGIT_SYNC_PLUS_REFRESH_SECS", "--sync-plus-refresh-secs",
       "seconds", "86400", "Sync+ relay-list refresh cadence.",
       uint_option(&C::sync_plus_refresh_secs, 1), sync_plus_missing},
      {"sync_plus_retry_secs", "NGIT_SYNC_PLUS_RETRY_SECS", "--sync-plus-retry-secs", "seconds",
       "300", "Sync+ retry cadence after a failure.", uint_option(&C::sync_plus_retry_secs, 1),
       sync_plus_missing},
  };
}

// ---- loading ----

std::string quoted(std::string_view value) {
  return "\"" + std::string(value) + "\"";
}

ConfigError invalid(std::string_view source, std::string_view value, std::string_view expected) {
  return {"invalid " + std::string(source) + " " + quoted(value) + ": " + std::string(expected)};
}

const OptionSpec* find_by(std::string_view OptionSpec::*field, std::string_view name) {
  for (const auto& spec : option_table()) {
    if (spec.*field == name) return &spec;
  }
  return nullptr;
}

/// Values by option key, remembering where each came from for error messages.
struct Source {
  std::string value;
  std::string origin;  // e.g. "NGIT_LOG_LEVEL", "--log-level", "log_level (graspd.conf:3)"
};
using Assignments = std::map<std::string_view, Source>;

struct CommandLine {
  Action action = Action::run;
  std::string config_file;
  Assignments flags;
};

std::variant<CommandLine, ConfigError> parse_args(const std::vector<std::string>& args) {
  CommandLine result;
  for (std::size_t i = 0; i < args.size(); ++i) {
    std::string_view arg = args[i];
    if (arg == "--help" || arg == "-h") {
      result.action = Action::help;
      continue;
    }
    if (arg == "--version" || arg == "-V") {
      result.action = Action::version;
      continue;
    }
    if (arg.substr(0, 2) != "--") return ConfigError{"unexpected argument " + quoted(arg)};
    std::string_view name = arg;
    std::optional<std::string> value;
    if (auto equals = arg.find('='); equals != std::string_view::npos) {
      name = arg.substr(0, equals);
      value = std::string(arg.substr(equals + 1));
    }
    const OptionSpec* spec = nullptr;
    if (name != "--config") {
      spec = find_by(&OptionSpec::flag, name);
      if (!spec) return ConfigError{"unknown option " + quoted(name) + " (see graspd --help)"};
    }
    if (!value) {
      if (i + 1 >= args.size())
        return ConfigError{"option " + std::string(name) + " needs a value"};
      value = args[++i];
    }
    if (spec) {
      result.flags[spec->key] = Source{*value, std::string(name)};
    } else {
      result.config_file = *value;
    }
  }
  return result;
}

std::variant<Assignments, ConfigError> read_config_file(const std::string& path) {
  std::ifstream file(path);
  if (!file) {
    return ConfigError{"invalid --config " + quoted(path) + ": expected a readable config file (" +
                       std::strerror(errno) + ")"};
  }
  Assignments result;
  std::string line;
  for (int number = 1; std::getline(file, line); ++number) {
    std::string_view text = line;
    if (auto hash = text.find('#'); hash != std::string_view::npos) text = text.substr(0, hash);
    text = trim(text);
    if (text.empty()) continue;
    auto where = path + ":" + std::to_string(number);
    auto equals = text.find('=');
    if (equals == std::string_view::npos) {
      return ConfigError{"invalid line in " + where + ": expected key = value"};
    }
    auto key = trim(text.substr(0, equals));
    auto value = trim(text.substr(equals + 1));
    if (value.size() >= 2 && value.front() == '"' && value.back() == '"') {
      value = value.substr(1, value.size() - 2);
    }
    const auto* spec = find_by(&OptionSpec::key, key);
    if (!spec) return ConfigError{"unknown key " + quoted(key) + " in " + where};
    result[spec->key] = Source{std::string(value), std::string(key) + " (" + where + ")"};
  }
  return result;
}

std::optional<ConfigError> check_consistency(Config& config) {
  if (config.domain.empty()) config.domain = config.bind_address;
  if (config.sync_daily_resync_min_secs > config.sync_daily_resync_max_secs) {
    return ConfigError{"invalid NGIT_SYNC_DAILY_RESYNC_MIN_SECS \"" +
                       std::to_string(config.sync_daily_resync_min_secs) +
                       "\": expected at most NGIT_SYNC_DAILY_RESYNC_MAX_SECS (" +
                       std::to_string(config.sync_daily_resync_max_secs) + ")"};
  }
  if (config.sync_base_backoff_secs > config.sync_max_backoff_secs) {
    return ConfigError{"invalid NGIT_SYNC_BASE_BACKOFF_SECS \"" +
                       std::to_string(config.sync_base_backoff_secs) +
                       "\": expected at most NGIT_SYNC_MAX_BACKOFF_SECS (" +
                       std::to_string(config.sync_max_backoff_secs) + ")"};
  }
  return std::nullopt;
}

}  // namespace

const std::vector<OptionSpec>& option_table() {
  static const std::vector<OptionSpec> table = build_table();
  return table;
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

EnvironmentLookup process_environment() {
  return [](std::string_view name) -> std::optional<std::string> {
    const char* value = std::getenv(std::string(name).c_str());
    if (!value) return std::nullopt;
    return std::string(value);
  };
}

std::variant<LoadedConfig, ConfigError> load_config(const std::vector<std::string>& args,
                                                    const EnvironmentLookup& environment) {
  auto command_line = parse_args(args);
  if (auto* error = std::get_if<ConfigError>(&command_line)) return *error;
  auto& flags = std::get<CommandLine>(command_line);

  LoadedConfig loaded;
  loaded.action = flags.action;
  if (flags.action != Action::run) return loaded;

  Assignments from_file;
  auto config_file = flags.config_file;
  if (config_file.empty()) config_file = environment("GRASPD_CONFIG").value_or("");
  if (!config_file.empty()) {
    auto file = read_config_file(config_file);
    if (auto* error = std::get_if<ConfigError>(&file)) return *error;
    from_file = std::move(std::get<Assignments>(file));
    loaded.config.config_file = config_file;
  }

  for (const auto& spec : option_table()) {
    Source chosen{std::string(spec.default_value), "default of " + std::string(spec.env)};
    bool set_explicitly = true;
    if (auto it = flags.flags.find(spec.key); it != flags.flags.end()) {
      chosen = it->second;
    } else if (auto value = environment(spec.env)) {
      chosen = Source{*value, std::string(spec.env)};
    } else if (auto it = from_file.find(spec.key); it != from_file.end()) {
      chosen = it->second;
    } else {
      set_explicitly = false;
    }
    if (auto expected = spec.set(loaded.config, chosen.value)) {
      return invalid(chosen.origin, chosen.value, *expected);
    }
    if (set_explicitly && !spec.no_effect_yet.empty()) {
      loaded.warnings.push_back(chosen.origin +
                                " has no effect yet: " + std::string(spec.no_effect_yet));
    }
  }
  if (auto error = check_consistency(loaded.config)) return *error;
  return loaded;
}

std::string help_text() {
  std::ostringstream text;
  text << "graspd - GRASP relay daemon (git over Nostr)\n\n"
          "Usage:\n"
          "  graspd [--config FILE] [--option VALUE | --option=VALUE]...   run the daemon\n"
          "  graspd --help                                                 this text\n"
          "  graspd --version                                              print the version\n\n"
          "Every option is read from its flag, else its environment variable, else the config\n"
          "file (--config FILE or GRASPD_CONFIG; lines `key = value`, # comments), else its\n"
          "default. See docs/configuration.md.\n\n"
          "Options:\n";
  for (const auto& spec : option_table()) {
    text << "  " << spec.flag << " <" << spec.type << ">\n"
         << "      env " << spec.env << ", file key " << spec.key << ", default "
         << (spec.default_value.empty() ? std::string("(empty)") : quoted(spec.default_value))
         << "\n      " << spec.description << "\n";
    if (!spec.no_effect_yet.empty()) text << "      No effect yet: " << spec.no_effect_yet << ".\n";
  }
  return text.str();
}

}  // namespace graspd::runtime
