#include "runtime/config/cluster_peers.hpp"

#include <algorithm>

#include "messages/relay_url.hpp"
#include "runtime/ops/log.hpp"

namespace graspd::runtime {

std::set<std::string> own_relay_urls(const Config& config) {
  std::set<std::string> out;
  for (const auto& host : {config.domain.text, config.bind_address.text})
    for (const char* scheme : {"ws://", "wss://"})
      if (auto url = canonical_relay_url(scheme + host)) out.insert(*url);
  return out;
}

std::vector<std::string> sync_peer_urls(const Config& config, bool report) {
  const auto own = own_relay_urls(config);
  std::vector<std::string> out;
  for (const auto& peer : config.sync_peers) {
    // Every node of a cluster is given the same list: its own entry is simply not a peer.
    if (own.contains(peer.str())) {
      if (report)
        log::info(log::components::sync, "NGIT_SYNC_PEERS: ", peer.str(),
                  " is this node itself (ignored)");
      continue;
    }
    if (std::find(out.begin(), out.end(), peer.str()) == out.end()) out.push_back(peer.str());
  }
  return out;
}

/// Each cluster peer's git Smart HTTP base: its relay URL with http(s) for ws(s), without a
/// trailing slash (the repositories are /<npub>/<identifier>.git under it).
std::vector<std::string> peer_git_bases(const Config& config) {
  std::vector<std::string> out;
  for (auto url : sync_peer_urls(config)) {
    url = (url.rfind("wss://", 0) == 0 ? "https://" + url.substr(6) : "http://" + url.substr(5));
    while (!url.empty() && url.back() == '/') url.pop_back();
    out.push_back(std::move(url));
  }
  return out;
}

}  // namespace graspd::runtime
