#include "messages/nostr/nip19.hpp"

#include <cstdint>
#include <vector>

namespace graspd::nostr {

namespace {

constexpr std::string_view kCharset = "qpzry9x8gf2tvdw0s3jn54khce6mua7l";
constexpr std::size_t kChecksumLength = 6;
constexpr std::size_t kMaxLength = 90;  // BIP-173 limit; an npub is 63

// BIP-173 checksum polynomial.
std::uint32_t polymod(const std::vector<std::uint8_t>& values) {
  static constexpr std::uint32_t kGenerator[5] = {0x3b6a57b2, 0x26508e6d, 0x1ea119fa, 0x3d4233dd,
                                                  0x2a1462b3};
  std::uint32_t chk = 1;
  for (std::uint8_t v : values) {
    const std::uint32_t top = chk >> 25;
    chk = (chk & 0x1ffffff) << 5 ^ v;
    for (int i = 0; i < 5; ++i)
      if ((top >> i) & 1) chk ^= kGenerator[i];
  }
  return chk;
}

std::vector<std::uint8_t> expand_hrp(std::string_view hrp) {
  std::vector<std::uint8_t> out;
  out.reserve(hrp.size() * 2 + 1);
  for (char c : hrp) out.push_back(static_cast<std::uint8_t>(c) >> 5);
  out.push_back(0);
  for (char c : hrp) out.push_back(static_cast<std::uint8_t>(c) & 31);
  return out;
}

std::vector<std::uint8_t> to_five_bits(std::string_view data) {
  std::vector<std::uint8_t> out;
  std::uint32_t acc = 0;
  int bits = 0;
  for (char c : data) {
    acc = acc << 8 | static_cast<std::uint8_t>(c);
    bits += 8;
    while (bits >= 5) {
      bits -= 5;
      out.push_back((acc >> bits) & 31);
    }
  }
  if (bits > 0) out.push_back((acc << (5 - bits)) & 31);
  return out;
}

// Strict conversion back: no leftover group of 5+ bits and zero padding.
std::optional<Bytes32> from_five_bits(const std::vector<std::uint8_t>& groups) {
  Bytes32 out{};
  std::size_t n = 0;
  std::uint32_t acc = 0;
  int bits = 0;
  for (std::uint8_t g : groups) {
    acc = (acc << 5 | g) & 0xfff;
    bits += 5;
    if (bits >= 8) {
      bits -= 8;
      if (n == out.size()) return std::nullopt;
      out[n++] = static_cast<std::uint8_t>(acc >> bits);
    }
  }
  if (n != out.size() || bits >= 5 || (acc & ((1u << bits) - 1)) != 0) return std::nullopt;
  return out;
}

char to_lower_ascii(char c) {
  return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
}

std::string_view trim(std::string_view s) {
  constexpr std::string_view kSpace = " \t\r\n";
  const auto begin = s.find_first_not_of(kSpace);
  if (begin == std::string_view::npos) return {};
  return s.substr(begin, s.find_last_not_of(kSpace) - begin + 1);
}

/// bech32 of any payload (no length limit: NIP-19 TLV entities exceed BIP-173's 90 characters).
std::string bech32_encode(std::string_view hrp, std::string_view data) {
  std::vector<std::uint8_t> values = expand_hrp(hrp);
  const std::vector<std::uint8_t> groups = to_five_bits(data);
  values.insert(values.end(), groups.begin(), groups.end());
  values.insert(values.end(), kChecksumLength, 0);
  const std::uint32_t mod = polymod(values) ^ 1;
  std::string out(hrp);
  out += '1';
  for (std::uint8_t g : groups) out += kCharset[g];
  for (std::size_t i = 0; i < kChecksumLength; ++i) out += kCharset[(mod >> (5 * (5 - i))) & 31];
  return out;
}

}  // namespace

std::string detail::bech32_encode_32(std::string_view hrp, const Bytes32& data) {
  return bech32_encode(hrp,
                       std::string_view(reinterpret_cast<const char*>(data.data()), data.size()));
}

std::optional<Bytes32> detail::bech32_decode_32(std::string_view expected_hrp,
                                                std::string_view text) {
  if (text.size() > kMaxLength) return std::nullopt;
  bool has_lower = false, has_upper = false;
  std::string lower;
  lower.reserve(text.size());
  for (char c : text) {
    if (c < 33 || c > 126) return std::nullopt;
    has_lower |= (c >= 'a' && c <= 'z');
    has_upper |= (c >= 'A' && c <= 'Z');
    lower += to_lower_ascii(c);
  }
  if (has_lower && has_upper) return std::nullopt;
  const auto separator = lower.rfind('1');
  if (separator == std::string::npos || lower.substr(0, separator) != expected_hrp ||
      lower.size() < separator + 1 + kChecksumLength)
    return std::nullopt;
  std::vector<std::uint8_t> values = expand_hrp(expected_hrp);
  for (std::size_t i = separator + 1; i < lower.size(); ++i) {
    const auto pos = kCharset.find(lower[i]);
    if (pos == std::string_view::npos) return std::nullopt;
    values.push_back(static_cast<std::uint8_t>(pos));
  }
  if (polymod(values) != 1) return std::nullopt;
  const std::size_t data_begin = expand_hrp(expected_hrp).size();
  return from_five_bits(
      std::vector<std::uint8_t>(values.begin() + data_begin, values.end() - kChecksumLength));
}

std::string encode_npub(const Pubkey& pubkey) {
  return detail::bech32_encode_32("npub", pubkey);
}

std::string encode_naddr(std::uint32_t kind, const Pubkey& author, std::string_view identifier,
                         const std::vector<std::string>& relays) {
  std::string tlv;
  auto add = [&tlv](std::uint8_t type, std::string_view value) {
    tlv += static_cast<char>(type);
    tlv += static_cast<char>(value.size());
    tlv += value;
  };
  // Highest type first, as nostr-tools writes it (the order is free; matching it keeps the
  // links identical to what clients show). A TLV value is at most 255 bytes.
  const char kind_be[4] = {static_cast<char>(kind >> 24), static_cast<char>(kind >> 16),
                           static_cast<char>(kind >> 8), static_cast<char>(kind)};
  add(3, std::string_view(kind_be, 4));
  add(2, std::string_view(reinterpret_cast<const char*>(author.data()), author.size()));
  for (const auto& relay : relays)
    if (relay.size() <= 255) add(1, relay);
  add(0, identifier.substr(0, 255));
  return bech32_encode("naddr", tlv);
}

std::optional<Pubkey> decode_npub(std::string_view npub) {
  return detail::bech32_decode_32("npub", npub);
}

std::optional<Pubkey> parse_pubkey(std::string_view text) {
  text = trim(text);
  Pubkey key{};
  if (text.size() == 64 && from_hex(text, key)) return key;
  return decode_npub(text);
}

std::string encode_nsec(const Bytes32& secret_key) {
  return detail::bech32_encode_32("nsec", secret_key);
}

std::optional<Bytes32> parse_secret_key(std::string_view text) {
  text = trim(text);
  Bytes32 key{};
  if (text.size() == 64 && from_hex(text, key)) return key;
  return detail::bech32_decode_32("nsec", text);
}

}  // namespace graspd::nostr
