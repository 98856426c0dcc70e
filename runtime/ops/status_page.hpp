// The status page at GET / for browsers: what this relay is (NIP-11 fields, how to connect), the
// last 24 hours of activity as small SVG plots, one row per sync relay and the hosted
// repositories. Rendered from the newest StatusBoard snapshots and a bounded store read (at most
// once per interval, off the network threads: status_page_cache.hpp), every field truncated and
// the lists cut to the page's byte cap; complete without JavaScript (the embedded script only
// refreshes the sync rows from /api/sync and filters the repository list). Each repository shows
// its clone URL and its replication at a glance (the StatusBoard's "replication" document). Every
// string from an event or a peer is escaped.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
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

/// What one rendering may cost and produce (NGIT_STATUS_PAGE_*).
struct StatusPageLimits {
  std::size_t max_bytes = 1 << 20;    ///< the whole page, operator's own texts aside
  std::size_t max_field_bytes = 256;  ///< each name, description, URL or error shown
  std::size_t repositories = 500;     ///< announcements listed (the newest)
};

/// `text` cut to at most `max_bytes` on a UTF-8 character boundary, ending in "…" when cut.
std::string truncate_utf8(std::string_view text, std::size_t max_bytes);

/// The repository announcements in `store`: their count and the newest `limits.repositories`,
/// names and descriptions truncated to `limits.max_field_bytes`. Announcements are parsed only
/// while their JSON adds up to 16 × `limits.max_bytes`: beyond, the listing stops early.
HostedRepositories hosted_repositories(const store::EventStore& store,
                                       const StatusPageLimits& limits);

struct StatusPageInput {
  const RelayInformation* info = nullptr;
  std::string domain;
  HostedRepositories repositories;
  std::shared_ptr<const std::string> sync_json;     ///< /api/sync, null while sync is off
  std::shared_ptr<const std::string> history_json;  ///< StatusHistory's buckets, may be null
  /// The StatusBoard's "replication" document (figures per measured repository), may be null.
  std::shared_ptr<const std::string> replication_json;
  StatusPageLimits limits;
};

std::string status_page_html(const StatusPageInput& input);

}  // namespace graspd::runtime
