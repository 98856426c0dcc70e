// `graspd sync <relay-url> [--filter JSON] [--dir down|up|both|none] [--dry-run] ...`: a one-shot
// NIP-77 reconciliation of the store with another relay, modelled on `strfry sync`. It reads the
// daemon's configuration (NGIT_* variables, --config FILE) for the domain and curation lists of
// the acceptance policy and for NGIT_NEGENTROPY_MAX_SYNC_EVENTS, opens the store beside a running
// daemon if there is one (LMDB serialises the writers of both processes), runs one SyncSession on
// its own io_context and prints a summary. docs/operations.md describes it for operators.
#pragma once

#include <string>
#include <vector>

namespace graspd::boot {

/// True when argv[1] is "sync" (for main's dispatch).
bool is_sync_command(int argc, char** argv);

/// Runs `graspd sync` with the arguments after "sync". Exit code: 0 done, 1 the sync failed, 2 bad
/// usage or configuration.
int run_sync_command(const std::vector<std::string>& args);

}  // namespace graspd::boot
