// The status page at GET / for browsers: what this relay is (NIP-11 fields, how to connect), the
// last 24 hours of activity as small SVG plots, one row per sync relay and the hosted
// repositories. Rendered per request from the newest StatusBoard snapshots and a bounded store
// read; complete without JavaScript (the embedded script only refreshes the sync rows from
// /api/sync and filters the repository list). Every string from an event or a peer is escaped.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "messages/nostr/event.hpp"
#include "runtime/net/nip11.hpp"

namespace graspd::store {
class EventStore;
}

namespace graspd::runtime {

/// One hosted repository, from its newest announcement (kind 30617).
struct HostedRepository {
  nostr::Pubkey author{};
  std::string identifier;  ///< `d` tag
  std::string name;        ///< `name` tag, may be empty
  std::string description;
  std::int64_t created_at = 0;
};

struct HostedRepositories {
  std::uint64_t total = 0;
  std::vector<HostedRepository> newest;  ///< newest first, at most the requested number
};

/// The repository announcements in `store`: their count and the newest `max` of them.
HostedRepositories hosted_repositories(const store::EventStore& store, std::size_t max);

struct StatusPageInput {
  const RelayInformation* info = nullptr;
  std::string domain;
  HostedRepositories repositories;
  std::shared_ptr<const std::string> sync_json;     ///< /api/sync, null while sync is off
  std::shared_ptr<const std::string> history_json;  ///< StatusHistory's buckets, may be null
};

std::string status_page_html(const StatusPageInput& input);

}  // namespace graspd::runtime
