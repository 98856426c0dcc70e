// NIP-05 for the relay key: GET /.well-known/nostr.json maps `_` (the domain itself) to the relay's
// own pubkey, so `_@<domain>` identifies the relay (docs/identity.md).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "runtime/config/config.hpp"

namespace graspd::runtime {

/// The relay's public WebSocket URL as its own events and NIP-05 name it: wss://<NGIT_DOMAIN>.
std::string public_relay_url(const Config& config);

/// The document answering `name` (nullopt = no name asked): `_` → {"names":{"_":hex},
/// "relays":{hex:[url]}}; any other name → {"names":{}}. Needs config.relay_key.
std::string nip05_json(const Config& config, const std::optional<std::string>& name);

/// The first value of `key` in the query of `target` ("/p?a=1&b=2"), percent-decoded ('+' is a
/// space); nullopt when the query has no such key.
std::optional<std::string> query_parameter(std::string_view target, std::string_view key);

}  // namespace graspd::runtime
