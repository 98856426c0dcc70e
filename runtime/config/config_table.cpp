// The option table: one row per option, each with the setter that parses its value into the
// Config field's type (value parsers in config_values.hpp).
#include <cstdint>
#include <string>
#include <utility>

#include "messages/nostr/nip19.hpp"
#include "runtime/config/config.hpp"

namespace graspd::runtime {

namespace {

using Expectation = std::optional<std::string>;

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

/// A comma separated list (split_list), each item parsed by `parse` into the container's element
/// type; the first item `parse` refuses fails the option with `expected` and the item.
template <class Container, class Parse>
OptionSetter list_option(Member<Container> field, Parse parse, std::string_view expected) {
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

std::optional<nostr::Pubkey> pubkey_item(std::string_view item) {
  return nostr::parse_pubkey(item);
}

std::optional<CanonicalRelayUrl> relay_url_item(std::string_view item) {
  return CanonicalRelayUrl::parse(item);
}

constexpr std::string_view pubkey_list_expected =
    "expected comma separated npubs or 64-hex public keys";
constexpr std::string_view repository_list_expected =
    "expected comma separated npub, npub/identifier or identifier entries";
// Relay URLs are parsed by the parser sync dials with, so a value that passes here is the key
// sync uses.
constexpr std::string_view relay_list_expected = "expected comma separated ws:// or wss:// URLs";

std::optional<HostPort> service_item(std::string_view item) {
  return parse_host_port(item);
}

constexpr std::string_view service_list_expected =
    "expected comma separated host or host:port entries (no scheme, path or user)";

Expectation archive_read_only_setter(Config& config, std::string_view text) {
  if (text.empty()) {
    config.archive_read_only_option.reset();
    return std::nullopt;
  }
  auto value = parse_bool(text);
  if (!value) return "expected true or false (or empty: true iff an archive source is set)";
  config.archive_read_only_option = *value;
  return std::nullopt;
}

Expectation acceptance_policy_setter(Config& config, std::string_view text) {
  auto mode = parse_acceptance_mode(text);
  if (!mode) return "expected grasp01 or open";
  config.acceptance_policy = *mode;
  return std::nullopt;
}

Expectation bind_address_setter(Config& config, std::string_view text) {
  auto address = parse_bind_address(text);
  if (!address) return "expected host:port";
  config.bind_address = std::move(*address);
  return std::nullopt;
}

Expectation domain_setter(Config& config, std::string_view text) {
  if (text.empty()) {
    config.domain = Domain{};
    return std::nullopt;
  }
  auto domain = parse_domain(text);
  if (!domain) return "expected host[:port] without scheme";
  config.domain = std::move(*domain);
  return std::nullopt;
}

Expectation log_level_setter(Config& config, std::string_view text) {
  auto level = log::parse_level(text);
  if (!level) return "expected one of trace, debug, info, warn, error";
  config.log_level = *level;
  return std::nullopt;
}

Expectation owner_npub_setter(Config& config, std::string_view text) {
  if (text.empty()) {
    config.owner_npub.reset();
    return std::nullopt;
  }
  auto key = nostr::decode_npub(text);
  if (!key) return "expected an npub1... public key";
  config.owner_npub = *key;
  return std::nullopt;
}

Expectation bootstrap_url_setter(Config& config, std::string_view text) {
  if (text.empty()) {
    config.sync_bootstrap_relay_url.reset();
    return std::nullopt;
  }
  auto url = CanonicalRelayUrl::parse(text);
  if (!url) return "expected a ws:// or wss:// URL";
  config.sync_bootstrap_relay_url = std::move(*url);
  return std::nullopt;
}

Expectation data_path_setter(Config& config, std::string_view text) {
  if (text.empty()) return "expected a directory path";
  config.data_path = std::string(text);
  return std::nullopt;
}

// ---- the table, in sections ----

using C = Config;
constexpr std::uint64_t unlimited = UINT64_MAX;

/// Where graspd listens, what it tells clients about itself, and how it runs.
std::vector<OptionSpec> server_options() {
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
      {"status_page_interval_secs", "NGIT_STATUS_PAGE_INTERVAL_SECS", "--status-page-interval-secs",
       "seconds", "5",
       "The status page at GET / is rendered at most once per this many seconds, off the network "
       "threads; every request in between gets the same page.",
       uint_option(&C::status_page_interval_secs, 1, 3600)},
      {"status_page_max_bytes", "NGIT_STATUS_PAGE_MAX_BYTES", "--status-page-max-bytes", "integer",
       "1048576",
       "Largest status page: the sync and repository lists stop where the page would pass it "
       "(the operator's own texts aside).",
       uint_option(&C::status_page_max_bytes, 65536, 64u << 20)},
      {"status_page_max_field_bytes", "NGIT_STATUS_PAGE_MAX_FIELD_BYTES",
       "--status-page-max-field-bytes", "integer", "256",
       "Each repository name, identifier, description, relay URL or error shown on the status page "
       "is cut to this many bytes.",
       uint_option(&C::status_page_max_field_bytes, 16, 65536)},
      {"status_page_repositories", "NGIT_STATUS_PAGE_REPOSITORIES", "--status-page-repositories",
       "integer", "500", "Repository announcements the status page lists (the newest).",
       uint_option(&C::status_page_repositories, 0, 10000)},
      {"scheduler_threads", "NGIT_SCHEDULER_THREADS", "--scheduler-threads", "integer", "0",
       "Actor scheduler worker threads; 0 = one per core (at least 2).",
       uint_option(&C::scheduler_threads, 0, 256)},
      {"io_threads", "NGIT_IO_THREADS", "--io-threads", "integer", "0",
       "Network I/O threads; 0 = one per core.", uint_option(&C::io_threads, 0, 256)},
  };
}

/// How many connections graspd takes, and how large a message or event may be.
std::vector<OptionSpec> connection_limits() {
  return {
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
  };
}

/// What one connection may ask for: subscriptions, filters, counts and NIP-77 sessions.
std::vector<OptionSpec> subscription_limits() {
  return {
      {"max_subscriptions", "NGIT_MAX_SUBSCRIPTIONS", "--max-subscriptions", "integer", "50",
       "Open subscriptions (REQ) per connection.", uint_option(&C::max_subscriptions, 1, 1000000)},
      {"max_filters", "NGIT_MAX_FILTERS", "--max-filters", "integer", "20",
       "Filters in one REQ or COUNT.", uint_option(&C::max_filters, 1, 10000)},
      {"max_subscription_values", "NGIT_MAX_SUBSCRIPTION_VALUES", "--max-subscription-values",
       "integer", "100000",
       "Filter values (ids, authors, kinds, tag values) one connection's open subscriptions may "
       "hold together; a REQ past it is CLOSED.",
       uint_option(&C::max_subscription_values, 1, unlimited)},
      {"negentropy_max_sync_events", "NGIT_NEGENTROPY_MAX_SYNC_EVENTS",
       "--negentropy-max-sync-events", "integer", "1000000",
       "Stored events one NIP-77 NEG-OPEN may reconcile; more answer NEG-ERR \"blocked: too many "
       "query results\". Every connection's open sessions together hold at most four times this.",
       uint_option(&C::negentropy_max_sync_events, 1, unlimited)},
      {"negentropy_max_sessions", "NGIT_NEGENTROPY_MAX_SESSIONS", "--negentropy-max-sessions",
       "integer", "4", "NIP-77 negentropy subscriptions one connection may hold open at once.",
       uint_option(&C::negentropy_max_sessions, 1, 1000)},
      {"negentropy_address_share_percent", "NGIT_NEGENTROPY_ADDRESS_SHARE_PERCENT",
       "--negentropy-address-share-percent", "integer", "25",
       "Percent of the records all NIP-77 sessions may hold (four times "
       "NGIT_NEGENTROPY_MAX_SYNC_EVENTS) that the sessions of one client address may hold "
       "together; past it NEG-OPEN answers NEG-ERR \"rate-limited: ...\".",
       uint_option(&C::negentropy_address_share_percent, 1, 100)},
      {"negentropy_address_scan_rate", "NGIT_NEGENTROPY_ADDRESS_SCAN_RATE",
       "--negentropy-address-scan-rate", "integer", "200000",
       "Stored records the NEG-OPENs of one client address may scan per second, saved up to "
       "NGIT_NEGENTROPY_MAX_SYNC_EVENTS; while spent, NEG-OPEN answers NEG-ERR \"rate-limited: "
       "...\". 0: unbounded.",
       uint_option(&C::negentropy_address_scan_rate, 0, unlimited)},
      {"negentropy_open_rate", "NGIT_NEGENTROPY_OPEN_RATE", "--negentropy-open-rate", "integer",
       "2", "Sustained NEG-OPENs per second per connection (token bucket); 0: unbounded.",
       uint_option(&C::negentropy_open_rate, 0, unlimited)},
      {"negentropy_open_burst", "NGIT_NEGENTROPY_OPEN_BURST", "--negentropy-open-burst", "integer",
       "20", "NEG-OPENs one connection may send in a burst above the rate.",
       uint_option(&C::negentropy_open_burst, 1, unlimited)},
      {"negentropy_idle_secs", "NGIT_NEGENTROPY_IDLE_SECS", "--negentropy-idle-secs", "integer",
       "60",
       "Seconds a NIP-77 session may wait for the client's next NEG-MSG; then it is closed with "
       "NEG-ERR \"closed: ...\". 0: never.",
       uint_option(&C::negentropy_idle_secs, 0, 86400)},
      {"negentropy_max_rounds", "NGIT_NEGENTROPY_MAX_ROUNDS", "--negentropy-max-rounds", "integer",
       "2000",
       "NEG-MSG rounds graspd, as a NIP-77 client (sync, graspd sync), takes from a relay for one "
       "session; past it the session is abandoned as a looping relay.",
       uint_option(&C::negentropy_max_rounds, 1, unlimited)},
      {"negentropy_scan_threads", "NGIT_NEGENTROPY_SCAN_THREADS", "--negentropy-scan-threads",
       "integer", "2",
       "Threads that run NIP-77 NEG-OPEN store scans, off the scheduler threads that serve REQ "
       "and EVENT; waiting scans take turns per client address.",
       uint_option(&C::negentropy_scan_threads, 1, 64)},
      {"negentropy_scan_queue_per_address", "NGIT_NEGENTROPY_SCAN_QUEUE_PER_ADDRESS",
       "--negentropy-scan-queue-per-address", "integer", "16",
       "NEG-OPEN scans one client address may have waiting for a scan thread; past it NEG-OPEN "
       "answers NEG-ERR \"rate-limited: ...\".",
       uint_option(&C::negentropy_scan_queue_per_address, 1, 100000)},
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
  };
}

/// What one event may hold, and how fast one connection may send events.
std::vector<OptionSpec> event_limits() {
  return {
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
  };
}

/// How the WebSocket treats clients that do not read, idle ones and compression.
std::vector<OptionSpec> transport_options() {
  return {
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
      {"websocket_deflate_cache_bytes", "NGIT_WEBSOCKET_DEFLATE_CACHE_BYTES",
       "--websocket-deflate-cache-bytes", "integer", "33554432",
       "Compressed event JSON kept for reuse by every compressing connection (REQ answers, "
       "fan-out); 0 = compress every delivery.",
       uint_option(&C::websocket_deflate_cache_bytes, 0, 1ull << 34)},
  };
}

/// Which events are stored.
std::vector<OptionSpec> policy_options() {
  return {
      {"acceptance_policy", "NGIT_ACCEPTANCE_POLICY", "--acceptance-policy", "grasp01|open",
       "grasp01",
       "grasp01 stores only what GRASP-01 accepts; open stores every valid event (a plain "
       "Nostr relay, for benchmarks and relay tests).",
       acceptance_policy_setter},
      {"event_blacklist", "NGIT_EVENT_BLACKLIST", "--event-blacklist", "list", "",
       "Comma separated authors (npub or hex) whose events are refused.",
       list_option(&C::event_blacklist, pubkey_item, pubkey_list_expected)},
      {"repository_whitelist", "NGIT_REPOSITORY_WHITELIST", "--repository-whitelist", "list", "",
       "Comma separated repositories accepted (npub, npub/identifier or identifier); empty = "
       "no whitelist.",
       list_option(&C::repository_whitelist, parse_repository_rule, repository_list_expected)},
      {"repository_blacklist", "NGIT_REPOSITORY_BLACKLIST", "--repository-blacklist", "list", "",
       "Comma separated repositories refused (npub, npub/identifier or identifier); wins over "
       "the whitelist.",
       list_option(&C::repository_blacklist, parse_repository_rule, repository_list_expected)},
      {"archive_all", "NGIT_ARCHIVE_ALL", "--archive-all", "bool", "false",
       "GRASP-05: accept every repository announcement as an archive (a mirror of a repository "
       "hosted elsewhere: its events are synced and its git data fetched). Anyone can then make "
       "this server store a repository.",
       bool_option(&C::archive_all)},
      {"archive_whitelist", "NGIT_ARCHIVE_WHITELIST", "--archive-whitelist", "list", "",
       "GRASP-05: comma separated repositories accepted as archives (npub, npub/identifier or "
       "identifier; an identifier alone matches every owner).",
       list_option(&C::archive_whitelist, parse_repository_rule, repository_list_expected)},
      {"archive_grasp_services", "NGIT_ARCHIVE_GRASP_SERVICES", "--archive-grasp-services", "list",
       "",
       "GRASP-05: comma separated GRASP services (host or host:port); an announcement with a "
       "clone URL https://<service>/<its npub>/<identifier>.git is accepted as an archive.",
       list_option(&C::archive_grasp_services, service_item, service_list_expected)},
      {"archive_read_only", "NGIT_ARCHIVE_READ_ONLY", "--archive-read-only", "bool", "",
       "GRASP-05: host nothing, only archive: an announcement that lists this service but that "
       "no archive rule takes is refused. Empty: true when an archive source (NGIT_ARCHIVE_ALL, "
       "NGIT_ARCHIVE_WHITELIST or NGIT_ARCHIVE_GRASP_SERVICES) is set.",
       archive_read_only_setter},
  };
}

/// GRASP-02 sync with the relays that repositories announce.
std::vector<OptionSpec> sync_options() {
  return {
      {"sync_enabled", "NGIT_SYNC_ENABLED", "--sync-enabled", "bool", "true",
       "Run the GRASP-02 sync manager.", bool_option(&C::sync_enabled)},
      {"sync_bootstrap_relay_url", "NGIT_SYNC_BOOTSTRAP_RELAY_URL", "--sync-bootstrap-relay-url",
       "ws(s) URL", "", "Relay that is always connected; empty = none.", bootstrap_url_setter},
      {"sync_peers", "NGIT_SYNC_PEERS", "--sync-peers", "list of ws(s) URLs", "",
       "The other nodes of a cluster: everything accepted or held is synced with them both ways; "
       "this node's own URL is ignored.",
       list_option(&C::sync_peers, relay_url_item, relay_list_expected)},
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
      {"sync_negentropy", "NGIT_SYNC_NEGENTROPY", "--sync-negentropy", "bool", "true",
       "Reconcile history with NIP-77 where the peer speaks it (false: always page by REQ).",
       bool_option(&C::sync_negentropy)},
  };
}

/// GRASP-03 Sync+ overlay (actors/plus/sync_plus).
std::vector<OptionSpec> sync_plus_options() {
  return {
      {"sync_plus_enabled", "NGIT_SYNC_PLUS_ENABLED", "--sync-plus-enabled", "bool", "true",
       "Run the GRASP-03 Sync+ overlay.", bool_option(&C::sync_plus_enabled)},
      {"sync_plus_user_index_relays", "NGIT_SYNC_PLUS_USER_INDEX_RELAYS",
       "--sync-plus-user-index-relays", "list of ws(s) URLs", "",
       "Where relay lists of authors without a known one are looked up.",
       list_option(&C::sync_plus_user_index_relays, relay_url_item, relay_list_expected)},
      {"sync_plus_fallback_relays", "NGIT_SYNC_PLUS_FALLBACK_RELAYS", "--sync-plus-fallback-relays",
       "list of ws(s) URLs", "", "Mailboxes for authors with no relay list.",
       list_option(&C::sync_plus_fallback_relays, relay_url_item, relay_list_expected)},
      {"sync_plus_reconcile_secs", "NGIT_SYNC_PLUS_RECONCILE_SECS", "--sync-plus-reconcile-secs",
       "seconds", "60", "Sync+ reconcile cadence.", uint_option(&C::sync_plus_reconcile_secs, 1)},
      {"sync_plus_refresh_secs", "NGIT_SYNC_PLUS_REFRESH_SECS", "--sync-plus-refresh-secs",
       "seconds", "86400", "Sync+ relay-list refresh cadence.",
       uint_option(&C::sync_plus_refresh_secs, 1)},
      {"sync_plus_retry_secs", "NGIT_SYNC_PLUS_RETRY_SECS", "--sync-plus-retry-secs", "seconds",
       "300", "Sync+ retry cadence after a failure.", uint_option(&C::sync_plus_retry_secs, 1)},
      {"sync_plus_history_workers", "NGIT_SYNC_PLUS_HISTORY_WORKERS", "--sync-plus-history-workers",
       "integer", "32",
       "Sync+ history workers (one relay each) at once, for every author together.",
       uint_option(&C::sync_plus_history_workers, 1, 1024)},
      {"sync_plus_author_workers", "NGIT_SYNC_PLUS_AUTHOR_WORKERS", "--sync-plus-author-workers",
       "integer", "4",
       "Sync+ history workers the mailbox relays of one author may hold at once; the relays of "
       "the authors with the fewest workers out are admitted first.",
       uint_option(&C::sync_plus_author_workers, 1, 1024)},
      {"sync_plus_relay_budget_secs", "NGIT_SYNC_PLUS_RELAY_BUDGET_SECS",
       "--sync-plus-relay-budget-secs", "seconds", "120",
       "Seconds one Sync+ history visit of a relay may take in all, however the relay trickles "
       "progress; a relay that spends it without completing a group is backed off (the retry "
       "cadence, doubling). 0: only the fetch path's own bounds (300 s per fetch).",
       uint_option(&C::sync_plus_relay_budget_secs, 0, 86400)},
      {"sync_plus_discovery_batches", "NGIT_SYNC_PLUS_DISCOVERY_BATCHES",
       "--sync-plus-discovery-batches", "integer", "4",
       "Sync+ discovery batches (kind 0 + 10002 of up to 100 authors) in flight at once, each on "
       "its own relay.",
       uint_option(&C::sync_plus_discovery_batches, 1, 64)},
      {"sync_plus_discovery_budget_secs", "NGIT_SYNC_PLUS_DISCOVERY_BUDGET_SECS",
       "--sync-plus-discovery-budget-secs", "seconds", "30",
       "Seconds one Sync+ discovery batch may take in all; a relay that spends it is backed off "
       "(the retry cadence, doubling). 0: only the fetch path's own bounds (300 s per fetch).",
       uint_option(&C::sync_plus_discovery_budget_secs, 0, 86400)},
  };
}

/// Git hosting (docs/spec/git-hosting.md): where repositories live and what one git request may
/// cost.
std::vector<OptionSpec> git_options() {
  return {
      {"git_data_path", "NGIT_GIT_DATA_PATH", "--git-data-path", "path", "./data/git",
       "Directory of the bare git repositories (<npub>/<identifier>.git).",
       [](Config& config, std::string_view text) -> Expectation {
         if (text.empty()) return "expected a directory path";
         config.git_data_path = std::string(text);
         return std::nullopt;
       }},
      {"git_max_body_bytes", "NGIT_GIT_MAX_BODY_BYTES", "--git-max-body-bytes", "integer",
       "1073741824",
       "Largest git request body (a push's pack), as sent and after gzip decoding; larger ones "
       "get 413.",
       uint_option(&C::git_max_body_bytes, 65536, 1ull << 40)},
      {"git_timeout_secs", "NGIT_GIT_TIMEOUT_SECS", "--git-timeout-secs", "seconds", "600",
       "Wall-clock limit of one git request; its git process is killed after it.",
       uint_option(&C::git_timeout_secs, 1, 86400)},
      {"git_idle_timeout_secs", "NGIT_GIT_IDLE_TIMEOUT_SECS", "--git-idle-timeout-secs", "seconds",
       "60", "A git client that sends or takes nothing for this long is disconnected.",
       uint_option(&C::git_idle_timeout_secs, 1, 3600)},
      {"git_max_processes", "NGIT_GIT_MAX_PROCESSES", "--git-max-processes", "integer", "8",
       "Git processes serving clients at once; requests beyond wait in line for one "
       "(NGIT_GIT_QUEUE_SECS).",
       uint_option(&C::git_max_processes, 1, 1024)},
      {"git_queue_secs", "NGIT_GIT_QUEUE_SECS", "--git-queue-secs", "seconds", "30",
       "How long a git request waits for a free git process (oldest first, at most 1024 "
       "waiting) before it gets 503 with Retry-After; 0 = 503 at once.",
       uint_option(&C::git_queue_secs, 0, 3600)},
      {"git_max_processes_per_ip", "NGIT_GIT_MAX_PROCESSES_PER_IP", "--git-max-processes-per-ip",
       "integer", "2",
       "Git processes serving one client address at once; its requests beyond wait in line "
       "while other addresses are served; 0 = no share.",
       uint_option(&C::git_max_processes_per_ip, 0, 1024)},
      {"git_max_connections", "NGIT_GIT_MAX_CONNECTIONS", "--git-max-connections", "integer", "512",
       "Git HTTP connections open at once; beyond, 503 at once; 0 = unlimited.",
       uint_option(&C::git_max_connections, 0, 1000000)},
      {"git_max_connections_per_ip", "NGIT_GIT_MAX_CONNECTIONS_PER_IP",
       "--git-max-connections-per-ip", "integer", "16",
       "Git HTTP connections open at once from one client address; beyond, 503 at once; 0 = "
       "unlimited.",
       uint_option(&C::git_max_connections_per_ip, 0, 1000000)},
      {"git_min_body_rate", "NGIT_GIT_MIN_BODY_RATE", "--git-min-body-rate", "integer", "1024",
       "A git request body must average this many bytes a second once NGIT_GIT_IDLE_TIMEOUT_SECS "
       "of waiting for it have passed, or the connection is closed; 0 = no minimum.",
       uint_option(&C::git_min_body_rate, 0, 1ull << 30)},
      {"git_maintenance_interval_secs", "NGIT_GIT_MAINTENANCE_INTERVAL_SECS",
       "--git-maintenance-interval-secs", "seconds", "600",
       "A repository written to (a push, a fetch) gets git gc --auto this long after the write, "
       "and "
       "at most once per this long, one repository at a time under NGIT_GIT_MAX_PROCESSES; 0 = "
       "never.",
       uint_option(&C::git_maintenance_interval_secs, 0, 7 * 86400)},
      {"git_maintenance_timeout_secs", "NGIT_GIT_MAINTENANCE_TIMEOUT_SECS",
       "--git-maintenance-timeout-secs", "seconds", "1800",
       "Wall-clock limit of one repository's maintenance; git is killed after it.",
       uint_option(&C::git_maintenance_timeout_secs, 1, 86400)},
      {"git_maintenance_max_memory_bytes", "NGIT_GIT_MAINTENANCE_MAX_MEMORY_BYTES",
       "--git-maintenance-max-memory-bytes", "integer", "1073741824",
       "Address space of a maintenance run (git and what it starts); git's pack window and caches "
       "are sized within it; 0 = unlimited.",
       uint_option(&C::git_maintenance_max_memory_bytes, 0, 1ull << 40)},
      {"git_max_nostr_refs", "NGIT_GIT_MAX_NOSTR_REFS", "--git-max-nostr-refs", "integer", "10000",
       "refs/nostr/<id> refs one repository may have (anyone may push them); a push that would "
       "pass it is refused, each of its refs answered `[remote rejected]` with the reason; 0 = "
       "unlimited.",
       uint_option(&C::git_max_nostr_refs, 0, 10'000'000)},
      {"git_max_nostr_ref_bytes", "NGIT_GIT_MAX_NOSTR_REF_BYTES", "--git-max-nostr-ref-bytes",
       "integer", "2097152",
       "Bytes the refs/nostr refs of one repository may take in its ref listing (`<id> <name>` "
       "lines), so the listing every clone and push reads stays far below its 16 MiB cap; a push "
       "that would pass it is refused as for NGIT_GIT_MAX_NOSTR_REFS; 0 = unlimited.",
       uint_option(&C::git_max_nostr_ref_bytes, 0, 1ull << 30)},
      {"git_pushes_per_minute_per_ip", "NGIT_GIT_PUSHES_PER_MINUTE_PER_IP",
       "--git-pushes-per-minute-per-ip", "integer", "60",
       "Pushes one client address may make a minute (bursts up to as many); past it each ref is "
       "answered `[remote rejected] (rate-limited: …)` and counted in graspd_git_refused_total "
       "{reason=\"push_rate\"}; 0 = unlimited.",
       uint_option(&C::git_pushes_per_minute_per_ip, 0, 1'000'000)},
      {"git_fetch_enabled", "NGIT_GIT_FETCH_ENABLED", "--git-fetch-enabled", "bool", "true",
       "Fetch the objects a stored state event names but no repository here has, by id, from "
       "the repository's other clone URLs.",
       bool_option(&C::git_fetch_enabled)},
      {"git_fetch_delay_secs", "NGIT_GIT_FETCH_DELAY_SECS", "--git-fetch-delay-secs", "seconds",
       "60",
       "A client's state event waits at most this long for a push to this server before what it "
       "misses is fetched (see NGIT_GIT_FETCH_PUSH_WINDOW_SECS).",
       uint_option(&C::git_fetch_delay_secs, 0, 86400)},
      {"git_fetch_timeout_secs", "NGIT_GIT_FETCH_TIMEOUT_SECS", "--git-fetch-timeout-secs",
       "seconds", "300", "Wall-clock limit of one fetch from another clone URL.",
       uint_option(&C::git_fetch_timeout_secs, 1, 86400)},
      {"git_fetch_max_running", "NGIT_GIT_FETCH_MAX_RUNNING", "--git-fetch-max-running", "integer",
       "4", "Fetches from other clone URLs running at once, over the whole daemon.",
       uint_option(&C::git_fetch_max_running, 1, 256)},
      {"git_fetch_max_per_host", "NGIT_GIT_FETCH_MAX_PER_HOST", "--git-fetch-max-per-host",
       "integer", "2", "Fetches running at once from one host (host:port).",
       uint_option(&C::git_fetch_max_per_host, 1, 256)},
      {"git_fetch_per_host_per_minute", "NGIT_GIT_FETCH_PER_HOST_PER_MINUTE",
       "--git-fetch-per-host-per-minute", "integer", "60",
       "Fetches started from one host in any 60 s; more wait.",
       uint_option(&C::git_fetch_per_host_per_minute, 1, 100000)},
      {"git_fetch_host_skip_secs", "NGIT_GIT_FETCH_HOST_SKIP_SECS", "--git-fetch-host-skip-secs",
       "seconds", "3600",
       "A host that failed DNS, connect or TLS is not fetched from for this long; 0 = never "
       "skipped.",
       uint_option(&C::git_fetch_host_skip_secs, 0, 7 * 86400)},
      {"git_fetch_max_requests_per_author", "NGIT_GIT_FETCH_MAX_REQUESTS_PER_AUTHOR",
       "--git-fetch-max-requests-per-author", "integer", "16",
       "Fetch requests kept at once for one author (of the state, whose repository's owner "
       "counts, or of the pull request); beyond, its new ones are not fetched; 0 = no share.",
       uint_option(&C::git_fetch_max_requests_per_author, 0, 100000)},
      {"git_fetch_max_running_per_author", "NGIT_GIT_FETCH_MAX_RUNNING_PER_AUTHOR",
       "--git-fetch-max-running-per-author", "integer", "2",
       "Fetches running at once for one author (half the default NGIT_GIT_FETCH_MAX_RUNNING: one "
       "stalled source of theirs leaves them another); its other requests wait while other "
       "authors' start; 0 = no share.",
       uint_option(&C::git_fetch_max_running_per_author, 0, 256)},
      {"git_fetch_max_requests_per_repository", "NGIT_GIT_FETCH_MAX_REQUESTS_PER_REPOSITORY",
       "--git-fetch-max-requests-per-repository", "integer", "8",
       "Fetch requests kept at once for pull requests' commits into one repository; beyond, new "
       "ones are not fetched (the repository's own state always has its request); 0 = no share.",
       uint_option(&C::git_fetch_max_requests_per_repository, 0, 100000)},
      {"git_fetch_max_running_per_repository", "NGIT_GIT_FETCH_MAX_RUNNING_PER_REPOSITORY",
       "--git-fetch-max-running-per-repository", "integer", "1",
       "Fetches running at once into one repository; 0 = no share.",
       uint_option(&C::git_fetch_max_running_per_repository, 0, 256)},
      {"git_fetch_push_window_secs", "NGIT_GIT_FETCH_PUSH_WINDOW_SECS",
       "--git-fetch-push-window-secs", "seconds", "10",
       "A client's state waits this long for its push to begin before what it misses is fetched; "
       "while a push to the repository is under way then, the wait goes on, by as much again each "
       "time, up to NGIT_GIT_FETCH_DELAY_SECS. A state that came by sync is fetched at once.",
       uint_option(&C::git_fetch_push_window_secs, 0, 86400)},
      {"git_fetch_urls_per_other_owner", "NGIT_GIT_FETCH_URLS_PER_OTHER_OWNER",
       "--git-fetch-urls-per-other-owner", "integer", "2",
       "Clone URLs a fetch takes from each announcement of the identifier by another owner than "
       "the repository's owner and maintainers (whose URLs are tried first, all of them); 0 = "
       "none.",
       uint_option(&C::git_fetch_urls_per_other_owner, 0, 64)},
      {"git_state_max_siblings", "NGIT_GIT_STATE_MAX_SIBLINGS", "--git-state-max-siblings",
       "integer", "4",
       "Other repositories here with the identifier that a state's missing objects are copied "
       "from before they are fetched, at most (the one just pushed first, then those whose state "
       "names them).",
       uint_option(&C::git_state_max_siblings, 0, 1024)},
      {"purgatory_enabled", "NGIT_PURGATORY_ENABLED", "--purgatory-enabled", "bool", "true",
       "Hold new announcements, state events whose git objects are missing and pull requests "
       "(kinds 1618/1619) whose commit is missing in purgatory (not stored, not served) until the "
       "git data arrives, and delete refs/nostr/<id> refs pushed for a PR event that does not "
       "arrive in time; false stores them at once.",
       bool_option(&C::purgatory_enabled)},
      {"purgatory_hold_secs", "NGIT_PURGATORY_HOLD_SECS", "--purgatory-hold-secs", "seconds",
       "1800",
       "How long an event waits in purgatory for its git data before it is dropped (and an "
       "announcement's repository with it), and how long a refs/nostr/<id> ref pushed before its "
       "PR event is kept; expiry is checked every quarter of it (at most every 30 s).",
       uint_option(&C::purgatory_hold_secs, 4, 7 * 86400)},
      {"purgatory_max_events", "NGIT_PURGATORY_MAX_EVENTS", "--purgatory-max-events", "integer",
       "10000",
       "Events held in purgatory at most; beyond it new ones are refused (`OK false \"error: too "
       "many events are waiting for git data here\"`).",
       uint_option(&C::purgatory_max_events, 1, 10'000'000)},
      {"purgatory_max_bytes", "NGIT_PURGATORY_MAX_BYTES", "--purgatory-max-bytes", "integer",
       "67108864", "Approximate bytes of the events held in purgatory at most (its memory).",
       uint_option(&C::purgatory_max_bytes, 65536, 1ull << 40)},
      {"purgatory_max_repositories", "NGIT_PURGATORY_MAX_REPOSITORIES",
       "--purgatory-max-repositories", "integer", "1000",
       "Held announcements at most: each has a repository directory on disk, so this bounds the "
       "disk purgatory takes.",
       uint_option(&C::purgatory_max_repositories, 1, 10'000'000)},
      {"purgatory_author_share_percent", "NGIT_PURGATORY_AUTHOR_SHARE_PERCENT",
       "--purgatory-author-share-percent", "integer", "1",
       "The part of each purgatory bound (events, bytes, repositories) one author may hold; "
       "beyond it their new events get `OK false \"rate-limited: …\"` while others are still "
       "held.",
       uint_option(&C::purgatory_author_share_percent, 1, 100)},
      {"purgatory_address_share_percent", "NGIT_PURGATORY_ADDRESS_SHARE_PERCENT",
       "--purgatory-address-share-percent", "integer", "5",
       "The part of each purgatory bound the events sent from one client address (IPv6: one /64) "
       "may hold, and each sync peer alone; beyond it `OK false \"rate-limited: …\"`.",
       uint_option(&C::purgatory_address_share_percent, 1, 100)},
      {"purgatory_sync_share_percent", "NGIT_PURGATORY_SYNC_SHARE_PERCENT",
       "--purgatory-sync-share-percent", "integer", "50",
       "The part of each purgatory bound the events that arrived by sync (they have no client "
       "address) may hold together, so clients always find room.",
       uint_option(&C::purgatory_sync_share_percent, 1, 100)},
      {"purgatory_remembered_ids", "NGIT_PURGATORY_REMEMBERED_IDS", "--purgatory-remembered-ids",
       "integer", "100000",
       "Ids of expired held events remembered at most (for 7 days: sync does not bring them back); "
       "beyond it the one due to be forgotten soonest goes.",
       uint_option(&C::purgatory_remembered_ids, 0, 10'000'000)},
      {"pr_max_repositories", "NGIT_PR_MAX_REPOSITORIES", "--pr-max-repositories", "integer", "16",
       "A pull request's (kind 1618/1619) repository `a` tags considered at most: its first this "
       "many repositories are those it is held for, looked for and fetched into; later tags stay "
       "in the event but do nothing here.",
       uint_option(&C::pr_max_repositories, 1, 1000)},
  };
}

/// Every option, in the order --help and docs/configuration.md list them.
std::vector<OptionSpec> build_table() {
  std::vector<OptionSpec> table;
  for (auto section :
       {server_options, connection_limits, subscription_limits, event_limits, transport_options,
        policy_options, git_options, sync_options, sync_plus_options}) {
    auto rows = section();
    table.insert(table.end(), std::make_move_iterator(rows.begin()),
                 std::make_move_iterator(rows.end()));
  }
  return table;
}

}  // namespace

const std::vector<OptionSpec>& option_table() {
  static const std::vector<OptionSpec> table = build_table();
  return table;
}

}  // namespace graspd::runtime
