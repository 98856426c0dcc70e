#include "messages/nostr/nip42_client.hpp"

#include <rapidjson/document.h>

namespace graspd::nostr {

namespace {
constexpr std::uint32_t client_auth_kind = 22242;
}  // namespace

std::optional<std::string> parse_auth_challenge(std::string_view frame) {
  // Cheap tests first: every frame of a sync connection passes here.
  if (frame.size() > 2 * max_auth_challenge_bytes + 32) return std::nullopt;
  auto verb = frame.find("\"AUTH\"");
  if (verb == std::string_view::npos || verb > 8) return std::nullopt;
  rapidjson::Document document;
  document.Parse(frame.data(), frame.size());
  if (document.HasParseError() || !document.IsArray() || document.Size() != 2 ||
      !document[1].IsString())
    return std::nullopt;
  std::string challenge(document[1].GetString(), document[1].GetStringLength());
  if (challenge.empty() || challenge.size() > max_auth_challenge_bytes) return std::nullopt;
  return challenge;
}

Event auth_response(std::string_view relay_url, std::string_view challenge,
                    std::int64_t created_at) {
  Event ev;
  ev.kind = client_auth_kind;
  ev.created_at = created_at;
  ev.tags = {{"relay", std::string(relay_url)}, {"challenge", std::string(challenge)}};
  return ev;
}

std::string client_auth(std::string_view event_json) {
  std::string out = "[\"AUTH\",";
  out += event_json;
  return out + "]";
}

}  // namespace graspd::nostr
