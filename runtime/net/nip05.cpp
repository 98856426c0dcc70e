#include "runtime/net/nip05.hpp"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <cctype>

namespace graspd::runtime {

namespace {

int nip05_hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

std::string nip05_percent_decode(std::string_view text) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '+') {
      out += ' ';
    } else if (text[i] == '%' && i + 2 < text.size() && nip05_hex_value(text[i + 1]) >= 0 &&
               nip05_hex_value(text[i + 2]) >= 0) {
      out += static_cast<char>(nip05_hex_value(text[i + 1]) * 16 + nip05_hex_value(text[i + 2]));
      i += 2;
    } else {
      out += text[i];
    }
  }
  return out;
}

}  // namespace

std::string public_relay_url(const Config& config) {
  return "wss://" + config.domain.text;
}

std::string nip05_json(const Config& config, const std::optional<std::string>& name) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> writer(buffer);
  writer.StartObject();
  writer.Key("names");
  writer.StartObject();
  const bool relay_itself = (!name || *name == "_") && config.relay_key;
  if (relay_itself) {
    auto hex = nostr::to_hex(config.relay_key->pubkey);
    writer.Key("_");
    writer.String(hex.c_str());
    writer.EndObject();
    writer.Key("relays");
    writer.StartObject();
    writer.Key(hex.c_str());
    writer.StartArray();
    auto url = public_relay_url(config);
    writer.String(url.c_str(), static_cast<rapidjson::SizeType>(url.size()));
    writer.EndArray();
  }
  writer.EndObject();
  writer.EndObject();
  return buffer.GetString();
}

std::optional<std::string> query_parameter(std::string_view target, std::string_view key) {
  auto question = target.find('?');
  if (question == std::string_view::npos) return std::nullopt;
  auto query = target.substr(question + 1);
  query = query.substr(0, query.find('#'));
  while (!query.empty()) {
    auto pair = query.substr(0, query.find('&'));
    query.remove_prefix(std::min(query.size(), pair.size() + 1));
    auto equals = pair.find('=');
    if (nip05_percent_decode(pair.substr(0, equals)) != key) continue;
    if (equals == std::string_view::npos) return std::string{};
    return nip05_percent_decode(pair.substr(equals + 1));
  }
  return std::nullopt;
}

}  // namespace graspd::runtime
