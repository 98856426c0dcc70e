// The NIP-42 state of one connection: the challenge it was sent (made when first needed, never at
// connect, so public readers are never prompted) and the set of pubkeys it authenticated as, at
// most max_keys. Pure; the client session owns one per connection (GRASP-08 private services can
// reuse it with the challenge made at connect). docs/relay.md "Authentication".
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <set>
#include <string>

#include "messages/nostr/event.hpp"

namespace graspd {

class ConnectionKeys {
 public:
  /// Decision (spec §2.4): enough for a few signers per client, small enough to stay cheap.
  static constexpr std::size_t max_keys = 8;

  /// `make_challenge` gives a fresh random challenge (nostr::make_challenge; tests pass a fixed
  /// one).
  explicit ConnectionKeys(std::function<std::string()> make_challenge);

  /// The challenge sent on this connection; empty while none was.
  const std::string& challenge() const { return challenge_; }
  /// Makes the connection's challenge when none was sent yet and returns it, to be sent now;
  /// nullopt when the client has one already.
  std::optional<std::string> challenge_to_send();

  enum class Added { added, known, too_many };
  /// Records that the connection proved `pubkey`; too_many once max_keys others are recorded.
  Added add(const nostr::Pubkey& pubkey);

  bool has(const nostr::Pubkey& pubkey) const { return keys_.contains(pubkey); }
  bool empty() const { return keys_.empty(); }
  std::size_t size() const { return keys_.size(); }

 private:
  std::function<std::string()> make_challenge_;
  std::string challenge_;
  std::set<nostr::Pubkey> keys_;
};

}  // namespace graspd
