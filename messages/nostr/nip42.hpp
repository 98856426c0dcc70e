// NIP-42 authentication of clients and NIP-70 protected events, as pure checks: the client
// session holds the challenge and the authenticated keys (actors/relay/engine/connection_keys.hpp)
// and asks these functions whether an AUTH event answers it (docs/relay.md "Authentication").
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "messages/nostr/event.hpp"
#include "messages/relay_url.hpp"

namespace graspd::nostr {

/// NIP-42 client authentication.
inline constexpr std::uint32_t kind_client_auth = 22242;
/// NIP-98 HTTP authorization.
inline constexpr std::uint32_t kind_http_auth = 27235;

/// Kinds that are credentials, not events: never stored nor broadcast (a relayed NIP-98 token
/// could be replayed against HTTP endpoints within its window).
constexpr bool is_credential_kind(std::uint32_t kind) {
  return kind == kind_client_auth || kind == kind_http_auth;
}

/// The OK message refusing a credential kind sent as an EVENT.
std::string credential_refusal(std::uint32_t kind);

/// NIP-70: the event has a tag whose first element is "-".
bool is_protected(const Event& ev);

/// The refusal of a protected event that does not come from its authenticated author: from a
/// sync peer, `graspd sync`, or any path but the client session's checked one.
inline constexpr std::string_view protected_refusal_message =
    "restricted: a protected event is accepted only from its author over an authenticated "
    "connection";

/// A new challenge: 128 random bits as 32 lowercase hex digits (OpenSSL's CSPRNG). Throws
/// std::runtime_error when the generator fails.
std::string make_challenge();

/// How an AUTH event fares against a connection's challenge (metrics labels, see
/// runtime/net/ws_metrics.hpp AuthOutcome). The id and signature are checked elsewhere (on the
/// verifier pool), before this.
enum class AuthCheck : std::uint8_t {
  ok,
  /// Not kind 22242, no challenge sent yet, or its `challenge` tag is not the one sent.
  bad_challenge,
  /// Its `relay` tag is missing or not a ws/wss URL naming this service.
  bad_relay,
  /// created_at is more than max_auth_skew_seconds from now.
  stale,
};

/// How far an AUTH event's created_at may be from the relay's clock, either way.
inline constexpr std::int64_t max_auth_skew_seconds = 600;

struct AuthExpectation {
  /// The challenge sent on this connection; empty = none sent yet.
  std::string_view challenge;
  /// NGIT_DOMAIN: the host and optional port the `relay` tag must name.
  HostPort service;
  /// Seconds since the epoch now.
  std::int64_t now = 0;
};

/// Checks kind, challenge, relay URL (host and effective port equal to `service`, case-insensitive;
/// path and trailing "/" ignored) and created_at, in that order.
AuthCheck check_auth_event(const Event& ev, const AuthExpectation& expected);

/// The OK message for a refused AUTH: "invalid: ..." (empty for ok).
std::string describe(AuthCheck check, const Event& ev, const AuthExpectation& expected);

}  // namespace graspd::nostr
