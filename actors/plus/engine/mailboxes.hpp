// GRASP-03 target hygiene and mailbox selection (pure). Every URL of a kind 10002 is untrusted
// peer input: it passes the GRASP-02 URL guard (ws/wss only, no user-info, bounded length, plain
// path; loopback, private, link-local and unspecified literal addresses and `localhost` refused
// unless private addresses are allowed; never this service itself) before it takes any slot; the
// resolved address is checked again when the connection dials. Accepted URLs are canonical and
// deduplicated, then each author contributes at most `max_relays_per_purpose` relays per purpose,
// in published tag order.
#pragma once

#include <cstddef>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "actors/plus/engine/plus_inventory.hpp"

namespace graspd::sync {

/// The hard per-author, per-purpose bound (not an option): NIP-65 guides users to two to four.
inline constexpr std::size_t max_relays_per_purpose = 4;

struct HygieneConfig {
  /// Canonical URLs of this service: never a target.
  std::set<std::string> own_relays;
  bool allow_private_addresses = false;
};

/// The canonical key of an untrusted relay URL, or nullopt when the guard refuses it.
std::optional<std::string> hygienic_relay(std::string_view url, const HygieneConfig& config);

/// One author's relays by purpose, each at most max_relays_per_purpose, canonical and distinct.
struct AuthorMailboxes {
  /// read and unmarked: live inbox coverage (root authors) and owner/maintainer inbox probes.
  std::vector<std::string> inboxes;
  /// write and unmarked: identity refresh sources (outboxes).
  std::vector<std::string> outboxes;
  /// write and unmarked first, then read: history mailboxes of participants.
  std::vector<std::string> history;
  /// URLs the guard refused (counted, never dialled).
  std::size_t refused = 0;
};

AuthorMailboxes select_mailboxes(const RelayList& list, const HygieneConfig& config);

}  // namespace graspd::sync
