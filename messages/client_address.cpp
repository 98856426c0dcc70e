#include "messages/client_address.hpp"

#include <cctype>
#include <vector>

namespace graspd {

std::optional<std::string> ipv6_prefix64(std::string_view text) {
  if (auto zone = text.find('%'); zone != std::string_view::npos) text = text.substr(0, zone);
  if (text.find(':') == std::string_view::npos || text.find('.') != std::string_view::npos)
    return std::nullopt;  // IPv4, or IPv6 with an embedded IPv4 (kept whole)
  std::vector<std::string_view> head, tail;
  auto gap = text.find("::");
  auto split = [](std::string_view part, std::vector<std::string_view>& out) {
    while (!part.empty()) {
      auto colon = part.find(':');
      out.push_back(part.substr(0, colon));
      if (colon == std::string_view::npos) break;
      part.remove_prefix(colon + 1);
    }
  };
  split(gap == std::string_view::npos ? text : text.substr(0, gap), head);
  if (gap != std::string_view::npos) split(text.substr(gap + 2), tail);
  if (head.size() + tail.size() > 8) return std::nullopt;
  std::vector<std::string_view> groups = head;
  groups.resize(8 - tail.size(), "0");
  groups.insert(groups.end(), tail.begin(), tail.end());
  std::string out;
  for (std::size_t i = 0; i < 4; ++i) {
    auto group = groups[i];
    if (group.empty() || group.size() > 4) return std::nullopt;
    out += std::string(4 - group.size(), '0');
    for (char c : group) out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    out += i < 3 ? ":" : "::/64";
  }
  return out;
}

std::string client_address_group(std::string_view address) {
  if (auto prefix = ipv6_prefix64(address)) return *prefix;
  return std::string(address);
}

std::string client_source_group(std::string_view source) {
  constexpr std::string_view ip = "ip:";
  if (source.substr(0, ip.size()) != ip) return std::string(source);
  return std::string(ip) + client_address_group(source.substr(ip.size()));
}

}  // namespace graspd
