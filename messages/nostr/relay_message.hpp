// NIP-01 / NIP-45 relay -> client frames: builders (relay side) and a parser
// (for graspd acting as a client of other relays).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "messages/nostr/event.hpp"
#include "messages/nostr/json.hpp"

namespace graspd::nostr {

// Builders. Subscription ids and messages are untrusted text: they are
// escaped like JSON.stringify and invalid UTF-8 becomes U+FFFD, so the frame
// is always valid JSON. `event_json` must already be event JSON
// (serialize_event or stored bytes); it is inserted verbatim.
std::string relay_event(std::string_view subscription_id, std::string_view event_json);
std::string relay_ok(const EventId& id, bool accepted, std::string_view message);
std::string relay_eose(std::string_view subscription_id);
std::string relay_closed(std::string_view subscription_id, std::string_view message);
std::string relay_notice(std::string_view message);
/// ["AUTH",<challenge>] (NIP-42).
std::string relay_auth(std::string_view challenge);
/// ["COUNT",<subid>,{"count":N}] or with "approximate":true (NIP-45).
std::string relay_count(std::string_view subscription_id, std::uint64_t count,
                        bool approximate = false);
/// ["NEG-MSG",<subid>,"<hex>"] (NIP-77); `hex` must already be lowercase hex.
std::string relay_neg_msg(std::string_view subscription_id, std::string_view hex);
/// ["NEG-ERR",<subid>,"<reason>"] and, for "blocked:" answers, the relay's
/// record limit as a fourth element (as strfry sends it).
std::string relay_neg_err(std::string_view subscription_id, std::string_view reason,
                          std::optional<std::uint64_t> limit = std::nullopt);

struct RelayEvent {
  std::string subscription_id;
  Event event;
};
struct RelayOk {
  EventId event_id{};
  bool accepted = false;
  std::string message;
};
struct RelayEose {
  std::string subscription_id;
};
struct RelayClosed {
  std::string subscription_id;
  std::string message;
};
struct RelayNotice {
  std::string message;
};
struct RelayCount {
  std::string subscription_id;
  std::uint64_t count = 0;
  bool approximate = false;
};
/// ["NEG-MSG",<subid>,<hex>] (NIP-77); `hex` is checked for hex digits only.
struct RelayNegMsg {
  std::string subscription_id;
  std::string hex;
};
/// ["NEG-ERR",<subid>,<reason>(,<limit>)]; strfry adds its record limit to "blocked:" answers.
struct RelayNegErr {
  std::string subscription_id;
  std::string reason;
  std::optional<std::uint64_t> limit;
};

using RelayMessage = std::variant<RelayEvent, RelayOk, RelayEose, RelayClosed, RelayNotice,
                                  RelayCount, RelayNegMsg, RelayNegErr>;

/// Parses a frame received from a relay. Same strictness as the client side
/// (the event inside EVENT goes through parse_event); the error is a plain
/// "invalid: ..." description for logs and counters. Other verbs (AUTH)
/// are errors "unsupported message type".
Parsed<RelayMessage> parse_relay_message(std::string_view frame, const ParseLimits& limits);

}  // namespace graspd::nostr
