#include "runtime/boot/sync_args.hpp"

#include <cctype>
#include <charconv>
#include <cstdio>
#include <limits>

#include "messages/nostr/negentropy.hpp"
#include "runtime/ops/progress.hpp"

namespace graspd::boot {

namespace {

using Result = nostr::Parsed<SyncArgs>;

std::optional<std::uint64_t> parse_uint(std::string_view text) {
  std::uint64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc{} || end != text.data() + text.size() || text.empty()) return std::nullopt;
  return value;
}

std::optional<SyncDirection> parse_direction(std::string_view text) {
  if (text == "both") return SyncDirection::both;
  if (text == "down") return SyncDirection::down;
  if (text == "up") return SyncDirection::up;
  if (text == "none") return SyncDirection::none;
  return std::nullopt;
}

/// Sets the option `name` from `value`; an error message when the value is wrong.
std::optional<std::string> set_option(SyncArgs& out, std::string_view name,
                                      const std::string& value) {
  if (name == "--filter") {
    auto filter = nostr::parse_filter(value, nostr::ParseLimits{});
    if (!filter) return "bad --filter (one NIP-01 filter object): " + filter.error();
    out.filter = std::move(filter.value());
    out.filter.limit.reset();
  } else if (name == "--dir") {
    auto direction = parse_direction(value);
    if (!direction) return "bad --dir " + value + ": expected down, up, both or none";
    out.direction = *direction;
  } else if (name == "--policy") {
    out.policy = runtime::parse_acceptance_mode(value);
    if (!out.policy) return "bad --policy " + value + ": expected grasp01 or open";
  } else if (name == "--timeout") {
    auto secs = parse_uint(value);
    if (!secs) return "bad --timeout " + value + ": expected seconds";
    out.timeout_secs = *secs;
  } else if (name == "--frame-size-limit") {
    auto limit = parse_uint(value);
    if (!limit || (*limit != 0 && *limit < nostr::negentropy::min_frame_size_limit))
      return "bad --frame-size-limit " + value + ": expected 0 (none) or at least 4096";
    out.frame_size_limit = static_cast<std::size_t>(*limit);
  } else if (name == "--data") {
    out.data_path = value;
  } else if (name == "--config") {
    out.config_file = value;
  } else {
    return "unknown option " + std::string(name);
  }
  return std::nullopt;
}

bool takes_value(std::string_view name) {
  return name == "--filter" || name == "--dir" || name == "--policy" || name == "--timeout" ||
         name == "--frame-size-limit" || name == "--data" || name == "--config";
}

/// A flag without a value; false when `arg` is none.
bool set_flag(SyncArgs& out, std::string_view arg) {
  if (arg == "--help" || arg == "-h")
    out.help = true;
  else if (arg == "--dry-run")
    out.dry_run = true;
  else if (arg == "--print-missing")
    out.print_missing = out.dry_run = true;
  else
    return false;
  return true;
}

}  // namespace

nostr::Parsed<SyncArgs> parse_sync_args(const std::vector<std::string>& args) {
  SyncArgs out;
  for (std::size_t i = 0; i < args.size(); ++i) {
    std::string_view arg = args[i];
    if (set_flag(out, arg)) continue;
    if (!arg.starts_with("-")) {
      if (!out.url.empty()) return Result::failure("more than one relay URL: " + args[i]);
      out.url = args[i];
      continue;
    }
    auto equals = arg.find('=');
    std::string_view name = arg.substr(0, equals);
    if (!takes_value(name)) return Result::failure("unknown option " + args[i]);
    std::string value;
    if (equals != std::string_view::npos)
      value = std::string(arg.substr(equals + 1));
    else if (i + 1 < args.size())
      value = args[++i];
    else
      return Result::failure(std::string(name) + " needs a value");
    if (auto error = set_option(out, name, value)) return Result::failure(*error);
  }
  if (out.url.empty() && !out.help) return Result::failure("missing the relay URL");
  return out;
}

