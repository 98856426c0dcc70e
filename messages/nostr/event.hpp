// Nostr event value type (NIP-01) and kind classification.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace graspd::nostr {

using Bytes32 = std::array<std::uint8_t, 32>;
using EventId = Bytes32;
using Pubkey = Bytes32;
using Signature = std::array<std::uint8_t, 64>;
using Tag = std::vector<std::string>;
using Tags = std::vector<Tag>;

/// A structurally valid event. Whether `id` and `sig` are correct is checked
/// separately (see nostr/verify.hpp) so that pre-verified events can skip it.
struct Event {
  EventId id{};
  Pubkey pubkey{};
  std::int64_t created_at = 0;
  std::uint32_t kind = 0;
  Tags tags;
  std::string content;
  Signature sig{};

  /// First value of the first tag named `name`, or empty.
  std::string_view first_tag_value(std::string_view name) const;
  /// The `d` tag value used as the address of addressable events.
  std::string_view d_tag() const { return first_tag_value("d"); }

  friend bool operator==(const Event&, const Event&) = default;
};

/// Events travel between actors as immutable shared values.
using EventPtr = std::shared_ptr<const Event>;

enum class KindClass { regular, replaceable, ephemeral, addressable };

constexpr KindClass classify_kind(std::uint32_t kind) {
  if (kind == 0 || kind == 3 || (kind >= 10000 && kind < 20000)) return KindClass::replaceable;
  if (kind >= 20000 && kind < 30000) return KindClass::ephemeral;
  if (kind >= 30000 && kind < 40000) return KindClass::addressable;
  return KindClass::regular;
}
constexpr bool is_replaceable(std::uint32_t k) {
  return classify_kind(k) == KindClass::replaceable;
}
constexpr bool is_ephemeral(std::uint32_t k) {
  return classify_kind(k) == KindClass::ephemeral;
}
constexpr bool is_addressable(std::uint32_t k) {
  return classify_kind(k) == KindClass::addressable;
}

/// Lowercase hex of arbitrary bytes.
std::string to_hex(const std::uint8_t* data, std::size_t size);
/// Appends the lowercase hex of `data` to `out` (serialisers: no temporary string).
void append_hex(std::string& out, const std::uint8_t* data, std::size_t size);
template <std::size_t N>
std::string to_hex(const std::array<std::uint8_t, N>& bytes) {
  return to_hex(bytes.data(), N);
}
/// Parses exactly 2*N lowercase-or-uppercase hex digits; false on anything else.
/// The value of one hex digit (either case); -1 for any other character.
int hex_digit_value(char c);
bool from_hex(std::string_view hex, std::uint8_t* out, std::size_t size);
template <std::size_t N>
bool from_hex(std::string_view hex, std::array<std::uint8_t, N>& out) {
  return from_hex(hex, out.data(), N);
}

/// Address `kind:pubkeyhex:d` of a replaceable (empty d) or addressable event.
std::string address_of(const Event& ev);

}  // namespace graspd::nostr
