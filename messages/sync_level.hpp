// The level at which GRASP-02 syncs a repository; shared by the messages and the (CAF-free) plan.
#pragma once

#include <cstdint>

namespace graspd {

/// How much of a repository GRASP-02 syncs. Full: everything that references it (a/A/q), its
/// state events (30618 by #d) and the threads of its roots (e/E/q). StateOnly: its state events
/// only, from the relays its announcement names, while that announcement is held in purgatory
/// (docs/spec/git-hosting.md §1.4): a state is what brings the git data that promotes it to Full.
enum class SyncLevel : std::uint8_t { full, state_only };

/// "full" or "state_only" (/api/sync).
inline const char* to_string(SyncLevel level) {
  return level == SyncLevel::full ? "full" : "state_only";
}

}  // namespace graspd
