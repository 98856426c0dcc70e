#include "messages/nostr/nip42.hpp"

#include <openssl/rand.h>

#include <array>
#include <stdexcept>

namespace graspd::nostr {

std::string credential_refusal(std::uint32_t kind) {
  return "invalid: " + std::to_string(kind) + " is a credential, not an event";
}

bool is_protected(const Event& ev) {
  for (const auto& tag : ev.tags)
    if (!tag.empty() && tag[0] == "-") return true;
  return false;
}

std::string make_challenge() {
  std::array<std::uint8_t, 16> bits{};
  if (RAND_bytes(bits.data(), static_cast<int>(bits.size())) != 1)
    throw std::runtime_error("no random bytes for an AUTH challenge");
  return to_hex(bits.data(), bits.size());
}

namespace {

// The relay tag names this service: a ws/wss URL whose host and effective port are the service's.
bool names_service(std::string_view relay, const HostPort& service) {
  auto url = parse_url(relay);
  if (!url || (url->scheme != "ws" && url->scheme != "wss")) return false;
  return url_names_host(*url, service);
}

}  // namespace

AuthCheck check_auth_event(const Event& ev, const AuthExpectation& expected) {
  if (ev.kind != kind_client_auth || expected.challenge.empty() ||
      ev.first_tag_value("challenge") != expected.challenge)
    return AuthCheck::bad_challenge;
  if (!names_service(ev.first_tag_value("relay"), expected.service)) return AuthCheck::bad_relay;
  const auto skew = ev.created_at - expected.now;
  if (skew > max_auth_skew_seconds || skew < -max_auth_skew_seconds) return AuthCheck::stale;
  return AuthCheck::ok;
}

std::string describe(AuthCheck check, const Event& ev, const AuthExpectation& expected) {
  switch (check) {
    case AuthCheck::ok:
      return {};
    case AuthCheck::bad_challenge:
      if (ev.kind != kind_client_auth) return "invalid: AUTH needs a kind 22242 event";
      if (expected.challenge.empty())
        return "invalid: no AUTH challenge was sent on this connection";
      return "invalid: the challenge tag does not answer this connection's challenge";
    case AuthCheck::bad_relay:
      return "invalid: the relay tag does not name this relay";
    case AuthCheck::stale:
      return "invalid: created_at is more than 10 minutes from now";
  }
  return "invalid: bad AUTH event";
}

}  // namespace graspd::nostr
