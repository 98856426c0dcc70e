#include <gtest/gtest.h>

#include "messages/nostr/nip19.hpp"

namespace graspd::nostr {
namespace {

// Vectors from the NIP-19 text.
constexpr const char* kNpub = "npub10elfcs4fr0l0r8af98jlmgdh9c8tcxjvz9qkw038js35mp4dma8qzvjptg";
constexpr const char* kHex = "7e7e9c42a91bfef19fa929e5fda1b72e0ebc1a4c1141673e2794234d86addf4e";
constexpr const char* kNsec = "nsec1vl029mgpspedva04g90vltkh6fvh240zqtv9k0t9af8935ke9laqsnlfe5";
constexpr const char* kNsecHex = "67dea2ed018072d675f5415ecfaed7d2597555e202d85b3d65ea4e58d2d92ffa";

Pubkey key(std::string_view hex) {
  Pubkey out{};
  EXPECT_TRUE(from_hex(hex, out));
  return out;
}

TEST(Nip19, KnownVectors) {
  EXPECT_EQ(encode_npub(key(kHex)), kNpub);
  EXPECT_EQ(decode_npub(kNpub), key(kHex));
  EXPECT_EQ(detail::bech32_decode_32("nsec", kNsec), key(kNsecHex));
  EXPECT_EQ(detail::bech32_encode_32("nsec", key(kNsecHex)), kNsec);
}

TEST(Nip19, RoundTripsManyKeys) {
  for (int i = 0; i < 256; ++i) {
    Pubkey k{};
    for (std::size_t b = 0; b < k.size(); ++b) k[b] = static_cast<std::uint8_t>(i * 31 + b * 7);
    EXPECT_EQ(decode_npub(encode_npub(k)), k);
  }
}

TEST(Nip19, UppercaseIsAcceptedMixedCaseIsNot) {
  std::string upper = kNpub;
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  EXPECT_EQ(decode_npub(upper), key(kHex));
  std::string mixed = kNpub;
  mixed[10] = static_cast<char>(std::toupper(static_cast<unsigned char>(mixed[10])));
  EXPECT_FALSE(decode_npub(mixed).has_value());
}

TEST(Nip19, RejectsCorruption) {
  std::string flipped = kNpub;
  flipped[20] = flipped[20] == 'q' ? 'p' : 'q';
  EXPECT_FALSE(decode_npub(flipped).has_value()) << "checksum";
  EXPECT_FALSE(decode_npub(kNsec).has_value()) << "wrong prefix";
  EXPECT_FALSE(decode_npub("npub1").has_value());
  EXPECT_FALSE(decode_npub("").has_value());
  EXPECT_FALSE(decode_npub(std::string(kNpub) + "q").has_value());
  EXPECT_FALSE(decode_npub(std::string(kNpub).substr(0, 60)).has_value());
  EXPECT_FALSE(decode_npub("npub1b" + std::string(kNpub).substr(6)).has_value()) << "'b' invalid";
  EXPECT_FALSE(decode_npub(std::string(200, 'q')).has_value());
  // A valid bech32 string of the wrong payload length (20 bytes).
  EXPECT_FALSE(decode_npub(detail::bech32_encode_32("npub", key(kHex)).substr(0, 40)).has_value());
}

TEST(Nip19, ParsePubkeyAcceptsNpubOrHex) {
  EXPECT_EQ(parse_pubkey(kNpub), key(kHex));
  EXPECT_EQ(parse_pubkey(kHex), key(kHex));
  EXPECT_EQ(parse_pubkey(std::string("  ") + kNpub + "\n"), key(kHex));
  std::string upper_hex = kHex;
  for (char& c : upper_hex) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  EXPECT_EQ(parse_pubkey(upper_hex), key(kHex));
  EXPECT_FALSE(parse_pubkey("").has_value());
  EXPECT_FALSE(parse_pubkey(std::string(kHex).substr(1)).has_value());
  EXPECT_FALSE(parse_pubkey(kNsec).has_value());
}

TEST(Nip19, ParseSecretKeyAcceptsNsecOrHexAndNothingElse) {
  EXPECT_EQ(encode_nsec(key(kNsecHex)), kNsec);
  EXPECT_EQ(parse_secret_key(kNsec), key(kNsecHex));
  EXPECT_EQ(parse_secret_key(std::string(" ") + kNsecHex + "\n"), key(kNsecHex));
  EXPECT_EQ(parse_secret_key(std::string(" ") + kNsec + "\n"), key(kNsecHex));
  EXPECT_EQ(parse_secret_key(""), std::nullopt);
  EXPECT_EQ(parse_secret_key("   "), std::nullopt);
  EXPECT_EQ(parse_secret_key(kNpub), std::nullopt);  // a public key is no secret key
  EXPECT_EQ(parse_secret_key(std::string(kNsecHex).substr(1)), std::nullopt);
  EXPECT_EQ(parse_secret_key(std::string(kNsecHex).replace(0, 1, "g")), std::nullopt);
  auto corrupted = std::string(kNsec);
  corrupted[10] = corrupted[10] == 'q' ? 'p' : 'q';
  EXPECT_EQ(parse_secret_key(corrupted), std::nullopt);
}

TEST(Nip19, NaddrMatchesNostrTools) {
  // Expected strings from nostr-tools' nip19.naddrEncode.
  auto author = key("3bf0c63fcb93463407af97a5e5ee64fa883d107ef9e558472c4eb9aaaefa459d");
  EXPECT_EQ(
      encode_naddr(30617, author, "graspd"),
      "naddr1qvzqqqrhnypzqwlsccluhy6xxsr6l9a9uhhxf75g85g8a709tprjcn4e42h053vaqqrxwunpwdcxghlyk9k");
  EXPECT_EQ(
      encode_naddr(30617, author, "my-repo", {"wss://relay.example"}),
      "naddr1qvzqqqrhnypzqwlsccluhy6xxsr6l9a9uhhxf75g85g8a709tprjcn4e42h053vaqyfhwumn8ghj7un9d3"
      "shjtn90psk6urvv5qqwmte94ex2ur0y0h6lt");
}

}  // namespace
}  // namespace graspd::nostr
