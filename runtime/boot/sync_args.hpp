// `graspd sync` (runtime/boot/sync_command.*): its command line and its output, as pure functions
// (no I/O) so they are tested on their own: the arguments, the progress line redrawn on a
// terminal and the final summary.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "messages/nostr/filter.hpp"
#include "messages/nostr/json.hpp"
#include "runtime/config/config_values.hpp"

namespace graspd::boot {

/// What moves: `down` fetches what only the peer holds, `up` sends what only we hold, `none`
/// reconciles only (as strfry's --dir none).
enum class SyncDirection { both, down, up, none };

struct SyncArgs {
  std::string url;
  /// One NIP-01 filter object; its `limit` is dropped (a capped reconciliation covers an
  /// arbitrary subset).
  nostr::Filter filter;
  /// strfry sync's documented default.
  SyncDirection direction = SyncDirection::both;
  /// Reconcile only and print the counts.
  bool dry_run = false;
  /// Also print `have,<id>` / `need,<id>` lines on stdout (implies dry_run, like strfry's).
  bool print_missing = false;
  /// nullopt = NGIT_ACCEPTANCE_POLICY of the configuration.
  std::optional<runtime::AcceptanceMode> policy;
  /// Seconds without any frame from the peer before giving up; 0 = no limit (strfry's default).
  std::uint64_t timeout_secs = 0;
  /// Bytes of one outgoing negentropy message (0 = none); 60,000 like strfry sync.
  std::size_t frame_size_limit = 60000;
  /// --data PATH, else the configuration's NGIT_RELAY_DATA_PATH.
  std::optional<std::string> data_path;
  /// --config FILE: the daemon's configuration file (domain, curation lists, limits).
  std::optional<std::string> config_file;
  bool help = false;

  bool downloads() const {
    return !dry_run && (direction == SyncDirection::both || direction == SyncDirection::down);
  }
  bool uploads() const {
    return !dry_run && (direction == SyncDirection::both || direction == SyncDirection::up);
  }
};

/// Parses the arguments after `sync`. The error is one line naming the argument.
nostr::Parsed<SyncArgs> parse_sync_args(const std::vector<std::string>& args);

/// Text of `graspd sync --help`.
std::string sync_usage();

const char* to_string(SyncDirection direction);

/// Every figure of a run, shown by the progress line and the summary.
struct SyncFigures {
  std::uint64_t local_records = 0;
  std::uint64_t rounds = 0;
  bool reconciled = false;
  /// Distinct ids only we hold / only the peer holds.
  std::uint64_t have = 0;
  std::uint64_t need = 0;
  /// Download: events received, stored, already stored, refused by the policy or the store
  /// rules, held for a dependency that never came, and ids the peer did not deliver.
  std::uint64_t received = 0;
  std::uint64_t stored = 0;
  std::uint64_t duplicate = 0;
  std::uint64_t refused = 0;
  std::uint64_t invalid = 0;
  std::uint64_t parked = 0;
  std::uint64_t not_delivered = 0;
  /// Upload: EVENTs sent, answered OK true (accepted), OK false (rejected).
  std::uint64_t sent = 0;
  std::uint64_t sent_ok = 0;
  std::uint64_t sent_refused = 0;
};

/// One line for the terminal, e.g.
/// "sync: reconciled in 3 rounds  have 10 need 200  down 150/200 stored 140  up 5/10  320 ev/s
/// ETA 0:01" (the ETA once reconciled, while something is left to move).
std::string format_progress(const SyncFigures& figures, std::chrono::duration<double> elapsed);

/// The final summary line.
std::string format_summary(const SyncFigures& figures, std::chrono::duration<double> elapsed);

/// Decides when the progress line is redrawn: at most once per `interval`.
class ProgressThrottle {
 public:
  using Clock = std::chrono::steady_clock;
  explicit ProgressThrottle(Clock::duration interval) : interval_(interval) {}
  /// True (and remembers `now`) when the last redraw is at least one interval old.
  bool due(Clock::time_point now);

 private:
  Clock::duration interval_;
  std::optional<Clock::time_point> last_;
};

}  // namespace graspd::boot
