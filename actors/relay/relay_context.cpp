#include "actors/relay/relay_context.hpp"

namespace graspd {

nostr::ParseLimits RelayContext::parse_limits() const {
  nostr::ParseLimits p;
  p.max_message_bytes = limits.max_message_bytes;
  p.max_event_bytes = limits.max_event_bytes;
  p.max_event_tags = limits.max_event_tags;
  p.max_content_length = limits.max_content_length;
  p.max_subid_length = limits.max_subid_length;
  p.max_filters = limits.max_filters;
  return p;
}

}  // namespace graspd
