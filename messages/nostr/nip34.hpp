// NIP-34 (git over Nostr) vocabulary shared by the store, the acceptance policy, git hosting and
// sync: the kind numbers, the tag names and how their values are read, what counts as a root
// event, the `kind:pubkey:d` address, the repository reference and the `refs/nostr/<id>` refs.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

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

namespace tag {
/// Announcement: the keys of the other maintainers (hex), one or more per tag.
inline constexpr std::string_view maintainers = "maintainers";
/// Announcement and pull request: git clone URLs, one or more per tag.
inline constexpr std::string_view clone = "clone";
/// Announcement: the relays of the repository, one or more per tag.
inline constexpr std::string_view relays = "relays";
}  // namespace tag

/// The values of every tag named `name` (everything after the name), flattened in tag order, at
/// most `max`.
std::vector<std::string> tag_values(const Event& ev, std::string_view name,
                                    std::size_t max = static_cast<std::size_t>(-1));

/// The keys an announcement lists as maintainers (valid 64-hex values only), in tag order.
std::vector<Pubkey> listed_maintainers(const Event& announcement);

/// Which kind of repository a RepositoryRef names: one hosted for its announcement, or a GRASP-06
/// pull-request submission area (`/prs/<submitter npub>/<identifier>.git`), which holds only the
/// `refs/nostr/<id>` refs strangers pushed for their pull requests and is never announced.
enum class RepositorySpace : std::uint8_t { hosted, pr_submissions };

/// A repository here: <owner>/<identifier>.git, the identifier being the announcement's `d`; in
/// the pr_submissions space the owner is the submitter.
struct RepositoryRef {
  Pubkey owner{};
  std::string identifier;
  RepositorySpace space = RepositorySpace::hosted;

  bool is_pr_submissions() const { return space == RepositorySpace::pr_submissions; }

  friend bool operator==(const RepositoryRef&, const RepositoryRef&) = default;
  friend auto operator<=>(const RepositoryRef&, const RepositoryRef&) = default;
};

/// Where pull request refs live in a hosted repository: `refs/nostr/<event id, 64 hex>`.
inline constexpr std::string_view refs_nostr_prefix = "refs/nostr/";
/// `refs/nostr/<id hex>`.
std::string refs_nostr_ref(const EventId& id);
/// The event id of a `refs/nostr/<64 lowercase hex>` ref; nullopt for any other ref.
std::optional<EventId> refs_nostr_id(std::string_view ref);

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
