#include "messages/nostr/relay_message.hpp"

#include <rapidjson/document.h>

#include <algorithm>

#include "messages/nostr/canonical.hpp"

namespace graspd::nostr {

namespace {

using rapidjson::Value;
using ParsedRelayMessage = Parsed<RelayMessage>;

// Bound on relay-supplied text kept from OK/CLOSED/NOTICE (log material).
constexpr std::size_t kMaxRelayText = 4096;

std::string frame_start(std::string_view verb, std::size_t extra) {
  std::string out;
  out.reserve(verb.size() + extra + 16);
  out += "[\"";
  out += verb;
  out += '"';
  return out;
}

std::string with_subscription(std::string_view verb, std::string_view subscription_id,
                              std::size_t extra) {
  std::string out = frame_start(verb, subscription_id.size() + extra);
  out += ',';
  append_json_string_sanitized(out, subscription_id);
  return out;
}

using detail::view_of;

std::optional<std::string> read_text(const Value& v, std::size_t max_bytes) {
  if (!v.IsString() || v.GetStringLength() > max_bytes || detail::has_surrogate(view_of(v)))
    return std::nullopt;
  return std::string(view_of(v));
}

ParsedRelayMessage fail(std::string what) {
  return ParsedRelayMessage::failure("invalid: " + std::move(what));
}

ParsedRelayMessage parse_event_frame(const Value& a, const ParseLimits& limits) {
  if (a.Size() != 3) return fail("EVENT must be [\"EVENT\", <subid>, <event>]");
  auto subid = read_text(a[1], limits.max_subid_length);
  if (!subid) return fail("bad subscription id");
  auto ev = parse_event(a[2], limits);
  if (!ev) return ParsedRelayMessage::failure(ev.error());
  return RelayMessage{RelayEvent{std::move(*subid), std::move(*ev)}};
}

ParsedRelayMessage parse_ok_frame(const Value& a) {
  if (a.Size() != 4 || !a[1].IsString() || !a[2].IsBool())
    return fail("OK must be [\"OK\", <id>, <bool>, <message>]");
  RelayOk ok;
  if (!from_hex(view_of(a[1]), ok.event_id)) return fail("bad event id in OK");
  auto message = read_text(a[3], kMaxRelayText);
  if (!message) return fail("bad OK message");
  ok.accepted = a[2].GetBool();
  ok.message = std::move(*message);
  return RelayMessage{std::move(ok)};
}

ParsedRelayMessage parse_eose_frame(const Value& a, const ParseLimits& limits) {
  if (a.Size() != 2) return fail("EOSE must be [\"EOSE\", <subid>]");
  auto subid = read_text(a[1], limits.max_subid_length);
  if (!subid) return fail("bad subscription id");
  return RelayMessage{RelayEose{std::move(*subid)}};
}

ParsedRelayMessage parse_closed_frame(const Value& a, const ParseLimits& limits) {
  if (a.Size() != 3) return fail("CLOSED must be [\"CLOSED\", <subid>, <message>]");
  auto subid = read_text(a[1], limits.max_subid_length);
  auto message = read_text(a[2], kMaxRelayText);
  if (!subid || !message) return fail("bad CLOSED");
  return RelayMessage{RelayClosed{std::move(*subid), std::move(*message)}};
}

ParsedRelayMessage parse_notice_frame(const Value& a) {
  if (a.Size() != 2) return fail("NOTICE must be [\"NOTICE\", <message>]");
  auto message = read_text(a[1], kMaxRelayText);
  if (!message) return fail("bad NOTICE");
  return RelayMessage{RelayNotice{std::move(*message)}};
}

ParsedRelayMessage parse_count_frame(const Value& a, const ParseLimits& limits) {
  if (a.Size() != 3 || !a[2].IsObject()) return fail("COUNT must be [\"COUNT\", <subid>, {...}]");
  auto subid = read_text(a[1], limits.max_subid_length);
  if (!subid) return fail("bad subscription id");
  const Value& body = a[2];
  const auto count = body.FindMember("count");
  if (count == body.MemberEnd() || !count->value.IsUint64()) return fail("bad COUNT value");
  RelayCount out{std::move(*subid), count->value.GetUint64(), false};
  const auto approximate = body.FindMember("approximate");
  if (approximate != body.MemberEnd() && approximate->value.IsBool())
    out.approximate = approximate->value.GetBool();
  return RelayMessage{std::move(out)};
}

bool is_hex_text(std::string_view text) {
  return std::all_of(text.begin(), text.end(), [](char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
  });
}

ParsedRelayMessage parse_neg_msg_frame(const Value& a, const ParseLimits& limits) {
  if (a.Size() != 3) return fail("NEG-MSG must be [\"NEG-MSG\", <subid>, <hex>]");
  auto subid = read_text(a[1], limits.max_subid_length);
  if (!subid) return fail("bad subscription id");
  if (!a[2].IsString() || !is_hex_text(view_of(a[2]))) return fail("NEG-MSG payload is not hex");
  return RelayMessage{RelayNegMsg{std::move(*subid), std::string(view_of(a[2]))}};
}

ParsedRelayMessage parse_neg_err_frame(const Value& a, const ParseLimits& limits) {
  if (a.Size() != 3 && a.Size() != 4)
    return fail("NEG-ERR must be [\"NEG-ERR\", <subid>, <reason>]");
  auto subid = read_text(a[1], limits.max_subid_length);
  auto reason = read_text(a[2], kMaxRelayText);
  if (!subid || !reason) return fail("bad NEG-ERR");
  RelayNegErr out{std::move(*subid), std::move(*reason), std::nullopt};
  if (a.Size() == 4 && a[3].IsUint64()) out.limit = a[3].GetUint64();
  return RelayMessage{std::move(out)};
}

}  // namespace

std::string relay_event(std::string_view subscription_id, std::string_view event_json) {
  std::string out = with_subscription("EVENT", subscription_id, event_json.size() + 2);
  out += ',';
  out += event_json;
  out += ']';
  return out;
}

std::string relay_ok(const EventId& id, bool accepted, std::string_view message) {
  std::string out = frame_start("OK", 80 + message.size());
  out += ",\"";
  out += to_hex(id);
  out += accepted ? "\",true," : "\",false,";
  append_json_string_sanitized(out, message);
  out += ']';
  return out;
}

std::string relay_eose(std::string_view subscription_id) {
  std::string out = with_subscription("EOSE", subscription_id, 1);
  out += ']';
  return out;
}

std::string relay_closed(std::string_view subscription_id, std::string_view message) {
  std::string out = with_subscription("CLOSED", subscription_id, message.size() + 4);
  out += ',';
  append_json_string_sanitized(out, message);
  out += ']';
  return out;
}

std::string relay_neg_msg(std::string_view subscription_id, std::string_view hex) {
  std::string out = with_subscription("NEG-MSG", subscription_id, hex.size() + 4);
  out += ",\"";
  out += hex;
  out += "\"]";
  return out;
}

std::string relay_neg_err(std::string_view subscription_id, std::string_view reason,
                          std::optional<std::uint64_t> limit) {
  std::string out = with_subscription("NEG-ERR", subscription_id, reason.size() + 24);
  out += ',';
  append_json_string_sanitized(out, reason);
  if (limit) out += "," + std::to_string(*limit);
  out += ']';
  return out;
}

std::string relay_notice(std::string_view message) {
  std::string out = frame_start("NOTICE", message.size() + 4);
  out += ',';
  append_json_string_sanitized(out, message);
  out += ']';
  return out;
}

std::string relay_auth(std::string_view challenge) {
  std::string out = frame_start("AUTH", challenge.size() + 4);
  out += ',';
  append_json_string_sanitized(out, challenge);
  out += ']';
  return out;
}

std::string relay_count(std::string_view subscription_id, std::uint64_t count, bool approximate) {
  std::string out = with_subscription("COUNT", subscription_id, 48);
  out += ",{\"count\":";
  out += std::to_string(count);
  if (approximate) out += ",\"approximate\":true";
  out += "}]";
  return out;
}

Parsed<RelayMessage> parse_relay_message(std::string_view frame, const ParseLimits& limits) {
  if (frame.size() > limits.max_message_bytes) return fail("message too large");
  rapidjson::Document doc;
  std::string error = detail::parse_document(frame, doc, limits);
  if (!error.empty()) return ParsedRelayMessage::failure(std::move(error));
  if (!doc.IsArray() || doc.Empty() || !doc[0].IsString())
    return fail("message must be a JSON array starting with a verb");
  const std::string_view verb = view_of(doc[0]);
  const Value& a = doc;
  if (verb == "EVENT") {
    // ["EVENT",<subid>,<event>]: the event is at most the frame minus the wrapper.
    if (frame.size() > limits.max_event_bytes + limits.max_subid_length + 16)
      return fail("event too large");
    return parse_event_frame(a, limits);
  }
  if (verb == "OK") return parse_ok_frame(a);
  if (verb == "EOSE") return parse_eose_frame(a, limits);
  if (verb == "CLOSED") return parse_closed_frame(a, limits);
  if (verb == "NOTICE") return parse_notice_frame(a);
  if (verb == "COUNT") return parse_count_frame(a, limits);
  if (verb == "NEG-MSG") return parse_neg_msg_frame(a, limits);
  if (verb == "NEG-ERR") return parse_neg_err_frame(a, limits);
  return ParsedRelayMessage::failure("error: unsupported message type");
}

}  // namespace graspd::nostr
