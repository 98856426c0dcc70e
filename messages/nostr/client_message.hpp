// NIP-01 / NIP-45 client -> relay messages, parsed from one WebSocket frame.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "messages/nostr/event.hpp"
#include "messages/nostr/filter.hpp"
#include "messages/nostr/json.hpp"

namespace graspd::nostr {

/// ["EVENT", <event>]. The event is structurally valid; id and signature are
/// not checked yet (check_event).
struct ClientEvent {
  Event event;
};

/// ["AUTH", <event>] (NIP-42): the client's answer to the relay's challenge. Structurally valid;
/// id, signature and the NIP-42 checks are the session's (messages/nostr/nip42.hpp).
struct ClientAuth {
  Event event;
};

/// ["REQ", <subscription_id>, <filter>, ...] (at least one filter).
struct ClientReq {
  std::string subscription_id;
  Filters filters;
};

/// ["CLOSE", <subscription_id>]
struct ClientClose {
  std::string subscription_id;
};

/// ["COUNT", <subscription_id>, <filter>, ...] (NIP-45).
struct ClientCount {
  std::string subscription_id;
  Filters filters;
};

/// ["NEG-OPEN", <subscription_id>, <filter object>, <hex message>] (NIP-77);
/// `message` is the decoded binary negentropy message.
struct ClientNegOpen {
  std::string subscription_id;
  Filter filter;
  std::string message;
};

/// ["NEG-MSG", <subscription_id>, <hex message>] (NIP-77), decoded.
struct ClientNegMsg {
  std::string subscription_id;
  std::string message;
};

/// ["NEG-CLOSE", <subscription_id>] (NIP-77).
struct ClientNegClose {
  std::string subscription_id;
};

using ClientMessage = std::variant<ClientEvent, ClientReq, ClientClose, ClientCount, ClientNegOpen,
                                   ClientNegMsg, ClientNegClose, ClientAuth>;

/// Why a frame was refused, shaped after the answer the relay owes:
struct ClientMessageError {
  enum class Kind {
    /// Not JSON, not an array, wrong arity or types, bad subscription id,
    /// too large: answer NOTICE(message).
    malformed,
    /// A verb graspd does not handle: NOTICE(message);
    /// `verb` holds it (at most 16 bytes) so callers can special-case later.
    unknown_verb,
    /// EVENT or AUTH whose event is invalid: OK(event_id, false, message) when
    /// event_id is known, else NOTICE(message); `verb` says which.
    invalid_event,
    /// REQ/COUNT with bad filters: CLOSED(subscription_id, message).
    invalid_filter,
    /// NEG-OPEN/NEG-MSG with a readable subscription id but a bad filter or
    /// hex payload: NEG-ERR(subscription_id, message).
    invalid_negentropy,
  };
  Kind kind = Kind::malformed;
  std::string message;  ///< NIP-01 prefixed, e.g. "invalid: bad pubkey"
  std::string verb;
  std::string subscription_id;
  std::optional<EventId> event_id;
};

using ParsedClientMessage = Parsed<ClientMessage, ClientMessageError>;

/// Parses one client frame with a single RapidJSON pass (UTF-8 validated,
/// nesting and size bounded by `limits`); the event of an EVENT is read from
/// the same DOM. Subscription ids must be 1..max_subid_length bytes.
ParsedClientMessage parse_client_message(std::string_view frame, const ParseLimits& limits);

}  // namespace graspd::nostr
