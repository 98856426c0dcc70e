// graspd's configuration: one table (option_table() in config_table.cpp) declares every option with
// its environment variable, command-line flag, config-file key, default, description and the
// setter that parses it (value parsers in config_values.hpp). config.cpp loads and reports.
// Precedence: flag > environment (NGIT_*) > config file (--config FILE) > default.
//
// Adding an option = one field in Config + one entry in the table + one line in
// docs/configuration.md and deploy/graspd.conf.example (tests/runtime/config_docs_test.cpp checks).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "messages/errors.hpp"
#include "messages/nostr/event.hpp"
#include "messages/nostr/verify.hpp"
#include "messages/relay_url.hpp"
#include "runtime/config/config_values.hpp"
#include "runtime/net/forwarded_address.hpp"
#include "runtime/ops/log.hpp"
#include "store/policy/repository_rule.hpp"

namespace graspd::runtime {

/// The relay's own key pair (docs/identity.md).
struct RelayKey {
  nostr::SecretKey secret{};
  nostr::Pubkey pubkey{};
};

/// Every option, typed as the component that reads it needs it. Field defaults here are
/// placeholders: the table's default strings are what load_config() applies, so a default is
/// declared exactly once.
struct Config {
  // Network and identity.
  BindAddress bind_address;
  Domain domain;  ///< defaults to the bind address
  std::string data_path;
  std::string relay_name;
  std::string relay_description;
  std::optional<nostr::Pubkey> owner_npub;  ///< the key in the npub; nullopt = none published
  /// The relay's own secret key as configured (NGIT_RELAY_OWNER_NSEC); nullopt = not configured.
  std::optional<nostr::SecretKey> relay_owner_nsec;
  /// Where the relay key is read from, or written to when generated (NGIT_RELAY_OWNER_NSEC_FILE).
  std::string relay_owner_nsec_file;
  /// The relay key in effect, resolved at start (runtime/config/relay_key.hpp, docs/identity.md):
  /// signs the relay's own events; nullopt until then (and in check-config).
  std::optional<RelayKey> relay_key;

  // Operations.
  log::Level log_level = log::Level::info;
  bool metrics_enabled = true;
  /// The status page at GET /: rendered at most once per interval off the network threads,
  /// capped in bytes, each field cut (runtime/ops/status_page_cache.hpp).
  std::uint64_t status_page_interval_secs = 5;
  std::uint64_t status_page_max_bytes = 1048576;
  std::uint64_t status_page_max_field_bytes = 256;
  std::uint64_t status_page_repositories = 500;
  std::uint64_t scheduler_threads = 0;  ///< 0 = CAF default (one per core, at least 2)
  std::uint64_t io_threads = 0;         ///< 0 = one per core
  std::uint64_t max_connections = 0;    ///< 0 = unlimited (docs/spec/protocol.md §5)

  // Sizes.
  std::uint64_t max_message_bytes = 0;
  std::uint64_t max_event_bytes = 0;

  // Relay limits, advertised in NIP-11 `limitation`.
  std::uint64_t max_connections_per_ip = 256;  ///< 0 = unlimited
  /// NGIT_TRUSTED_PROXY_CIDRS and NGIT_TRUSTED_PROXY_HEADER: who may name the client.
  TrustedProxies trusted_proxies;
  std::uint64_t max_subscriptions = 0;
  std::uint64_t max_filters = 0;
  std::uint64_t max_count_examined = 200000;
  std::uint64_t max_subscription_values = 100000;
  std::uint64_t negentropy_max_sync_events = 1000000;
  std::uint64_t negentropy_max_sessions = 4;
  std::uint64_t negentropy_address_share_percent = 25;
  std::uint64_t negentropy_address_scan_rate = 200000;  ///< 0 = unbounded
  std::uint64_t negentropy_open_rate = 2;               ///< 0 = unbounded
  std::uint64_t negentropy_open_burst = 20;
  std::uint64_t negentropy_idle_secs = 60;  ///< 0 = never
  std::uint64_t negentropy_max_rounds = 2000;
  std::uint64_t negentropy_scan_threads = 2;
  std::uint64_t negentropy_scan_queue_per_address = 16;
  std::uint64_t max_limit = 0;
  std::uint64_t default_limit = 0;
  std::uint64_t max_subid_length = 0;
  std::uint64_t max_event_tags = 0;
  std::uint64_t max_content_length = 0;
  std::uint64_t event_rate = 0;   ///< sustained EVENTs per second per connection
  std::uint64_t event_burst = 0;  ///< EVENTs allowed in a burst above the rate
  std::uint64_t max_outbound_bytes = 0;
  std::uint64_t ping_interval_secs = 0;
  bool websocket_compression = true;
  std::uint64_t websocket_deflate_cache_bytes = 0;

