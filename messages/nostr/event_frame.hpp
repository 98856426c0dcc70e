// The EVENT frame of one subscription as a Frame that shares the event's JSON: the head
// `["EVENT","<subid>",` and the tail `]` are the subscription's own, the body is the JSON every
// other recipient of the event holds too.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "messages/frame.hpp"
#include "messages/nostr/relay_message.hpp"

namespace graspd::nostr {

/// The head `["EVENT","<subid>",` of the subscription's EVENT frames.
inline std::string relay_event_head(std::string_view subscription_id) {
  // relay_event escapes the subscription id; with no JSON it ends in `,]`.
  std::string head = relay_event(subscription_id, {});
  head.pop_back();
  return head;
}

/// The same text as relay_event(subscription_id, *event_json), in three pieces.
inline Frame relay_event_frame(std::string_view subscription_id,
                               std::shared_ptr<const std::string> event_json) {
  return Frame(relay_event_head(subscription_id), std::move(event_json), "]");
}

}  // namespace graspd::nostr
