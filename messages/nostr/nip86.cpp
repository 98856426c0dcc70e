#include "messages/nostr/nip86.hpp"

#include <rapidjson/document.h>

#include "messages/nostr/canonical.hpp"
#include "messages/nostr/json.hpp"

namespace graspd::nostr::nip86 {

namespace {

constexpr std::array<const char*, method_count> method_names = {
    "supportedmethods", "banpubkey",        "unbanpubkey",        "listbannedpubkeys",
    "allowpubkey",      "unallowpubkey",    "listallowedpubkeys", "banevent",
    "unbanevent",       "listbannedevents", "unsupported"};

std::optional<std::vector<std::string>> string_array(const rapidjson::Value& value) {
  if (!value.IsArray()) return std::nullopt;
  std::vector<std::string> out;
  for (const auto& item : value.GetArray()) {
    if (!item.IsString()) return std::nullopt;
    out.emplace_back(item.GetString(), item.GetStringLength());
  }
  return out;
}

}  // namespace

const char* to_string(Method method) {
  return method_names[static_cast<std::size_t>(method)];
}

Method method_named(std::string_view name) {
  for (std::size_t i = 0; i + 1 < method_count; ++i)
    if (name == method_names[i]) return static_cast<Method>(i);
  return Method::unsupported;
}

std::vector<std::string> supported_method_names() {
  return {method_names.begin(), method_names.end() - 1};
}

std::optional<RpcRequest> parse_request(std::string_view body) {
  if (body.size() > max_body_bytes) return std::nullopt;
  rapidjson::Document doc;
  ParseLimits limits;
  limits.max_nesting = 3;
  if (!detail::parse_document(body, doc, limits).empty() || !doc.IsObject()) return std::nullopt;
  if (doc.MemberCount() != 2 || !doc.HasMember("method") || !doc.HasMember("params"))
    return std::nullopt;
  const auto& method = doc["method"];
  auto params = string_array(doc["params"]);
  if (!method.IsString() || !params) return std::nullopt;
  return RpcRequest{std::string(method.GetString(), method.GetStringLength()), std::move(*params)};
}

std::string json_string(std::string_view text) {
  std::string out;
  append_json_string_sanitized(out, text);
  return out;
}

std::string result_answer(std::string_view result_json) {
  return "{\"result\":" + std::string(result_json) + ",\"error\":null}";
}

std::string error_answer(std::string_view message) {
  return "{\"result\":null,\"error\":" + json_string(message) + "}";
}

}  // namespace graspd::nostr::nip86
