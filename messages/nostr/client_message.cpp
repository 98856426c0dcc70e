#include "messages/nostr/client_message.hpp"

#include <rapidjson/document.h>

namespace graspd::nostr {

namespace {

using rapidjson::Value;
using Error = ClientMessageError;
using Kind = ClientMessageError::Kind;

// The EVENT frame wraps the event in `["EVENT",` + `]`.
constexpr std::size_t kEventFrameOverhead = 10;

ParsedClientMessage fail(Kind kind, std::string message, std::string verb = {},
                         std::string subscription_id = {},
                         std::optional<EventId> event_id = std::nullopt) {
  return ParsedClientMessage::failure(
      Error{kind, std::move(message), std::move(verb), std::move(subscription_id), event_id});
}

using detail::view_of;

// The id of an invalid event, when it is readable, so the relay can answer OK.
std::optional<EventId> readable_id(const Value& event) {
  if (!event.IsObject()) return std::nullopt;
  const auto it = event.FindMember("id");
  EventId id{};
  if (it == event.MemberEnd() || !it->value.IsString() || !from_hex(view_of(it->value), id))
    return std::nullopt;
  return id;
}

/// ["EVENT", <event>] and ["AUTH", <event>] (`Message` is ClientEvent or ClientAuth).
template <class Message>
ParsedClientMessage parse_event_message(std::string_view verb, const Value& frame,
                                        std::size_t frame_size, const ParseLimits& limits) {
  const std::string verb_text(verb);
  if (frame.Size() != 2)
    return fail(Kind::malformed,
                "invalid: " + verb_text + " must be [\"" + verb_text + "\", <event>]", verb_text);
  const Value& json = frame[1];
  if (frame_size > limits.max_event_bytes + kEventFrameOverhead)
    return fail(Kind::invalid_event, "invalid: event too large", verb_text, {}, readable_id(json));
  auto ev = parse_event(json, limits);
  if (!ev) return fail(Kind::invalid_event, ev.error(), verb_text, {}, readable_id(json));
  return ClientMessage{Message{std::move(*ev)}};
}

// A subscription id is echoed back in every answer; refuse anything the
// relay could not answer with.
std::optional<std::string> read_subscription_id(const Value& v, const ParseLimits& limits) {
  if (!v.IsString() || v.GetStringLength() == 0 || v.GetStringLength() > limits.max_subid_length ||
      detail::has_surrogate(view_of(v)))
    return std::nullopt;
  return std::string(view_of(v));
}

template <class Message>
ParsedClientMessage parse_subscription(std::string_view verb, const Value& frame,
                                       const ParseLimits& limits) {
  const std::string verb_text(verb);
  if (frame.Size() < 2)
    return fail(Kind::malformed, "invalid: " + verb_text + " needs a subscription id", verb_text);
  auto subid = read_subscription_id(frame[1], limits);
  if (!subid)
    return fail(Kind::malformed,
                "invalid: subscription id must be a string of 1.." +
                    std::to_string(limits.max_subid_length) + " bytes",
                verb_text);
  const std::size_t count = frame.Size() - 2;
  if (count == 0)
    return fail(Kind::invalid_filter, "invalid: " + verb_text + " needs at least one filter",
                verb_text, std::move(*subid));
  if (count > limits.max_filters)
    return fail(Kind::invalid_filter, "invalid: too many filters", verb_text, std::move(*subid));
  Message message{std::move(*subid), {}};
  message.filters.reserve(count);
  for (rapidjson::SizeType i = 2; i < frame.Size(); ++i) {
    auto filter = parse_filter(frame[i], limits);
    if (!filter)
      return fail(Kind::invalid_filter, filter.error(), verb_text,
                  std::move(message.subscription_id));
    message.filters.push_back(std::move(*filter));
  }
  return ClientMessage{std::move(message)};
}

ParsedClientMessage parse_close(const Value& frame, const ParseLimits& limits) {
  if (frame.Size() != 2)
    return fail(Kind::malformed, "invalid: CLOSE must be [\"CLOSE\", <subscription id>]", "CLOSE");
  auto subid = read_subscription_id(frame[1], limits);
  if (!subid) return fail(Kind::malformed, "invalid: bad subscription id", "CLOSE");
  return ClientMessage{ClientClose{std::move(*subid)}};
}

/// The decoded payload of a NEG-OPEN/NEG-MSG hex string (lowercase or upper).
std::optional<std::string> read_negentropy_hex(const Value& v) {
  if (!v.IsString() || v.GetStringLength() % 2 != 0) return std::nullopt;
  std::string out(v.GetStringLength() / 2, '\0');
  if (!from_hex(view_of(v), reinterpret_cast<std::uint8_t*>(out.data()), out.size()))
    return std::nullopt;
  return out;
}

ParsedClientMessage parse_neg_open(const Value& frame, const ParseLimits& limits) {
  constexpr const char* verb = "NEG-OPEN";
  if (frame.Size() != 4)
    return fail(Kind::malformed,
                "invalid: NEG-OPEN must be [\"NEG-OPEN\", <subscription id>, <filter>, <hex>]",
                verb);
  auto subid = read_subscription_id(frame[1], limits);
  if (!subid) return fail(Kind::malformed, "invalid: bad subscription id", verb);
  if (!frame[2].IsObject())
    return fail(Kind::invalid_negentropy, "invalid: negentropy filter must be an object", verb,
                std::move(*subid));
  auto filter = parse_filter(frame[2], limits);
  if (!filter) return fail(Kind::invalid_negentropy, filter.error(), verb, std::move(*subid));
  auto message = read_negentropy_hex(frame[3]);
  if (!message)
    return fail(Kind::invalid_negentropy, "invalid: negentropy message must be hex", verb,
                std::move(*subid));
  return ClientMessage{ClientNegOpen{std::move(*subid), std::move(*filter), std::move(*message)}};
}

ParsedClientMessage parse_neg_msg(const Value& frame, const ParseLimits& limits) {
  constexpr const char* verb = "NEG-MSG";
  if (frame.Size() != 3)
    return fail(Kind::malformed, "invalid: NEG-MSG must be [\"NEG-MSG\", <subscription id>, <hex>]",
                verb);
  auto subid = read_subscription_id(frame[1], limits);
  if (!subid) return fail(Kind::malformed, "invalid: bad subscription id", verb);
  auto message = read_negentropy_hex(frame[2]);
  if (!message)
    return fail(Kind::invalid_negentropy, "invalid: negentropy message must be hex", verb,
                std::move(*subid));
  return ClientMessage{ClientNegMsg{std::move(*subid), std::move(*message)}};
}

ParsedClientMessage parse_neg_close(const Value& frame, const ParseLimits& limits) {
  if (frame.Size() != 2)
    return fail(Kind::malformed, "invalid: NEG-CLOSE must be [\"NEG-CLOSE\", <subscription id>]",
                "NEG-CLOSE");
  auto subid = read_subscription_id(frame[1], limits);
  if (!subid) return fail(Kind::malformed, "invalid: bad subscription id", "NEG-CLOSE");
  return ClientMessage{ClientNegClose{std::move(*subid)}};
}

std::string shown_verb(std::string_view verb) {
  constexpr std::size_t kMaxVerb = 16;
  return std::string(verb.substr(0, kMaxVerb));
}

}  // namespace

ParsedClientMessage parse_client_message(std::string_view frame, const ParseLimits& limits) {
  if (frame.size() > limits.max_message_bytes)
    return fail(Kind::malformed, "invalid: message too large");
  rapidjson::Document doc;
  std::string error = detail::parse_document(frame, doc, limits);
  if (!error.empty()) return fail(Kind::malformed, std::move(error));
  if (!doc.IsArray() || doc.Empty() || !doc[0].IsString())
    return fail(Kind::malformed, "invalid: message must be a JSON array starting with a verb");
  const std::string_view verb = view_of(doc[0]);
  const Value& array = doc;
  if (verb == "EVENT") return parse_event_message<ClientEvent>(verb, array, frame.size(), limits);
  if (verb == "AUTH") return parse_event_message<ClientAuth>(verb, array, frame.size(), limits);
  if (verb == "REQ") return parse_subscription<ClientReq>(verb, array, limits);
  if (verb == "COUNT") return parse_subscription<ClientCount>(verb, array, limits);
  if (verb == "CLOSE") return parse_close(array, limits);
  if (verb == "NEG-OPEN") return parse_neg_open(array, limits);
  if (verb == "NEG-MSG") return parse_neg_msg(array, limits);
  if (verb == "NEG-CLOSE") return parse_neg_close(array, limits);
  return fail(Kind::unknown_verb, "error: unsupported message type", shown_verb(verb));
}

}  // namespace graspd::nostr
