// The option table: one row per option, each with the setter that parses its value into the
// Config field's type (value parsers in config_values.hpp).
#include <cstdint>
#include <string>
#include <utility>

#include "messages/nostr/nip19.hpp"
#include "runtime/config/config.hpp"
#include "runtime/config/option_setters.hpp"

namespace graspd::runtime {

// The sections and the setters share one namespace (not an anonymous one: unity batches).
namespace option_setters {

// ---- the table, in sections ----

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
       "Operator public key (npub1...), published as the NIP-11 pubkey (unset: the relay key is).",
       owner_npub_setter},
      {"relay_owner_nsec",
       "NGIT_RELAY_OWNER_NSEC",
       "",
       "nsec",
       "",
       "The relay's own secret key (nsec1... or 64 hex): signs its kind 0 and 10002, answers "
       "peers' AUTH; NIP-11 self. Environment or config file only, never a flag; empty = the "
       "systemd credential relay_owner_nsec, else NGIT_RELAY_OWNER_NSEC_FILE (docs/identity.md).",
       relay_owner_nsec_setter,
       {},
       true},
      {"relay_owner_nsec_file", "NGIT_RELAY_OWNER_NSEC_FILE", "--relay-owner-nsec-file", "path",
       "./.relay-owner.nsec",
       "File holding the relay key when neither the credential nor NGIT_RELAY_OWNER_NSEC gives "
       "one; created (mode 0600) with a new key when missing, forced to 0600 at start.",
       string_option(&C::relay_owner_nsec_file)},
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
       "WebSocket connections allowed from one IP address (behind a reverse proxy, set "
       "NGIT_TRUSTED_PROXY_CIDRS so that each client counts by its own address); 0 = unlimited.",
       uint_option(&C::max_connections_per_ip, 0, unlimited)},
      {"trusted_proxy_cidrs", "NGIT_TRUSTED_PROXY_CIDRS", "--trusted-proxy-cidrs", "list", "",
       "Reverse proxies (IPv4/IPv6 CIDRs or addresses, comma or blank separated) whose "
       "NGIT_TRUSTED_PROXY_HEADER names the client; every per-address limit, log line and metric "
       "then sees that client. Set it only when graspd is reachable through the proxy alone. "
       "Empty = none.",
       trusted_proxy_cidrs_setter},
      {"trusted_proxy_header", "NGIT_TRUSTED_PROXY_HEADER", "--trusted-proxy-header",
       "x-forwarded-for|forwarded|x-real-ip", "x-forwarded-for",
       "The header a trusted proxy writes the client into; read it only if the proxy sets or "
       "overwrites it (a header the proxy passes through unchanged lets clients choose their "
       "address).",
       trusted_proxy_header_setter},
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
      {"admin_npubs", "NGIT_ADMIN_NPUBS", "--admin-npubs", "list", "",
       "Comma separated keys (npub or hex) allowed to call the NIP-86 management API besides "
       "NGIT_OWNER_NPUB.",
       list_option(&C::admin_npubs, pubkey_item, pubkey_list_expected)},
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
      {"archive_max_repositories", "NGIT_ARCHIVE_MAX_REPOSITORIES", "--archive-max-repositories",
       "integer", "10000",
       "GRASP-05: archives kept at most; past it a new archive announcement is refused blocked: "
       "(archive full). 0 = no cap.",
       uint_option(&C::archive_max_repositories, 0, 100'000'000)},
      {"archive_max_bytes", "NGIT_ARCHIVE_MAX_BYTES", "--archive-max-bytes", "integer",
       "107374182400",
       "GRASP-05: bytes on disk all archives may use; at it new archives are refused blocked: and "
       "nothing more is fetched into any archive. 0 = no cap.",
       uint_option(&C::archive_max_bytes, 0, 1ull << 50)},
      {"archive_max_repository_bytes", "NGIT_ARCHIVE_MAX_REPOSITORY_BYTES",
       "--archive-max-repository-bytes", "integer", "2147483648",
       "GRASP-05: bytes on disk one archive may use; at it nothing more is fetched into it (its "
       "refs stay where the last complete fetch put them). 0 = no cap.",
       uint_option(&C::archive_max_repository_bytes, 0, 1ull << 50)},
      {"grasp06_enable", "NGIT_GRASP06_ENABLE", "--grasp06-enable", "bool", "false",
       "GRASP-06: serve pull-request submission areas at /prs/<npub>/<identifier>.git, where "
       "anyone "
       "may push refs/nostr/<event id> for a pull request, and accept pull requests whose clone "
       "is such an area even when their repository is not here.",
       bool_option(&C::grasp06_enable)},
      {"grasp06_max_bytes_per_ip", "NGIT_GRASP06_MAX_BYTES_PER_IP", "--grasp06-max-bytes-per-ip",
       "integer", "268435456",
       "GRASP-06: bytes one client address may push to pull-request submission areas an hour "
       "(refilled continuously; also the largest such push); past it, pushes to areas are refused "
       "rate-limited. 0 = only NGIT_GIT_MAX_BODY_BYTES.",
       uint_option(&C::grasp06_max_bytes_per_ip, 0, 1ull << 40)},
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
      {"sync_websocket_compression", "NGIT_SYNC_WEBSOCKET_COMPRESSION",
       "--sync-websocket-compression", "bool", "true",
       "Offer permessage-deflate to the relays sync connects to (not the cluster peers of "
       "NGIT_SYNC_PEERS), so what they send crosses the network compressed.",
       bool_option(&C::sync_websocket_compression)},
      {"replication_sweep_secs", "NGIT_REPLICATION_SWEEP_SECS", "--replication-sweep-secs",
       "seconds", "60",
       "Replication view: check one hosted repository's relays and git servers in the "
       "background this often (each at most once an hour). 0 = only when asked.",
       uint_option(&C::replication_sweep_secs, 0, 86400)},
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

}  // namespace option_setters

const std::vector<OptionSpec>& option_table() {
  static const std::vector<OptionSpec> table = option_setters::build_table();
  return table;
}

}  // namespace graspd::runtime
