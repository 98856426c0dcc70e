// Payloads of the replication view (actors/sync/replication.*): the question one HTTP request asks
// about a hosted repository, its answer, and what a probe of one relay or one git server found.
#pragma once

#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/meta/type_name.hpp>

#include <cstdint>
#include <map>
#include <string>

#include "messages/nostr/event.hpp"

namespace graspd {

/// GET /api/repositories/<npub>/<identifier>/replication.
struct ReplicationQuery {
  nostr::Pubkey owner{};
  std::string identifier;
};

/// The HTTP answer: 200 with the view's JSON (docs/replication.md), 404 when no announcement of
/// the repository is stored here.
struct ReplicationAnswer {
  unsigned status = 200;
  std::string json;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, ReplicationAnswer& x) {
  return f(caf::meta::type_name("ReplicationAnswer"), x.status, x.json);
}

/// What a NIP-77 comparison with one relay found over a repository's filters.
struct RelayProbeOutcome {
  std::uint64_t probe = 0;  ///< the replication actor's number for the probe
  bool ok = false;
  std::string reason;  ///< why there are no figures (!ok): "unreachable", "does not speak NIP-77"…
  std::uint64_t only_there = 0;  ///< ids the relay holds and we lack
  std::uint64_t only_here = 0;   ///< ids we hold and the relay lacks
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, RelayProbeOutcome& x) {
  return f(caf::meta::type_name("RelayProbeOutcome"), x.probe, x.ok, x.reason, x.only_there,
           x.only_here);
}

/// What one git server's ref advertisement (or, for our own clone URL, our repository) holds.
struct ServerProbeOutcome {
  std::uint64_t probe = 0;
  bool ok = false;
  std::string reason;
  std::map<std::string, std::string> refs;  ///< refs/heads/* and refs/tags/* -> object id
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, ServerProbeOutcome& x) {
  return f(caf::meta::type_name("ServerProbeOutcome"), x.probe, x.ok, x.reason, x.refs);
}

}  // namespace graspd

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(graspd::ReplicationQuery)
