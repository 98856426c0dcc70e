// One relay compared with our store over a repository's filters by NIP-77, counting the ids each
// side lacks and downloading nothing: one NEG session per filter, one after the other, on one
// connection. Pure: the replication probe actor (actors/sync/replication_probe.*) carries the
// frames both ways.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "actors/sync/engine/negentropy_history.hpp"
#include "messages/nostr/filter.hpp"
#include "messages/nostr/negentropy_client.hpp"

namespace graspd::sync {

/// The reason given for a relay that does not take part in NIP-77.
inline constexpr std::string_view no_nip77 = "does not speak NIP-77";

class RelayComparison {
 public:
  RelayComparison(nostr::Filters filters, LocalRecords local, std::size_t max_records,
                  std::size_t max_rounds = nostr::negentropy::default_max_rounds);

  struct Step {
    std::vector<std::string> frames;  ///< to send, in order
    bool finished = false;            ///< every filter compared, or failed
    std::string failure;              ///< why there are no figures (finished only)
  };

  /// The connection is open: the first NEG-OPEN, or a failure when the peer's NIP-11 lists its
  /// NIPs without 77.
  Step start(std::optional<bool> peer_lists_nip77);
  /// A frame from the peer.
  Step on_frame(std::string_view text);
  /// Whether the peer answered any NEG-OPEN (a timeout before means it ignores NIP-77).
  bool answered() const { return answered_; }

  std::uint64_t only_there() const { return need_.size(); }
  std::uint64_t only_here() const { return have_.size(); }

 private:
  Step open_next();
  Step fail(std::string reason);
  Step on_round(std::string_view hex);

  nostr::Filters filters_;
  LocalRecords local_;
  std::size_t max_records_;
  std::size_t max_rounds_;
  std::size_t next_ = 0;
  std::optional<nostr::negentropy::ClientSession> session_;
  bool answered_ = false;
  bool finished_ = false;
  std::set<nostr::EventId> have_;
  std::set<nostr::EventId> need_;
};

}  // namespace graspd::sync
