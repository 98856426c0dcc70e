#include "messages/nostr/nip98.hpp"

#include <array>
#include <cctype>
#include <cstdlib>

#include "messages/nostr/canonical.hpp"
#include "messages/nostr/json.hpp"
#include "messages/nostr/verify.hpp"
#include "messages/relay_url.hpp"

namespace graspd::nostr::nip98 {

namespace {

constexpr std::string_view scheme_name = "nostr";

/// The token after "Nostr " (scheme case-insensitive, blanks around), or empty.
std::string_view token_of(std::string_view header) {
  if (header.size() <= scheme_name.size()) return {};
  for (std::size_t i = 0; i < scheme_name.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(header[i])) != scheme_name[i]) return {};
  auto rest = header.substr(scheme_name.size());
  if (rest.front() != ' ') return {};
  auto begin = rest.find_first_not_of(' ');
  if (begin == std::string_view::npos) return {};
  auto end = rest.find_last_not_of(' ');
  return rest.substr(begin, end - begin + 1);
}

int base64_value(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

/// The path without one trailing '/', so "" and "/" are the same root.
std::string_view without_trailing_slash(std::string_view path) {
  if (!path.empty() && path.back() == '/') path.remove_suffix(1);
  return path;
}

bool within_window(std::int64_t created_at, std::int64_t now, std::int64_t window) {
  auto skew = created_at > now ? created_at - now : now - created_at;
  return skew <= window;
}

bool url_accepted(std::string_view url, const std::vector<std::string>& accepted) {
  for (const auto& candidate : accepted)
    if (same_http_url(url, candidate)) return true;
  return false;
}

bool payload_matches(std::string_view tag, std::string_view body) {
  auto digest = to_hex(sha256(body));
  if (tag.size() != digest.size()) return false;
  for (std::size_t i = 0; i < tag.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(tag[i])) != digest[i]) return false;
  return true;
}

/// The tag checks, in NIP-98's order; none when every one passed.
HttpAuthFailure tag_failure(const Event& ev, const HttpAuthRequest& request,
                            const HttpAuthRules& rules) {
  if (!within_window(ev.created_at, request.now, rules.max_skew_seconds))
    return HttpAuthFailure::stale;
  if (rules.check_method && ev.first_tag_value("method") != request.method)
    return HttpAuthFailure::wrong_method;
  if (!url_accepted(ev.first_tag_value("u"), rules.urls)) return HttpAuthFailure::wrong_url;
  if (!rules.require_payload) return HttpAuthFailure::none;
  auto payload = ev.first_tag_value("payload");
  if (payload.empty()) return HttpAuthFailure::missing_payload;
  if (!payload_matches(payload, request.body)) return HttpAuthFailure::wrong_payload;
  return HttpAuthFailure::none;
}

}  // namespace

const char* to_string(HttpAuthFailure failure) {
  static constexpr std::array<const char*, 11> names = {
      "none",  "missing",      "bad_encoding", "bad_event",       "wrong_kind",   "bad_signature",
      "stale", "wrong_method", "wrong_url",    "missing_payload", "wrong_payload"};
  return names[static_cast<std::size_t>(failure)];
}

std::optional<std::string> base64_decode(std::string_view text) {
  while (!text.empty() && text.back() == '=') text.remove_suffix(1);
  if (text.size() % 4 == 1) return std::nullopt;
  std::string out;
  out.reserve(text.size() * 3 / 4);
  std::uint32_t bits = 0;
  int held = 0;
  for (char c : text) {
    int value = base64_value(c);
    if (value < 0) return std::nullopt;
    bits = (bits << 6) | static_cast<std::uint32_t>(value);
    held += 6;
    if (held >= 8) {
      held -= 8;
      out += static_cast<char>((bits >> held) & 0xFF);
    }
  }
  return out;
}

bool same_http_url(std::string_view url, std::string_view accepted) {
  auto a = parse_url(url);
  auto b = parse_url(accepted);
  if (!a || !b || a->has_user_info || b->has_user_info) return false;
  return ascii_lowercase(a->scheme) == ascii_lowercase(b->scheme) && a->host == b->host &&
         a->port == b->port &&
         without_trailing_slash(a->path_and_query) == without_trailing_slash(b->path_and_query);
}

HttpAuthResult verify_http_auth(const HttpAuthRequest& request, const HttpAuthRules& rules) {
  auto token = token_of(request.authorization);
  if (token.empty()) return {HttpAuthFailure::missing, {}};
  if (token.size() > rules.max_token_bytes) return {HttpAuthFailure::bad_encoding, {}};
  auto json = base64_decode(token);
  if (!json) return {HttpAuthFailure::bad_encoding, {}};
  ParseLimits limits;
  limits.max_message_bytes = limits.max_event_bytes = limits.max_content_length = json->size();
  limits.max_event_tags = 64;
  auto parsed = parse_event(*json, limits);
  if (!parsed.ok()) return {HttpAuthFailure::bad_event, {}};
  auto& ev = parsed.value();
  if (ev.kind != kind_http_auth) return {HttpAuthFailure::wrong_kind, {}};
  if (check_event(ev) != EventCheck::ok) return {HttpAuthFailure::bad_signature, {}};
  if (auto failure = tag_failure(ev, request, rules); failure != HttpAuthFailure::none)
    return {failure, {}};
  return {HttpAuthFailure::none, std::move(ev)};
}

bool ReplayGuard::first_use(const EventId& id, std::int64_t now) {
  forget_older_than(now - window_);
  if (ids_.count(id) || ids_.size() >= max_entries_) return false;
  ids_.insert(id);
  order_.emplace_back(now, id);
  return true;
}

void ReplayGuard::forget_older_than(std::int64_t cutoff) {
  while (!order_.empty() && order_.front().first < cutoff) {
    ids_.erase(order_.front().second);
    order_.pop_front();
  }
}

}  // namespace graspd::nostr::nip98
