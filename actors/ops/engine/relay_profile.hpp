// The relay's own profile (docs/identity.md "Publishing"): a kind 0 (name, about, nip05
// `_@<domain>`) and a kind 10002 (`["r", "wss://<domain>"]`) of the relay key, and the decision of
// which of them a user-index relay needs: ours where it holds none of that kind, or one whose
// content or tags differ. Pure: the publisher actor (relay_profile_publisher.hpp) drives it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "messages/nostr/event.hpp"
#include "messages/nostr/filter.hpp"

namespace graspd::ops {

struct RelayProfileContent {
  std::string name;       ///< NGIT_RELAY_NAME, else the domain
  std::string about;      ///< the relay description
  std::string domain;     ///< NGIT_DOMAIN: nip05 `_@<domain>`
  std::string relay_url;  ///< wss://<domain>, the 10002's one `r` tag
};

/// The kind 0 and the kind 10002, unsigned (no id, pubkey or sig), created at `created_at`.
std::vector<nostr::Event> relay_profile_events(const RelayProfileContent& content,
                                               std::int64_t created_at);

/// The filter asking a relay for `author`'s kind 0 and 10002.
nostr::Filter relay_profile_filter(const nostr::Pubkey& author);

/// What one user-index relay holds of the profile, and which of ours it needs.
class ProfileExchange {
 public:
  explicit ProfileExchange(std::vector<nostr::Event> ours) : ours_(std::move(ours)) {}

  /// An event the relay sent for the filter; kept when it is the newest of one of our kinds by
  /// our key (the caller checked its signature).
  void offer(const nostr::Event& theirs);

  /// Ours whose kind the relay holds nothing of, or holds with another content or other tags.
  std::vector<nostr::Event> needed() const;

 private:
  std::vector<nostr::Event> ours_;
  std::vector<nostr::Event> theirs_;  ///< the relay's newest of each of our kinds
};

}  // namespace graspd::ops
