// NIP-34 (git over Nostr) vocabulary shared by the store, the acceptance policy and sync:
// the kind numbers, what counts as a root event, and the `kind:pubkey:d` address.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "messages/nostr/event.hpp"

namespace graspd::nostr::nip34 {

namespace kind {
constexpr std::uint32_t metadata = 0;  // NIP-01 profile
constexpr std::uint32_t deletion = 5;  // NIP-09
constexpr std::uint32_t patch = 1617;
constexpr std::uint32_t pull_request = 1618;
constexpr std::uint32_t pull_request_update = 1619;
constexpr std::uint32_t issue = 1621;
constexpr std::uint32_t relay_list = 10002;       // NIP-65
constexpr std::uint32_t user_grasp_list = 10317;  // the user's GRASP servers
constexpr std::uint32_t repo_announcement = 30617;
constexpr std::uint32_t repo_state = 30618;
}  // namespace kind

/// Patches, pull requests, their updates and issues: the events that start a thread.
inline constexpr std::array<std::uint32_t, 4> root_kinds = {kind::patch, kind::pull_request,
                                                            kind::pull_request_update, kind::issue};
bool is_root_kind(std::uint32_t kind);

/// Kinds that describe a person rather than a repository (profile, relay list, GRASP servers).
inline constexpr std::array<std::uint32_t, 3> identity_kinds = {kind::metadata, kind::relay_list,
                                                                kind::user_grasp_list};
bool is_identity_kind(std::uint32_t kind);

/// A root-kind event that tags a repository address (`a` = 30617:owner:d).
bool is_root(const Event& ev);

/// `kind:pubkey:identifier` naming the latest version of a replaceable (empty identifier) or
/// addressable event.
struct Address {
  std::uint32_t kind = 0;
  Pubkey author{};
  std::string identifier;

  friend bool operator==(const Address&, const Address&) = default;
};

/// The one parser of addresses: a decimal kind that fits 32 bits (never wrapped), 64 hex digits
/// of public key, and a kind that is replaceable or addressable. nullopt on anything else.
std::optional<Address> parse_address(std::string_view text);

/// `kind:lowercase-hex-pubkey:identifier`.
std::string format_address(const Address& address);

}  // namespace graspd::nostr::nip34
