#include "messages/nostr/event.hpp"

namespace graspd::nostr {

std::string_view Event::first_tag_value(std::string_view name) const {
  for (const auto& tag : tags)
    if (tag.size() >= 2 && tag[0] == name) return tag[1];
  return {};
}

void append_hex(std::string& out, const std::uint8_t* data, std::size_t size) {
  static constexpr char digits[] = "0123456789abcdef";
  const std::size_t start = out.size();
  out.resize(start + size * 2);
  char* p = out.data() + start;
  for (std::size_t i = 0; i < size; ++i) {
    p[2 * i] = digits[data[i] >> 4];
    p[2 * i + 1] = digits[data[i] & 0x0f];
  }
}

std::string to_hex(const std::uint8_t* data, std::size_t size) {
  std::string out;
  append_hex(out, data, size);
  return out;
}

int hex_digit_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool from_hex(std::string_view hex, std::uint8_t* out, std::size_t size) {
  if (hex.size() != size * 2) return false;
  for (std::size_t i = 0; i < size; ++i) {
    int hi = hex_digit_value(hex[2 * i]);
    int lo = hex_digit_value(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return false;
    out[i] = static_cast<std::uint8_t>(hi << 4 | lo);
  }
  return true;
}

std::string address_of(const Event& ev) {
  std::string out = std::to_string(ev.kind);
  out += ':';
  out += to_hex(ev.pubkey);
  out += ':';
  if (is_addressable(ev.kind)) out += ev.d_tag();
  return out;
}

}  // namespace graspd::nostr
