#include "messages/nostr/nip34.hpp"

#include <algorithm>
#include <charconv>

namespace graspd::nostr::nip34 {

namespace {

// Root detection looks at the prefix only; the address itself is parsed where it is used.
constexpr std::string_view repo_address_prefix = "30617:";

}  // namespace

std::vector<std::string> tag_values(const Event& ev, std::string_view name, std::size_t max) {
  std::vector<std::string> out;
  for (const auto& tag : ev.tags) {
    if (tag.empty() || tag[0] != name) continue;
    for (std::size_t i = 1; i < tag.size() && out.size() < max; ++i) out.push_back(tag[i]);
  }
  return out;
}

std::vector<Pubkey> listed_maintainers(const Event& announcement) {
  std::vector<Pubkey> out;
  for (const auto& tag : announcement.tags) {
    if (tag.empty() || tag[0] != tag::maintainers) continue;
    for (std::size_t i = 1; i < tag.size(); ++i) {
      Pubkey key;
      if (from_hex(tag[i], key)) out.push_back(key);
    }
  }
  return out;
}

std::string refs_nostr_ref(const EventId& id) {
  return std::string(refs_nostr_prefix) + to_hex(id);
}

std::optional<EventId> refs_nostr_id(std::string_view ref) {
  if (ref.rfind(refs_nostr_prefix, 0) != 0) return std::nullopt;
  auto hex = ref.substr(refs_nostr_prefix.size());
  // Lowercase only: the ref name is what a client asks for, and one id has one name.
  if (hex.size() != 64 || !std::all_of(hex.begin(), hex.end(), [](char c) {
        return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
      }))
    return std::nullopt;
  EventId id;
  if (!from_hex(hex, id)) return std::nullopt;
  return id;
}

bool is_root_kind(std::uint32_t kind) {
  return std::find(root_kinds.begin(), root_kinds.end(), kind) != root_kinds.end();
}

bool is_identity_kind(std::uint32_t kind) {
  return std::find(identity_kinds.begin(), identity_kinds.end(), kind) != identity_kinds.end();
}

bool is_root(const Event& ev) {
  if (!is_root_kind(ev.kind)) return false;
  for (const auto& tag : ev.tags)
    if (tag.size() >= 2 && tag[0] == "a" && tag[1].rfind(repo_address_prefix, 0) == 0) return true;
  return false;
}

std::optional<Address> parse_address(std::string_view text) {
  auto first = text.find(':');
  if (first == std::string_view::npos) return std::nullopt;
  auto second = text.find(':', first + 1);
  if (second == std::string_view::npos) return std::nullopt;
  Address out;
  auto kind_text = text.substr(0, first);
  // from_chars reports a kind past 32 bits as out of range instead of wrapping it.
  auto [end, ec] = std::from_chars(kind_text.data(), kind_text.data() + kind_text.size(), out.kind);
  if (ec != std::errc{} || end != kind_text.data() + kind_text.size()) return std::nullopt;
  if (!from_hex(text.substr(first + 1, second - first - 1), out.author)) return std::nullopt;
  if (!is_replaceable(out.kind) && !is_addressable(out.kind)) return std::nullopt;
  out.identifier = std::string(text.substr(second + 1));
  return out;
}

std::string format_address(const Address& address) {
  std::string out = std::to_string(address.kind);
  out += ':';
  out += to_hex(address.author);
  out += ':';
  out += address.identifier;
  return out;
}

}  // namespace graspd::nostr::nip34
