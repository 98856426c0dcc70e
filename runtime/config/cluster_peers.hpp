// This node's own relay URLs and its cluster peers (NGIT_SYNC_PEERS) as the daemon and the operator
// commands read them from the configuration: the sync wiring (runtime/boot/wire_sync.*), the state
// applier's fetches and `graspd check-git --repair` (peers are tried first for git data).
#pragma once

#include <set>
#include <string>
#include <vector>

#include "runtime/config/config.hpp"

namespace graspd::runtime {

/// Every spelling of this service as a relay URL (the domain and the bind address, ws and wss),
/// canonical: sync never dials them.
std::set<std::string> own_relay_urls(const Config& config);

/// NGIT_SYNC_PEERS, canonical, without this node's own URLs (each logged when `report`) and
/// repeats.
std::vector<std::string> sync_peer_urls(const Config& config, bool report = false);

/// Each cluster peer's git Smart HTTP base ("http://host:port" for ws://, https for wss://).
std::vector<std::string> peer_git_bases(const Config& config);

}  // namespace graspd::runtime