std::string sync_usage() {
  return "usage: graspd sync <relay-url> [options]\n"
         "Reconciles the events of the local store matching a filter with a relay over NIP-77\n"
         "(negentropy), then downloads what only the relay holds and uploads what only we hold.\n"
         "Works while the daemon runs on the same data directory.\n"
         "\n"
         "  --filter JSON            one NIP-01 filter object (default {}; its limit is ignored)\n"
         "  --dir DIR                down, up, both or none (default both, like strfry sync)\n"
         "  --dry-run                reconcile only and print the counts\n"
         "  --print-missing          print have,<id> and need,<id> lines on stdout (implies\n"
         "                           --dry-run)\n"
         "  --policy MODE            grasp01 (downloaded events pass the GRASP-01 acceptance\n"
         "                           policy) or open (stored as they are); default:\n"
         "                           NGIT_ACCEPTANCE_POLICY\n"
         "  --timeout S              give up after S seconds without a frame from the relay\n"
         "                           (default 0: no limit)\n"
         "  --frame-size-limit N     bytes of one outgoing negentropy message (default 60000,\n"
         "                           0 = none)\n"
         "  --data PATH              the store (default $NGIT_RELAY_DATA_PATH, else ./data/relay)\n"
         "  --config FILE            the daemon's configuration file (domain, curation lists,\n"
         "                           NGIT_NEGENTROPY_MAX_SYNC_EVENTS); NGIT_* variables apply too\n"
         "\n"
         "Exit codes: 0 done, 1 the sync failed (the last line says why), 2 bad usage.\n";
}

const char* to_string(SyncDirection direction) {
  switch (direction) {
    case SyncDirection::both:
      return "both";
    case SyncDirection::down:
      return "down";
    case SyncDirection::up:
      return "up";
    case SyncDirection::none:
      return "none";
  }
  return "?";
}

namespace {

std::string seconds_text(std::chrono::duration<double> elapsed) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f s", elapsed.count());
  return text;
}

std::string rate_text(std::uint64_t events, std::chrono::duration<double> elapsed) {
  if (elapsed.count() <= 0) return "0 ev/s";
  char text[32];
  std::snprintf(text, sizeof text, "%.0f ev/s", static_cast<double>(events) / elapsed.count());
  return text;
}

std::string n(std::uint64_t value) {
  return std::to_string(value);
}

}  // namespace

std::string format_progress(const SyncFigures& f, std::chrono::duration<double> elapsed) {
  std::string out = "sync: ";
  out += f.reconciled ? "reconciled in " + n(f.rounds) + " rounds"
                      : "reconciling (round " + n(f.rounds) + ")";
  out += "  have " + n(f.have) + " need " + n(f.need);
  if (f.received || f.stored)
    out += "  down " + n(f.received) + "/" + n(f.need) + " stored " + n(f.stored);
  if (f.sent) out += "  up " + n(f.sent_ok + f.sent_refused) + "/" + n(f.have);
  out += "  " + rate_text(f.received + f.sent, elapsed);
  // Once reconciled the work is known: the ids still to download and the events still unanswered.
  auto moved = static_cast<double>(f.received + f.sent);
  auto left = (f.need > f.received ? f.need - f.received : 0) +
              (f.have > f.sent_ok + f.sent_refused ? f.have - f.sent_ok - f.sent_refused : 0);
  if (f.reconciled && left > 0 && moved > 0 && elapsed.count() > 0)
    out += "  ETA " + runtime::eta_text(static_cast<double>(left) * elapsed.count() / moved);
  return out;
}

std::string format_summary(const SyncFigures& f, std::chrono::duration<double> elapsed) {
  return "have " + n(f.have) + ", need " + n(f.need) + ", sent " + n(f.sent) + " (accepted " +
         n(f.sent_ok) + ", rejected " + n(f.sent_refused) + "), received " + n(f.received) +
         ", stored " + n(f.stored) + ", duplicate " + n(f.duplicate) + ", refused " + n(f.refused) +
         ", invalid " + n(f.invalid) + ", parked " + n(f.parked) + ", not delivered " +
         n(f.not_delivered) + " (" + n(f.local_records) + " local records, " + n(f.rounds) +
         " rounds, " + seconds_text(elapsed) + ")";
}

bool ProgressThrottle::due(Clock::time_point now) {
  if (last_ && now - *last_ < interval_) return false;
  last_ = now;
  return true;
}

}  // namespace graspd::boot
