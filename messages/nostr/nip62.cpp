#include "messages/nostr/nip62.hpp"

namespace graspd::nostr::nip62 {

bool names_relay(const Event& request, const HostPort* service) {
  if (request.kind != kind_request_to_vanish) return false;
  for (const auto& tag : request.tags) {
    if (tag.size() < 2 || tag[0] != "relay") continue;
    if (tag[1] == all_relays) return true;
    if (!service) continue;
    auto url = parse_url(tag[1]);
    if (url && (url->scheme == "ws" || url->scheme == "wss") && url_names_host(*url, *service))
      return true;
  }
  return false;
}

}  // namespace graspd::nostr::nip62
