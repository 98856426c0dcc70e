#include "runtime/cli/store_commands.hpp"

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <limits>
#include <string_view>
#include <vector>

#include <sys/stat.h>
#include <unistd.h>

#include "messages/nostr/json.hpp"
#include "messages/nostr/verify.hpp"
#include "runtime/ops/progress.hpp"
#include "store/lmdb/event_store.hpp"

namespace graspd::runtime {

namespace {

constexpr int kUsageError = 2;
constexpr int kFailure = 1;

bool store_exists(const std::filesystem::path& path) {
  return std::filesystem::exists(path / "data.mdb");
}

/// Counters of an import run.
struct ImportTally {
  std::uint64_t lines = 0;
  std::uint64_t accepted = 0;
  std::uint64_t duplicate = 0;
  std::uint64_t rejected = 0;

  void print(std::ostream& err, std::string_view what) const {
    err << "import: " << what << " " << lines << " lines, accepted " << accepted << ", duplicate "
        << duplicate << ", rejected " << rejected << "\n";
    err.flush();
  }
};

/// Rejections are reported for the first few lines only, so a bad file does
/// not flood the terminal.
constexpr std::uint64_t kReportedRejections = 20;

void reject(ImportTally& tally, std::ostream& err, std::string_view why) {
  if (++tally.rejected <= kReportedRejections)
    err << "import: line " << tally.lines << ": " << why << "\n";
}

bool commit(store::EventStore& store, std::vector<nostr::EventPtr>& batch, ImportTally& tally,
            std::ostream& err) {
  auto outcomes = store.write_batch(batch);
  batch.clear();
  for (auto outcome : outcomes) {
    switch (outcome) {
      case WriteOutcome::stored:
      case WriteOutcome::replaced_older:
        ++tally.accepted;
        break;
      case WriteOutcome::duplicate:
        ++tally.duplicate;
        break;
      case WriteOutcome::error:
        err << "import: " << store.last_error() << "\n";
        return false;
      default:
        ++tally.rejected;
    }
  }
  tally.print(err, "committed");
  return true;
}

std::optional<std::string> take_value(int& i, int argc, char** argv, std::ostream& err) {
  if (i + 1 >= argc) {
    err << "graspd: " << argv[i] << " needs a value\n";
    return std::nullopt;
  }
  return std::string(argv[++i]);
}

std::filesystem::path default_store_path() {
  const char* env = std::getenv("NGIT_RELAY_DATA_PATH");
  return env && *env ? env : "./data/relay";
}

constexpr std::string_view kUsage =
    "usage: graspd export [--data PATH] [--filter JSON]   stored events as JSONL on stdout\n"
    "       graspd import [--data PATH]                   JSONL events from stdin\n"
    "       graspd stats [--data PATH]                    counts by kind, size on disk\n"
    "PATH defaults to $NGIT_RELAY_DATA_PATH, else ./data/relay.\n";

}  // namespace

int run_export(const std::filesystem::path& store_path,
               const std::optional<std::string>& filter_json, std::ostream& out, std::ostream& err,
               ProgressLine* progress) {
  std::optional<nostr::Filter> filter;
  if (filter_json) {
    auto parsed = nostr::parse_filter(*filter_json, nostr::ParseLimits{});
    if (!parsed) {
      err << "graspd export: bad --filter: " << parsed.error() << "\n";
      return kUsageError;
    }
    filter = std::move(parsed.value());
  }
  if (!store_exists(store_path)) {
    err << "graspd export: no store at " << store_path.string() << "\n";
    return kFailure;
  }
  try {
    store::StoreOptions options;
    options.path = store_path;
    store::EventStore store(options);
    std::uint64_t exported = 0;
    if (filter) {
      store::QueryOptions query;
      query.max_limit = std::numeric_limits<std::uint64_t>::max();
      store.query(
          {*filter},
          [&](const store::QueryHit& hit) {
            out << hit.json << '\n';
            ++exported;
            if (progress) progress->update(exported);
          },
          query);
    } else {
      auto total = static_cast<double>(std::max<std::uint64_t>(store.size(), 1));
      store.for_each([&](std::string_view json) {
        out << json << '\n';
        ++exported;
        if (progress) progress->update(exported, static_cast<double>(exported) / total);
        return static_cast<bool>(out);
      });
    }
    out.flush();
    if (progress) progress->clear();
    err << "export: " << exported << " events\n";
    return out ? 0 : kFailure;
  } catch (const store::StoreError& e) {
    err << "graspd export: " << e.what() << "\n";
    return kFailure;
  }
}

/// Reads one line of at most `max` bytes into `line`. A longer line is read
/// to its end without being kept; then `too_long` is set. False at the end.
static bool read_bounded_line(std::istream& in, std::string& line, std::size_t max,
                              bool& too_long) {
  line.clear();
  too_long = false;
  std::streambuf* buffer = in.rdbuf();
  for (;;) {
    int c = buffer->sbumpc();
    if (c == std::char_traits<char>::eof()) {
      in.setstate(std::ios::eofbit);
      return !line.empty() || too_long;
    }
    if (c == '\n') return true;
    if (line.size() < max)
      line.push_back(static_cast<char>(c));
    else
      too_long = true;
  }
}

int run_import(const std::filesystem::path& store_path, std::istream& in, std::ostream& err,
               const ImportOptions& options) {
  try {
    store::StoreOptions store_options;
    store_options.path = store_path;
    store::EventStore store(store_options);
    nostr::ParseLimits limits;
    ImportTally tally;
    std::vector<nostr::EventPtr> batch;
    std::string line;
    bool too_long = false;
    std::uint64_t bytes_read = 0;
    // Other lines are about to be printed: the progress line gives way and is redrawn later.
    auto quiet = [&] {
      if (options.progress) options.progress->clear();
    };
    while (read_bounded_line(in, line, options.max_line_bytes, too_long)) {
      ++tally.lines;
      bytes_read += line.size() + 1;
      if (options.progress) {
        std::optional<double> fraction;
        if (options.input_bytes)
          fraction = std::min(
              1.0, static_cast<double>(bytes_read) / static_cast<double>(options.input_bytes));
        options.progress->update(tally.lines, fraction);
      }
      if (too_long) {
        quiet();
        reject(tally, err, "line longer than " + std::to_string(options.max_line_bytes) + " bytes");
        continue;
      }
      if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
      auto parsed = nostr::parse_event(line, limits);
      if (!parsed) {
        quiet();
        reject(tally, err, parsed.error());
        continue;
      }
      if (auto check = nostr::check_event(*parsed); check != nostr::EventCheck::ok) {
        quiet();
        reject(tally, err, nostr::describe(check));
        continue;
      }
      batch.push_back(std::make_shared<const nostr::Event>(std::move(parsed.value())));
      if (batch.size() >= options.batch_size) {
        quiet();
        if (!commit(store, batch, tally, err)) return kFailure;
      }
    }
    quiet();
    if (!batch.empty() && !commit(store, batch, tally, err)) return kFailure;
    tally.print(err, "done:");
    return 0;
  } catch (const store::StoreError& e) {
    err << "graspd import: " << e.what() << "\n";
    return kFailure;
  }
}

int run_stats(const std::filesystem::path& store_path, std::ostream& out, std::ostream& err) {
  if (!store_exists(store_path)) {
    err << "graspd stats: no store at " << store_path.string() << "\n";
    return kFailure;
  }
  try {
    store::StoreOptions options;
    options.path = store_path;
    store::EventStore store(options);
    auto by_kind = store.count_by_kind();
    std::error_code ignored;
    auto file_bytes = std::filesystem::file_size(store_path / "data.mdb", ignored);
    out << "store: " << store_path.string() << "\n"
        << "events: " << store.size() << "\n"
        << "size on disk: " << file_bytes << " bytes (" << file_bytes / (1024 * 1024) << " MiB)\n"
        << "map size: " << store.map_size() << " bytes\n"
        << "kinds: " << by_kind.size() << "\n";
    for (auto [kind, count] : by_kind) out << "  kind " << kind << ": " << count << "\n";
    return out ? 0 : kFailure;
  } catch (const store::StoreError& e) {
    err << "graspd stats: " << e.what() << "\n";
    return kFailure;
  }
}

bool is_store_command(int argc, char** argv) {
  if (argc < 2) return false;
  std::string_view command = argv[1];
  return command == "export" || command == "import" || command == "stats";
}

int run_store_command(int argc, char** argv) {
  if (!is_store_command(argc, argv)) {
    std::cerr << kUsage;
    return kUsageError;
  }
  std::string_view command = argv[1];
  std::filesystem::path path = default_store_path();
  std::optional<std::string> filter;
  for (int i = 2; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::cout << kUsage;
      return 0;
    }
    if (arg == "--data") {
      auto value = take_value(i, argc, argv, std::cerr);
      if (!value) return kUsageError;
      path = *value;
    } else if (arg == "--filter" && command == "export") {
      filter = take_value(i, argc, argv, std::cerr);
      if (!filter) return kUsageError;
    } else {
      std::cerr << "graspd " << command << ": unknown option " << arg << "\n" << kUsage;
      return kUsageError;
    }
  }
  std::ios::sync_with_stdio(false);
  ProgressLine progress(std::cerr, stderr_is_terminal(), std::string(command),
                        command == "import" ? "lines" : "events");
  if (command == "export") return run_export(path, filter, std::cout, std::cerr, &progress);
  if (command == "stats") return run_stats(path, std::cout, std::cerr);
  ImportOptions options;
  options.progress = &progress;
  struct stat input {};
  if (::fstat(STDIN_FILENO, &input) == 0 && S_ISREG(input.st_mode))
    options.input_bytes = static_cast<std::uint64_t>(input.st_size);
  return run_import(path, std::cin, std::cerr, options);
}

}  // namespace graspd::runtime
