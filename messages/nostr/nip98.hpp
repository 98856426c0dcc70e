// NIP-98 HTTP auth: the one verifier of `Authorization: Nostr <base64 event>` headers (kind 27235),
// pure, for every HTTP surface that takes one: the NIP-86 management API now, GRASP-08's git
// requests later (their relaxations are the Nip98Rules switches). The replay guard is the state a
// caller keeps beside it (in an actor).
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "messages/nostr/event.hpp"

namespace graspd::nostr::nip98 {

inline constexpr std::uint32_t kind_http_auth = 27235;

/// What one request offers for checking.
struct HttpAuthRequest {
  std::string_view authorization;  ///< the whole header value, "Nostr <base64>"
  std::string_view method;         ///< the request's method, e.g. "POST"
  std::string_view body;           ///< the request's body (hashed for the `payload` tag)
  std::int64_t now = 0;            ///< seconds since the epoch
};

/// What a surface accepts. The defaults are NIP-98's with every optional check on (NIP-86).
struct HttpAuthRules {
  /// Absolute URLs the `u` tag may name (compared by scheme, host, effective port and path; a
  /// trailing '/' is optional on both sides). Empty: none is accepted.
  std::vector<std::string> urls;
  /// |now - created_at| must not exceed this.
  std::int64_t max_skew_seconds = 60;
  /// The `payload` tag must be present and equal the body's SHA-256 (hex). Off: not looked at
  /// (GRASP-08 covers a whole Smart HTTP exchange with one token).
  bool require_payload = true;
  /// The `method` tag must equal the request's method. Off: any method (GRASP-08: always GET).
  bool check_method = true;
  /// Longest header accepted (the base64 text), before any decoding.
  std::size_t max_token_bytes = 8192;
};

/// Why a token was refused: for logs and tests only; clients are told no more than "unauthorized".
enum class HttpAuthFailure : std::uint8_t {
  none,
  missing,          ///< no header, or not the Nostr scheme
  bad_encoding,     ///< not base64, or too long
  bad_event,        ///< not a NIP-01 event
  wrong_kind,       ///< not kind 27235
  bad_signature,    ///< id or signature does not verify
  stale,            ///< created_at outside the window
  wrong_method,     ///< `method` tag missing or another method
  wrong_url,        ///< `u` tag missing or not an accepted URL
  missing_payload,  ///< no `payload` tag where one is required
  wrong_payload,    ///< `payload` is not the body's SHA-256
};
const char* to_string(HttpAuthFailure failure);

struct HttpAuthResult {
  HttpAuthFailure failure = HttpAuthFailure::missing;
  /// The verified event (set when failure == none).
  std::optional<Event> event;
  bool ok() const { return failure == HttpAuthFailure::none; }
};

/// Checks one request's header against `rules`: the event's structure, kind, id and signature,
/// created_at window, `method`, `u` and `payload` tags. Who signed it is the caller's question.
HttpAuthResult verify_http_auth(const HttpAuthRequest& request, const HttpAuthRules& rules);

/// Standard base64 (RFC 4648 §4, padding optional); nullopt on any other character.
std::optional<std::string> base64_decode(std::string_view text);

/// Whether `url` names the same resource as `accepted`: scheme, host (case-insensitive),
/// effective port and path, one trailing '/' optional on either.
bool same_http_url(std::string_view url, std::string_view accepted);

/// Token ids seen recently: a token is good once. Bounded: when `max_entries` ids younger than
/// the window are remembered, further tokens are refused until the oldest age out (fail closed;
/// only tokens that passed every other check are remembered).
class ReplayGuard {
 public:
  explicit ReplayGuard(std::int64_t window_seconds = 120, std::size_t max_entries = 4096)
      : window_(window_seconds), max_entries_(max_entries) {}
  /// True (and remembered) when `id` was not seen within the window before `now`.
  bool first_use(const EventId& id, std::int64_t now);
  std::size_t size() const { return ids_.size(); }

 private:
  void forget_older_than(std::int64_t cutoff);

  std::int64_t window_;
  std::size_t max_entries_;
  std::set<EventId> ids_;
  /// (seen at, id), oldest first.
  std::deque<std::pair<std::int64_t, EventId>> order_;
};

}  // namespace graspd::nostr::nip98
