// NIP-86 relay management API: the request `{"method", "params"}` parsed strictly, the answer
// `{"result", "error"}` rendered, and the fixed set of methods graspd offers (it labels metrics).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace graspd::nostr::nip86 {

inline constexpr std::string_view content_type = "application/nostr+json+rpc";
/// Largest request body taken (the HTTP transport's body limit is the same).
inline constexpr std::size_t max_body_bytes = 64 * 1024;

/// The methods graspd answers; `unsupported` stands for every other name.
enum class Method : std::uint8_t {
  supportedmethods,
  banpubkey,
  unbanpubkey,
  listbannedpubkeys,
  allowpubkey,
  unallowpubkey,
  listallowedpubkeys,
  banevent,
  unbanevent,
  listbannedevents,
  unsupported,
};
inline constexpr std::size_t method_count = static_cast<std::size_t>(Method::unsupported) + 1;
const char* to_string(Method method);
Method method_named(std::string_view name);
/// Every supported method's name (supportedmethods' answer).
std::vector<std::string> supported_method_names();

struct RpcRequest {
  std::string method;
  /// NIP-86 parameters of the supported methods are all strings.
  std::vector<std::string> params;
};

/// Parses a request body: a JSON object with exactly "method" (a string) and "params" (an array of
/// strings). nullopt on anything else.
std::optional<RpcRequest> parse_request(std::string_view body);

/// `{"result":<result_json>,"error":null}`; `result_json` is already JSON.
std::string result_answer(std::string_view result_json);
/// `{"result":null,"error":"<message>"}`.
std::string error_answer(std::string_view message);
/// A JSON string literal of `text`.
std::string json_string(std::string_view text);

}  // namespace graspd::nostr::nip86
