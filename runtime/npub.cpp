#include "runtime/npub.hpp"

#include <array>
#include <cctype>
#include <cstdint>
#include <vector>

namespace graspd::runtime {

namespace {

constexpr std::string_view charset = "qpzry9x8gf2tvdw0s3jn54khce6mua7l";

std::uint32_t polymod(const std::vector<std::uint8_t>& values) {
  constexpr std::array<std::uint32_t, 5> generator{0x3b6a57b2, 0x26508e6d, 0x1ea119fa, 0x3d4233dd,
                                                   0x2a1462b3};
  std::uint32_t checksum = 1;
  for (auto value : values) {
    auto top = checksum >> 25;
    checksum = ((checksum & 0x1ffffff) << 5) ^ value;
    for (std::size_t i = 0; i < generator.size(); ++i) {
      if ((top >> i) & 1) checksum ^= generator[i];
    }
  }
  return checksum;
}

}  // namespace

std::optional<std::string> decode_npub_hex(std::string_view npub) {
  constexpr std::string_view prefix = "npub1";
  // 5 prefix + 52 data (32 bytes in 5-bit groups) + 6 checksum characters.
  if (npub.size() != 63) return std::nullopt;
  std::string lower;
  bool has_upper = false;
  bool has_lower = false;
  for (char c : npub) {
    has_upper |= std::isupper(static_cast<unsigned char>(c)) != 0;
    has_lower |= std::islower(static_cast<unsigned char>(c)) != 0;
    lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  if ((has_upper && has_lower) || lower.substr(0, prefix.size()) != prefix) return std::nullopt;

  std::vector<std::uint8_t> values{3, 3, 3, 3, 0, 14, 16, 21, 2};  // hrp "npub" expanded
  for (char c : std::string_view(lower).substr(prefix.size())) {
    auto index = charset.find(c);
    if (index == std::string_view::npos) return std::nullopt;
    values.push_back(static_cast<std::uint8_t>(index));
  }
  if (polymod(values) != 1) return std::nullopt;

  std::string hex;
  std::uint32_t accumulator = 0;
  int bits = 0;
  constexpr std::string_view digits = "0123456789abcdef";
  for (auto it = values.begin() + 9; it != values.end() - 6; ++it) {
    accumulator = (accumulator << 5) | *it;
    bits += 5;
    if (bits >= 8) {
      bits -= 8;
      auto byte = (accumulator >> bits) & 0xff;
      hex += digits[byte >> 4];
      hex += digits[byte & 0xf];
    }
  }
  // 52 groups carry 260 bits: the 4 padding bits must be zero.
  if (hex.size() != 64 || (accumulator & ((1u << bits) - 1)) != 0) return std::nullopt;
  return hex;
}

}  // namespace graspd::runtime