  // Curation, parsed into what the acceptance policy matches.
  AcceptanceMode acceptance_policy = AcceptanceMode::grasp01;
  std::set<nostr::Pubkey> event_blacklist;
  /// NGIT_ADMIN_NPUBS: NIP-86 management API callers besides owner_npub.
  std::set<nostr::Pubkey> admin_npubs;
  std::vector<policy::RepositoryRule> repository_whitelist;
  std::vector<policy::RepositoryRule> repository_blacklist;
  // GRASP-05 archives (docs/policy.md "Archives").
  bool archive_all = false;
  std::vector<policy::RepositoryRule> archive_whitelist;
  std::vector<HostPort> archive_grasp_services;
  /// NGIT_ARCHIVE_READ_ONLY as given; unset = in effect iff an archive source is set.
  std::optional<bool> archive_read_only_option;
  /// Whether read-only is in effect (check_consistency derives it).
  bool archive_read_only = false;
  std::size_t archive_max_repositories = 10000;
  std::uint64_t archive_max_bytes = 107374182400ull;
  std::uint64_t archive_max_repository_bytes = 2147483648ull;
  /// NGIT_GRASP06_ENABLE: pull-request submission areas (docs/policy.md "Pull request
  /// submissions").
  bool grasp06_enable = false;
  std::uint64_t grasp06_max_bytes_per_ip = 256ull << 20;

  // Git hosting.
  std::string git_data_path;
  std::uint64_t git_recheck_interval_secs = 3600;
  std::uint64_t git_max_body_bytes = 0;
  std::uint64_t git_timeout_secs = 0;
  std::uint64_t git_idle_timeout_secs = 0;
  std::uint64_t git_max_processes = 0;
  std::uint64_t git_queue_secs = 0;
  std::uint64_t git_max_processes_per_ip = 0;
  std::uint64_t git_max_connections = 0;
  std::uint64_t git_max_connections_per_ip = 0;
  std::uint64_t git_min_body_rate = 0;
  std::uint64_t git_maintenance_interval_secs = 0;
  std::uint64_t git_maintenance_timeout_secs = 0;
  std::uint64_t git_maintenance_max_memory_bytes = 0;
  std::uint64_t git_max_nostr_refs = 0;
  std::uint64_t git_max_nostr_ref_bytes = 0;
  std::uint64_t git_pushes_per_minute_per_ip = 0;
  bool git_fetch_enabled = true;
  std::uint64_t git_fetch_delay_secs = 0;
  std::uint64_t git_fetch_timeout_secs = 0;
  std::uint64_t git_fetch_max_running = 0;
  std::uint64_t git_fetch_max_per_host = 0;
  std::uint64_t git_fetch_per_host_per_minute = 0;
  std::uint64_t git_fetch_host_skip_secs = 0;
  std::uint64_t git_fetch_max_requests_per_author = 0;
  std::uint64_t git_fetch_max_running_per_author = 0;
  std::uint64_t git_fetch_max_requests_per_repository = 0;
  std::uint64_t git_fetch_max_running_per_repository = 0;
  std::uint64_t git_fetch_push_window_secs = 0;
  std::uint64_t git_fetch_urls_per_other_owner = 0;
  std::uint64_t git_state_max_siblings = 0;
  bool purgatory_enabled = true;
  std::uint64_t purgatory_hold_secs = 0;
  std::uint64_t purgatory_max_events = 0;
  std::uint64_t purgatory_max_bytes = 0;
  std::uint64_t purgatory_max_repositories = 0;
  std::uint64_t purgatory_author_share_percent = 0;
  std::uint64_t purgatory_address_share_percent = 0;
  std::uint64_t purgatory_sync_share_percent = 0;
  std::uint64_t purgatory_remembered_ids = 0;
  std::uint64_t pr_max_repositories = 0;

