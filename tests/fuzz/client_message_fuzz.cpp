// parse_client_message on arbitrary frames: never crashes; every answer the
// relay would build from the result (OK/CLOSED/NOTICE/EVENT) is valid JSON
// that parse_relay_message reads back.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>
#include <variant>

#include "messages/nostr/client_message.hpp"
#include "messages/nostr/json.hpp"
#include "messages/nostr/relay_message.hpp"

using namespace graspd::nostr;

namespace {

void require_relay_frame(const std::string& frame) {
  if (!parse_relay_message(frame, ParseLimits{})) std::abort();
}

void answer_error(const ClientMessageError& error) {
  using Kind = ClientMessageError::Kind;
  if (error.kind == Kind::invalid_event && error.event_id)
    require_relay_frame(relay_ok(*error.event_id, false, error.message));
  else if (error.kind == Kind::invalid_filter)
    require_relay_frame(relay_closed(error.subscription_id, error.message));
  else
    require_relay_frame(relay_notice(error.message));
}

void answer_message(const ClientMessage& message) {
  if (const auto* ev = std::get_if<ClientEvent>(&message)) {
    require_relay_frame(relay_event("fuzz", serialize_event(ev->event)));
  } else if (const auto* req = std::get_if<ClientReq>(&message)) {
    require_relay_frame(relay_eose(req->subscription_id));
  } else if (const auto* count = std::get_if<ClientCount>(&message)) {
    require_relay_frame(relay_count(count->subscription_id, count->filters.size()));
  } else if (const auto* close = std::get_if<ClientClose>(&message)) {
    require_relay_frame(relay_closed(close->subscription_id, "closed"));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view frame(reinterpret_cast<const char*>(data), size);
  auto parsed = parse_client_message(frame, ParseLimits{});
  if (parsed)
    answer_message(*parsed);
  else
    answer_error(parsed.error());
  return 0;
}
