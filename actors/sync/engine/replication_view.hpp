// The replication view of a hosted repository (docs/replication.md), as pure state: which relays
// and git servers a repository names, the filters its events match, what was measured of each and
// when, which measurements are due, and the JSON documents built from them. The replication actor
// (actors/sync/replication.*) owns one ReplicationCache and runs the probes it asks for.
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "messages/nostr/event.hpp"
#include "messages/nostr/filter.hpp"

namespace graspd::sync {

/// A relay or server is measured at most once in this many seconds per repository (a failed
/// attempt counts): the view never makes graspd a source of load on its peers.
inline constexpr std::int64_t replication_refresh_seconds = 3600;

/// Relays (and servers) of one repository listed at most; an announcement may name thousands.
inline constexpr std::size_t max_replication_targets = 32;

/// The relays an announcement's `relays` tags name, canonical, in tag order, without repeats;
/// URLs untrusted_relay_key refuses are left out.
std::vector<std::string> announced_relays(const nostr::Event& announcement);

/// The filters the repository's events match: its announcements and states by the maintainers,
/// everything tagging its address (a/A/q), everything tagging its root events (e/E/q).
nostr::Filters replication_filters(const std::string& repo, const std::string& identifier,
                                   const std::set<nostr::Pubkey>& maintainers,
                                   const std::set<nostr::EventId>& roots);

enum class RelaySource : std::uint8_t { announcement, sync_plus };

/// What the store says about one repository at the time of a request.
struct RepositoryTargets {
  std::string repo;  ///< "30617:<owner hex>:<identifier>"
  nostr::Pubkey owner{};
  std::string identifier;
  std::vector<std::pair<std::string, RelaySource>> relays;  ///< canonical URLs
  std::vector<std::string> servers;                         ///< clone URLs
  std::set<std::string> own_servers;                        ///< the clone URLs naming this service
  std::optional<std::string> state_id;
  std::int64_t state_created_at = 0;
  std::map<std::string, std::string> wanted_refs;  ///< the state's branches and tags
  nostr::Filters filters;
};

/// When something was last measured and how it went.
struct Measurement {
  std::optional<std::int64_t> measured_at;
  std::string reason;  ///< why there are no figures; empty when measured
  bool pending = false;

  bool due(std::int64_t now) const {
    return !pending && (!measured_at || now - *measured_at >= replication_refresh_seconds);
  }
};

struct RelayFigures : Measurement {
  std::optional<std::uint64_t> only_there;
  std::optional<std::uint64_t> only_here;
};

struct ServerRefs : Measurement {
  std::optional<std::map<std::string, std::string>> refs;
};

/// The repository's figures at a glance (the status page's column).
struct ReplicationSummary {
  std::size_t relays = 0;
  std::size_t relays_complete = 0;
  std::size_t servers = 0;
  std::size_t servers_current = 0;
  std::optional<std::int64_t> measured_at;
};

struct RepositoryReplication {
  RepositoryTargets targets;
  std::map<std::string, RelayFigures> relays;
  std::map<std::string, ServerRefs> servers;

  ReplicationSummary summary() const;
  bool pending() const;
};

/// Whether a relay's figures say it holds exactly our events (null when unmeasured or failed).
std::optional<bool> complete(const RelayFigures& figures);
/// Whether a server holds every ref of the state with the state's id (null when unknown).
std::optional<bool> current(const ServerRefs& server, const RepositoryTargets& targets);

/// One repository's view as JSON (the contract in docs/replication.md).
std::string replication_json(const RepositoryReplication& replication);

/// The repositories measured so far, most recently used kept: at most `max_repositories`
/// (the least recently asked for go first; none with a measurement under way).
class ReplicationCache {
 public:
  explicit ReplicationCache(std::size_t max_repositories) : max_(max_repositories) {}

  /// The entry for `targets.repo`, its targets replaced (entries of relays and servers no longer
  /// named are dropped); marks it the most recently used.
  RepositoryReplication& refresh(RepositoryTargets targets);
  RepositoryReplication* find(const std::string& repo);
  std::size_t size() const { return entries_.size(); }

  /// {"repositories":{"<repo>":{summary}}} for every repository with a measurement.
  std::string summary_json() const;

 private:
  void evict();

  std::size_t max_;
  std::map<std::string, RepositoryReplication> entries_;
  std::list<std::string> recency_;  ///< most recent first
};

}  // namespace graspd::sync
