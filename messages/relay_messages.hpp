// Payloads of the relay actors' messages (client sessions, fan-out, the
// acceptance hook). See messages/interfaces.hpp for who handles what.
#pragma once

#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/meta/type_name.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "messages/frame.hpp"
#include "messages/nostr/event.hpp"
#include "messages/nostr/filter.hpp"
#include "messages/nostr/negentropy.hpp"
#include "messages/store_messages.hpp"

namespace graspd {

/// The way back to one client connection; thread-safe. Implemented over the
/// WebSocket transport (and by a recorder in tests).
class FrameSink {
 public:
  virtual ~FrameSink() = default;
  virtual void send(Frame frame) = 0;
  /// Sends frames in order; transports override it to hand them over at once.
  virtual void send_batch(std::vector<Frame> frames) {
    for (auto& frame : frames) send(std::move(frame));
  }
  /// Sends `last_frame` (if any) and closes the connection.
  virtual void close(Frame last_frame) = 0;
  /// The session is done with `bytes` of the client's text (inbound back-pressure).
  virtual void consumed(std::size_t /*bytes*/) {}
  /// Calls `ready` once the frames handed over so far leave at most `bytes` queued for the client
  /// (at once if they already do), from any thread; never after the connection closed. A stored
  /// query's answer waits for it between chunks (outbound back-pressure). A later request replaces
  /// an earlier one still waiting.
  virtual void when_drained(std::size_t /*bytes*/, std::function<void()> ready) { ready(); }
};
using FrameSinkPtr = std::shared_ptr<FrameSink>;

/// A client session registers one subscription for live events. The fan-out
/// buffers matches until FanoutLive, so nothing committed between the stored
/// query and going live is lost or sent before EOSE.
struct FanoutSubscribe {
  std::uint64_t connection_id = 0;
  std::string subscription_id;
  nostr::Filters filters;
  FrameSinkPtr sink;
};

/// The stored phase of a subscription is done (EOSE sent); `delivered` are
/// the ids already sent, so buffered duplicates are skipped.
struct FanoutLive {
  std::uint64_t connection_id = 0;
  std::string subscription_id;
  std::vector<nostr::EventId> delivered;
  /// The stored query's horizon (EventStore::query): a committed event below it was visible to
  /// the query, so it is never sent live, even when its commit notice arrives after this message.
  std::uint64_t horizon = 0;
};

struct FanoutUnsubscribe {
  std::uint64_t connection_id = 0;
  std::string subscription_id;
};

/// Drops every subscription of a closed connection.
struct FanoutDisconnect {
  std::uint64_t connection_id = 0;
};

/// An ephemeral event: broadcast to live subscriptions, never stored.
struct FanoutEphemeral {
  nostr::EventPtr event;
  std::shared_ptr<const std::string> json;
};

/// Asks a verifier to check an event's id and signature; answered with a nostr::EventCheck.
struct VerifyEvent {
  nostr::EventPtr event;
  /// The sender already recomputed the id: only the signature is left to check.
  bool id_checked = false;
};

/// Asks the acceptance actor to judge a valid event and, when it is accepted, to store it.
struct AcceptanceQuery {
  nostr::EventPtr event;
  /// Who sent it ("ip:<address>" for a client, "relay:<url>" for a sync peer): each source has a
  /// bounded share of the retry cache. Empty: not held to a share.
  std::string source;
  /// The client session checked that the connection is NIP-42 authenticated as the event's
  /// author. A NIP-70 protected event is refused without it (sync peers never set it).
  bool authenticated_author = false;
};

/// The answer to an AcceptanceQuery, sent after the commit when the event was accepted.
struct AcceptanceVerdict {
  bool accepted = true;
  /// On refusal: the OK message with its NIP-01 prefix ("blocked: ...").
  std::string message;
  /// On acceptance: what the store did (ephemeral_not_stored: the caller broadcasts it).
  WriteOutcome outcome = WriteOutcome::error;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, AcceptanceVerdict& x) {
  return f(caf::meta::type_name("AcceptanceVerdict"), x.accepted, x.message, x.outcome);
}

/// INTERNAL to the acceptance actor: the answer to a held state is due, whether or not git hosting
/// has said yet if its objects are here.
struct StateAnswerDue {
  nostr::EventId state{};
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, StateAnswerDue& x) {
  return f(caf::meta::type_name("StateAnswerDue"), x.state);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, FanoutUnsubscribe& x) {
  return f(caf::meta::type_name("FanoutUnsubscribe"), x.connection_id, x.subscription_id);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, FanoutDisconnect& x) {
  return f(caf::meta::type_name("FanoutDisconnect"), x.connection_id);
}

/// What a NIP-77 NEG-OPEN's store scan found: the records, nullopt when more than the bound
/// match, or `failed` (the query threw).
struct NegentropyScan {
  std::optional<std::vector<nostr::negentropy::Item>> items;
  bool failed = false;
};

/// Negentropy scanner -> client session: the scan of the NEG-OPEN `ticket` of `subscription_id`
/// ended (it ran on the scanner's threads, not the session's).
struct NegentropyScanned {
  std::string subscription_id;
  std::uint64_t ticket = 0;
  std::shared_ptr<NegentropyScan> scan;
};

}  // namespace graspd

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(graspd::NegentropyScanned)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(graspd::FanoutSubscribe)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(graspd::FanoutLive)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(graspd::FanoutEphemeral)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(graspd::VerifyEvent)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(graspd::AcceptanceQuery)
