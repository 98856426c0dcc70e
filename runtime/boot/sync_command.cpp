#include <utility>  // before Asio, see docs/toolchain.md §1

#include "runtime/boot/sync_command.hpp"

#include <signal.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>

#include <algorithm>
#include <iostream>
#include <string_view>
#include <variant>

#include "messages/nostr/json.hpp"
#include "runtime/boot/sync_args.hpp"
#include "runtime/boot/sync_ingest.hpp"
#include "runtime/boot/sync_session.hpp"
#include "runtime/boot/wire_policy.hpp"
#include "runtime/boot/wire_store.hpp"
#include "runtime/config/config.hpp"
#include "store/lmdb/event_store.hpp"

namespace graspd::boot {

namespace {

namespace neg = nostr::negentropy;

/// The NEG-OPEN subscription id, as strfry sync names it.
constexpr const char* kNegentropyId = "N";
constexpr int kFailure = 1;
constexpr int kUsageError = 2;
/// Incoming frames: strfry's NEG-MSG answers reach about a megabyte of hex.
constexpr std::size_t kMinMessageBytes = std::size_t{4} << 20;

/// Everything a run needs besides the network, built before dialling.
struct Prepared {
  runtime::Config config;
  std::shared_ptr<store::EventStore> store;
  std::optional<neg::ClientSession> negentropy;
};

std::optional<runtime::Config> load(const SyncArgs& args) {
  std::vector<std::string> flags;
  if (args.config_file) flags = {"--config", *args.config_file};
  auto loaded = runtime::load_config(flags, runtime::process_environment());
  if (!loaded) {
    std::cerr << "graspd sync: " << loaded.error().message << "\n";
    return std::nullopt;
  }
  auto config = std::move(loaded.value().config);
  if (args.data_path) config.data_path = *args.data_path;
  return config;
}

/// Opens the store and our side of the reconciliation; a message on stderr when it cannot.
bool prepare(const SyncArgs& args, Prepared& out) {
  try {
    out.store = std::make_shared<store::EventStore>(store_options(out.config));
    const auto cap = out.config.negentropy_max_sync_events;
    auto items = out.store->negentropy_items(args.filter, cap);
    if (!items) {
      std::cerr << "graspd sync: the store holds more than " << cap
                << " events for this filter (NGIT_NEGENTROPY_MAX_SYNC_EVENTS); narrow the "
                   "filter (since/until, kinds)\n";
      return false;
    }
    auto session =
        neg::ClientSession::open(kNegentropyId, args.filter, std::move(*items),
                                 args.frame_size_limit, out.config.negentropy_max_rounds);
    if (!session) {
      std::cerr << "graspd sync: " << session.error().detail << "\n";
      return false;
    }
    out.negentropy.emplace(std::move(*session));
    return true;
  } catch (const store::StoreError& e) {
    std::cerr << "graspd sync: " << e.what() << "\n";
    return false;
  }
}

/// The policy downloads go through: nullopt under `open`.
std::optional<policy::PolicyConfig> download_policy(const SyncArgs& args,
                                                    const runtime::Config& config) {
  auto mode = args.policy.value_or(config.acceptance_policy);
  if (mode == runtime::AcceptanceMode::open) return std::nullopt;
  return policy_config(config);
}

runtime::RelayClientOptions client_options(const runtime::Config& config) {
  runtime::RelayClientOptions options;
  options.allow_private_addresses = true;  // the operator chose this relay
  options.detailed_connect_errors = true;
  options.fetch_relay_info = false;  // download batches have a fixed size
  options.compression = config.sync_websocket_compression;
  options.max_message_bytes = std::max<std::size_t>(config.max_message_bytes, kMinMessageBytes);
  return options;
}

nostr::ParseLimits parse_limits(const runtime::Config& config, std::size_t max_message_bytes) {
  nostr::ParseLimits limits;
  limits.max_message_bytes = max_message_bytes;
  limits.max_event_bytes = config.max_event_bytes;
  limits.max_content_length = config.max_content_length;
  limits.max_event_tags = config.max_event_tags;
  return limits;
}

void print_start(const SyncArgs& args, const Prepared& prepared, bool policy) {
  std::cerr << "sync: " << args.url << ", dir " << to_string(args.direction)
            << (args.dry_run ? " (dry run)" : "") << ", filter "
            << nostr::serialize_filter(args.filter) << ", " << prepared.negentropy->local_records()
            << " local records in " << prepared.config.data_path;
  if (args.downloads())
    std::cerr << ", "
              << (policy ? "GRASP-01 policy for " + prepared.config.domain.text : "policy open");
  std::cerr << "\n";
}

/// Dials, runs the session to its end and prints the summary.
int run(const SyncArgs& args, Prepared& prepared, const ParsedUrl& url) {
  auto policy = download_policy(args, prepared.config);
  print_start(args, prepared, policy.has_value());
  std::unique_ptr<SyncIngest> ingest;
  if (args.downloads()) ingest = std::make_unique<SyncIngest>(prepared.store, policy);
  auto options = client_options(prepared.config);
  boost::asio::io_context io;
  SyncOutput output{std::cout, std::cerr, ::isatty(STDERR_FILENO) == 1};
  auto session = std::make_shared<SyncSession>(
      io, args, prepared.store, std::move(ingest), std::move(*prepared.negentropy),
      parse_limits(prepared.config, options.max_message_bytes), output);
  const auto started = std::chrono::steady_clock::now();
  session->start(url, options);
  io.run();
  std::cout.flush();
  auto summary = format_summary(session->figures(), std::chrono::steady_clock::now() - started);
  if (auto failure = session->failure()) {
    std::cerr << "sync: failed: " << *failure << "\nsync: " << summary << "\n";
    return kFailure;
  }
  std::cerr << "sync: done: " << summary << "\n";
  return 0;
}

}  // namespace

bool is_sync_command(int argc, char** argv) {
  return argc >= 2 && std::string_view(argv[1]) == "sync";
}

int run_sync_command(const std::vector<std::string>& raw) {
  auto args = parse_sync_args(raw);
  if (!args) {
    std::cerr << "graspd sync: " << args.error() << "\n" << sync_usage();
    return kUsageError;
  }
  if (args->help) {
    std::cout << sync_usage();
    return 0;
  }
  auto url = parse_url(args->url);
  if (!url || (url->scheme != "ws" && url->scheme != "wss")) {
    std::cerr << "graspd sync: " << args->url << " is not a ws:// or wss:// URL\n";
    return kUsageError;
  }
  Prepared prepared;
  auto config = load(*args);
  if (!config) return kUsageError;
  prepared.config = std::move(*config);
  if (!prepare(*args, prepared)) return kFailure;
  ::signal(SIGPIPE, SIG_IGN);
  return run(*args, prepared, *url);
}

}  // namespace graspd::boot