  // GRASP-02 sync.
  bool sync_enabled = true;
  std::optional<CanonicalRelayUrl> sync_bootstrap_relay_url;  ///< nullopt = none
  /// The other nodes of a cluster (NGIT_SYNC_PEERS): synced for everything, in both directions.
  std::vector<CanonicalRelayUrl> sync_peers;
  std::uint64_t sync_base_backoff_secs = 0;
  std::uint64_t sync_max_backoff_secs = 0;
  std::uint64_t sync_batch_window_ms = 0;
  std::uint64_t sync_quick_reconnect_secs = 0;
  std::uint64_t sync_consolidation_threshold = 0;
  std::uint64_t sync_daily_resync_min_secs = 0;
  std::uint64_t sync_daily_resync_max_secs = 0;
  std::uint64_t sync_disconnect_check_interval_secs = 0;
  std::uint64_t sync_dead_after_secs = 0;
  std::uint64_t sync_rate_limit_cooldown_secs = 0;
  bool sync_allow_private_addresses = false;
  bool sync_negentropy = true;
  bool sync_websocket_compression = true;
  std::uint64_t sync_max_relays = 0;
  /// Replication view: one background repository check every this often; 0 = on request only.
  std::uint64_t replication_sweep_secs = 60;

  // GRASP-03 Sync+ overlay (runs with the GRASP-02 manager).
  bool sync_plus_enabled = true;
  std::vector<CanonicalRelayUrl> sync_plus_user_index_relays;
  std::vector<CanonicalRelayUrl> sync_plus_fallback_relays;
  std::uint64_t sync_plus_reconcile_secs = 0;
  std::uint64_t sync_plus_refresh_secs = 0;
  std::uint64_t sync_plus_retry_secs = 0;
  std::uint64_t sync_plus_history_workers = 32;
  std::uint64_t sync_plus_author_workers = 4;
  std::uint64_t sync_plus_relay_budget_secs = 120;  ///< 0 = the fetch path's bounds only
  std::uint64_t sync_plus_discovery_batches = 4;
  std::uint64_t sync_plus_discovery_budget_secs = 30;  ///< 0 = the fetch path's bounds only

  /// Path of the config file that was read, empty when none.
  std::string config_file;
};

/// Parses `text` into the option's field of `config`; returns what was expected on failure
/// (e.g. "expected host:port"), std::nullopt on success.
using OptionSetter =
    std::function<std::optional<std::string>(Config& config, std::string_view text)>;

/// One declared option.
struct OptionSpec {
  std::string_view key;            ///< config-file key, e.g. "bind_address"
  std::string_view env;            ///< environment variable, e.g. "NGIT_BIND_ADDRESS"
  std::string_view flag;           ///< command-line flag, e.g. "--bind-address"
  std::string_view type;           ///< human readable type for --help and docs
  std::string_view default_value;  ///< as text; "" means empty / none
  std::string_view description;
  OptionSetter set;
  /// Why nothing reads the option yet, empty when it takes effect. Such an option is still
  /// validated (configurations written for ngit-grasp start unchanged), --help and the docs say
  /// it does nothing, and setting it is warned about at start.
  std::string_view no_effect_yet = {};
  /// The value is a secret: the option has no flag (argv is readable by every local user),
  /// its value is never echoed (errors, `graspd check-config`), and set explicitly it may not be
  /// empty.
  bool secret = false;
};

/// The table of every option, in documentation order.
const std::vector<OptionSpec>& option_table();

/// What the command line asked for.
enum class Action { run, help, version };

/// One option's value as loaded, and where it came from (for `graspd check-config`).
struct EffectiveOption {
  const OptionSpec* spec = nullptr;
  std::string value;
  std::string origin;  ///< e.g. "NGIT_LOG_LEVEL", "--log-level", "log_level (graspd.conf:3)"
  bool set_explicitly = false;
};

struct LoadedConfig {
  Action action = Action::run;
  Config config;
  /// Every option of the table in order, with its value's origin.
  std::vector<EffectiveOption> effective;
  /// One line per option set by flag, environment or file that has no effect yet.
  std::vector<std::string> warnings;
};

/// A configuration error: its code and one line already naming the option, the value and what is
/// expected.
using ConfigError = ConfigFailure;

/// Reads an environment variable; std::nullopt when unset.
using EnvironmentLookup = std::function<std::optional<std::string>(std::string_view name)>;

/// The process environment (getenv).
EnvironmentLookup process_environment();

/// Builds the configuration from flags (`args` excludes the program name), the environment and the
/// optional config file, over the table defaults.
Result<LoadedConfig, ConfigError> load_config(const std::vector<std::string>& args,
                                              const EnvironmentLookup& environment);

/// Text of `graspd --help`.
std::string help_text();

/// Once the listener is bound: when it was asked for any free port (0) and the domain defaulted to
/// the bind address, both take the bound port.
void adopt_bound_port(Config& config, std::uint16_t port);

}  // namespace graspd::runtime
