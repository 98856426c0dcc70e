#include "runtime/npub.hpp"

#include "messages/nostr/event.hpp"
#include "messages/nostr/nip19.hpp"

namespace graspd::runtime {

std::optional<std::string> decode_npub_hex(std::string_view npub) {
  auto key = nostr::decode_npub(npub);
  if (!key) return std::nullopt;
  return nostr::to_hex(*key);
}

}  // namespace graspd::runtime
