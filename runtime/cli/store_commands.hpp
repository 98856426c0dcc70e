// Operator commands on the LMDB store: `graspd export` (JSONL to stdout,
// optionally by filter) and `graspd import` (JSONL, every event's id and
// signature verified, committed in durable batches) and `graspd stats`
// (counts by kind, size on disk).
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <iosfwd>
#include <optional>
#include <string>

namespace graspd::runtime {

class ProgressLine;

/// Writes every stored event (or those matching `filter_json`, a NIP-01
/// filter object) as one JSON line each. Returns a process exit code. `progress`, when given,
/// shows the count (and the ETA of an unfiltered export).
int run_export(const std::filesystem::path& store_path,
               const std::optional<std::string>& filter_json, std::ostream& out, std::ostream& err,
               ProgressLine* progress = nullptr);

struct ImportOptions {
  /// Events per durable write transaction.
  std::size_t batch_size = 1000;
  /// Longest line read; a longer one is skipped (reported, never buffered
  /// whole), so one endless line cannot grow memory without bound.
  std::size_t max_line_bytes = 1048576;
  /// Shows lines read and, with `input_bytes`, the ETA; null = none.
  ProgressLine* progress = nullptr;
  /// Size of the input when known (stdin is a regular file), 0 otherwise.
  std::uint64_t input_bytes = 0;
};

/// Reads JSONL events from `in`, verifies each (id and signature), stores
/// them. After each committed batch prints "import: committed N lines ..." on
/// `err`; at the end a summary of accepted / duplicate / rejected. Exit code
/// 0 unless the store failed (rejected events are reported, not fatal).
int run_import(const std::filesystem::path& store_path, std::istream& in, std::ostream& err,
               const ImportOptions& options = {});

/// Prints the store's event count, counts by kind, the size of its data file and its map size.
int run_stats(const std::filesystem::path& store_path, std::ostream& out, std::ostream& err);

/// `graspd export [--data PATH] [--filter JSON]`, `graspd stats [--data PATH]` and
/// `graspd import [--data PATH]`: argv[1] is the subcommand. The store path
/// defaults to $NGIT_RELAY_DATA_PATH, else ./data/relay.
int run_store_command(int argc, char** argv);

/// True when argv[1] names a store command (for main's dispatch).
bool is_store_command(int argc, char** argv);

}  // namespace graspd::runtime
