// NIP-42 from the client side: a relay's ["AUTH", <challenge>] and the kind 22242 that answers it.
// graspd's sync connections answer their peers' challenges with the relay key (docs/sync.md
// "AUTH from peers", docs/identity.md).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "messages/nostr/event.hpp"

namespace graspd::nostr {

/// The longest challenge answered: a real one is a few dozen characters; a longer one is no
/// challenge worth a signature.
inline constexpr std::size_t max_auth_challenge_bytes = 512;

/// The challenge of a relay's ["AUTH", "<challenge>"]; nullopt for any other frame, or a challenge
/// that is empty or longer than max_auth_challenge_bytes.
std::optional<std::string> parse_auth_challenge(std::string_view frame);

/// The unsigned kind 22242 answering `challenge` of the relay at `relay_url`: tags
/// ["relay", relay_url] and ["challenge", challenge], empty content.
Event auth_response(std::string_view relay_url, std::string_view challenge,
                    std::int64_t created_at);

/// ["AUTH",<event json>]: `event_json` is inserted verbatim.
std::string client_auth(std::string_view event_json);

}  // namespace graspd::nostr
