// The client ("initiator") side of one NIP-77 session, as graspd's sync and
// `graspd sync` run it: our records for one filter, the NEG-OPEN / NEG-MSG /
// NEG-CLOSE frames, and the ids reported so far. Pure: the caller sends the
// frames and fetches or uploads the ids.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "messages/nostr/filter.hpp"
#include "messages/nostr/negentropy.hpp"

namespace graspd::nostr::negentropy {

/// What one peer message brought: ids not reported by an earlier round.
struct ClientRound {
  /// Records only we hold (to upload).
  std::vector<EventId> have;
  /// Records only the peer holds (to download).
  std::vector<EventId> need;
  /// The frame to send next: a NEG-MSG, or the NEG-CLOSE once reconciliation is complete.
  std::string frame;
  bool done = false;
};

/// Peer messages one session takes before it is abandoned (NGIT_NEGENTROPY_MAX_ROUNDS): an honest
/// relay finishes 1,000,000 records in well under a hundred rounds at the usual frame sizes, a
/// hostile one could keep answering forever.
inline constexpr std::size_t default_max_rounds = 2000;

class ClientSession {
 public:
  /// `ours` are our records matching `filter`. The filter goes out without its
  /// `limit` (a capped NEG-OPEN would reconcile an arbitrary subset).
  static Result<ClientSession> open(std::string subscription_id, Filter filter,
                                    std::vector<Item> ours,
                                    std::size_t frame_size_limit = client_frame_size_limit,
                                    std::size_t max_rounds = default_max_rounds);

  /// ["NEG-OPEN",<subid>,<filter>,<hex>]
  std::string open_frame() const;
  /// ["NEG-CLOSE",<subid>]: sent when done, or to abandon the session.
  std::string close_frame() const;

  /// Processes the payload of the peer's NEG-MSG. An error (bad hex, a
  /// malformed message, more than `max_rounds` messages: ErrorCode::too_many_rounds) ends the
  /// session: close it and fall back.
  Result<ClientRound> on_message(std::string_view hex);

  const std::string& subscription_id() const;
  const Filter& filter() const;
  /// Our records in the session.
  std::size_t local_records() const;
  /// Peer messages processed.
  std::size_t rounds() const;
  /// Distinct ids reported so far on each side.
  std::size_t have_count() const;
  std::size_t need_count() const;

 private:
  struct State;
  explicit ClientSession(std::unique_ptr<State> state);

  // Behind a pointer: the Negentropy object points into the Storage, so the
  // pair must not move when the session does.
  std::shared_ptr<State> state_;
};

/// True when a NOTICE received before the peer's first NEG-MSG says it refused the NEG-OPEN:
/// strfry sync's rule (docs/spec/nip77-negentropy.md §8 step 5), its lowercase text contains error,
/// invalid, unrecognized, bad msg, bad message, could not parse, disabled, unsupported or unknown.
bool notice_refuses_negentropy(std::string_view message);

}  // namespace graspd::nostr::negentropy

namespace graspd::nostr {

/// ["REQ",<subid>,<filter>...]
std::string client_req(std::string_view subscription_id, const Filters& filters);
/// ["CLOSE",<subid>]
std::string client_close(std::string_view subscription_id);
/// ["EVENT",<event json>]: `event_json` is inserted verbatim.
std::string client_event(std::string_view event_json);

}  // namespace graspd::nostr
