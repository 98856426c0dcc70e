#include "store/policy/event_references.hpp"

namespace graspd::policy {

using nostr::Event;
using nostr::EventId;
using nostr::Pubkey;
namespace nip34 = nostr::nip34;

std::optional<Address> parse_address(std::string_view text) {
  auto parsed = nip34::parse_address(text);
  if (!parsed) return std::nullopt;
  return Address{std::move(*parsed), std::string(text)};
}

References references_of(const Event& ev) {
  References out;
  for (const auto& tag : ev.tags) {
    if (tag.size() < 2 || tag[0].size() != 1) continue;
    char letter = tag[0][0];
    bool id_tag = letter == 'e' || letter == 'E' || letter == 'q';
    bool address_tag = letter == 'a' || letter == 'A' || letter == 'q';
    EventId id;
    if (id_tag && nostr::from_hex(tag[1], id)) {
      out.ids.push_back(id);
    } else if (address_tag) {
      if (auto address = parse_address(tag[1])) out.addresses.push_back(std::move(*address));
    }
  }
  return out;
}

std::vector<Pubkey> members_of(const Event& announcement) {
  std::vector<Pubkey> out{announcement.pubkey};
  for (const auto& maintainer : nip34::listed_maintainers(announcement)) out.push_back(maintainer);
  return out;
}

}  // namespace graspd::policy
