// Payloads of the GRASP-02 sync actors' messages (see the SYNC MANAGER,
// RELAY CONNECTION and SELF SUBSCRIBER interfaces in messages/interfaces.hpp).
#pragma once

#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/meta/type_name.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "messages/nostr/event.hpp"
#include "messages/nostr/filter.hpp"
#include "messages/sync_level.hpp"

namespace graspd {

/// SelfSubscriber -> SyncManager: what one batch window discovered about
/// hosted repositories ("30617:<owner>:<d>"): the relays of the latest
/// announcement (replacing earlier ones), its level and new root events; or
/// that a held announcement left purgatory without being stored (`removed`).
struct RepoDiscovery {
  struct Repo {
    std::string repo;
    std::optional<std::set<std::string>> relays;
    std::set<nostr::EventId> roots;
    /// Unset: unchanged (a new repository starts Full).
    std::optional<SyncLevel> level = std::nullopt;
    bool removed = false;
  };
  std::vector<Repo> repos;
};

/// Acceptance -> held-feed subscribers (the SelfSubscriber): held announcements whose repository
/// changed. Sent as one snapshot of every held announcement when a subscriber subscribes, then for
/// each change.
struct HeldRepositories {
  enum class Change : std::uint8_t {
    held,      ///< held now (new, or a newer version replacing a held one)
    released,  ///< git data arrived and the store holds it (promotion to Full)
    dropped,   ///< its hold ended without git data (expired, deleted), or its write after the
               ///< release was refused or failed
  };
  struct Entry {
    /// The held announcement (kind 30617).
    nostr::EventPtr announcement;
    Change change = Change::held;
  };
  std::vector<Entry> entries;
};

/// Acceptance -> SyncManager (NGIT_SYNC_PEERS): events purgatory holds, for the cluster peers,
/// which hold them too, so a repository exists on every node before its owner pushes. A newly held
/// event comes as a request once recorded, answered once every connected peer answered its
/// `EVENT` (true: all with `OK true`) or the wait for them ended (false); every held event comes
/// as the reply to `held_events` (a peer connection came up).
struct HeldForPeers {
  std::vector<nostr::EventPtr> events;
};

/// RelayConnection -> SyncManager: a cluster peer answered an event published to it (RelayPublish).
struct RelayPublished {
  std::string relay;
  nostr::EventId id{};
  bool accepted = false;
  std::string message;
};

/// INTERNAL to the SyncManager: the wait for the peers' answers to a held event ends.
struct PeerAckDue {
  nostr::EventId id{};
};

/// SyncManager -> RelayConnection of a cluster peer: publish these events to it (`EVENT`); its
/// `OK` answers are read like any other frame and not waited for.
struct RelayPublish {
  std::vector<nostr::EventPtr> events;
};

/// SyncManager -> RelayConnection: open one subscription (history, then live).
/// The history is reconciled by NIP-77 when `negentropy` is set (the peer is
/// not known to lack it), else paginated until a page brings nothing new.
struct SyncSubscribe {
  std::string subscription_id;
  nostr::Filters filters;
  bool negentropy = false;
};

/// SyncManager -> RelayConnection: close one subscription.
struct SyncUnsubscribe {
  std::string subscription_id;
};

/// RelayConnection -> SyncManager: the connection is open.
struct RelayUp {
  std::string relay;
  /// The peer's NIP-11 limitation.max_message_length; 0 when unknown.
  std::size_t max_message_bytes = 0;
  /// The peer's NIP-11 limitation.max_filters; 0 when unknown.
  std::size_t max_filters = 0;
  /// The peer's NIP-11 limitation.max_limit; 0 when unknown.
  std::size_t max_limit = 0;
  /// Whether the peer's NIP-11 has a supported_nips list, and lists 77 in it.
  bool lists_nips = false;
  bool lists_nip77 = false;

  /// The peer's NIP-11 limitation.max_subscriptions; 0 when unknown.
  std::size_t max_subscriptions = 0;
  /// The peer's limitation.max_subscription_values (graspd advertises it); 0 when unknown.
  std::size_t max_subscription_values = 0;
  /// Whether the peer agreed to permessage-deflate on this connection.
  bool compressed = false;

  /// Whether the peer advertises NIP-77; unset when it lists no NIPs.
  std::optional<bool> nip77() const {
    return lists_nips ? std::optional<bool>(lists_nip77) : std::nullopt;
  }
};

/// RelayConnection -> SyncManager: the connection ended (or never opened);
/// the connection actor quits right after sending it.
struct RelayDown {
  std::string relay;
  bool was_open = false;
  std::string reason;
};

/// RelayConnection -> SyncManager: a subscription's history is complete.
struct RelaySubscriptionDone {
  std::string relay;
  std::string subscription_id;
};

/// RelayConnection -> SyncManager: the peer closed a subscription.
struct RelaySubscriptionClosed {
  std::string relay;
  std::string subscription_id;
  bool rate_limited = false;
  std::string message;
};

/// RelayConnection -> SyncManager: the peer signalled a rate limit (NOTICE/OK).
struct RelayRateLimited {
  std::string relay;
};

/// RelayConnection -> SyncManager: the peer answered NIP-77 (`supported`) or
/// showed it does not speak it (NEG-ERR, error NOTICE or silence on a
/// NEG-OPEN); sent once per connection when it first shows.
struct RelayNegentropy {
  std::string relay;
  bool supported = false;
};

/// What a relay connection counts: reported as RelayTraffic, accumulated in the manager's figures.
struct TrafficCounters {
  std::uint64_t events_received = 0;
  std::uint64_t events_stored = 0;
  std::uint64_t events_invalid = 0;
  /// Already stored: skipped before the signature check.
  std::uint64_t events_known = 0;
  /// Matching no filter of the subscription they came on: dropped unchecked.
  std::uint64_t events_unrequested = 0;
  /// NIP-70 protected events, refused: a peer is never their authenticated author.
  std::uint64_t events_protected = 0;
  std::uint64_t pages = 0;
  std::uint64_t bytes_received = 0;
  /// NIP-77 messages from the peer processed.
  std::uint64_t negentropy_rounds = 0;
  /// Ids the peer holds and we lack, named by NIP-77.
  std::uint64_t ids_needed = 0;
  /// REQs by id fetching them.
  std::uint64_t id_requests = 0;

  /// Calls fn(name, value) for every counter; the names are the metric labels.
  template <class Fn>
  void for_each(Fn&& fn) const {
    fn("events_received", events_received);
    fn("events_stored", events_stored);
    fn("events_invalid", events_invalid);
    fn("events_known", events_known);
    fn("events_unrequested", events_unrequested);
    fn("events_protected", events_protected);
    fn("pages", pages);
    fn("bytes_received", bytes_received);
    fn("negentropy_rounds", negentropy_rounds);
    fn("ids_needed", ids_needed);
    fn("id_requests", id_requests);
  }
  bool empty() const {
    bool any = false;
    for_each([&](const char*, std::uint64_t n) { any = any || n != 0; });
    return !any;
  }
  TrafficCounters& operator+=(const TrafficCounters& other) {
    events_received += other.events_received;
    events_stored += other.events_stored;
    events_invalid += other.events_invalid;
    events_known += other.events_known;
    events_unrequested += other.events_unrequested;
    events_protected += other.events_protected;
    pages += other.pages;
    bytes_received += other.bytes_received;
    negentropy_rounds += other.negentropy_rounds;
    ids_needed += other.ids_needed;
    id_requests += other.id_requests;
    return *this;
  }
};

/// RelayConnection -> SyncManager: counters since the last report.
struct RelayTraffic : TrafficCounters {
  std::string relay;
};

/// SyncManager INTERNAL timers, per relay.
struct RetryTimer {
  std::string relay;
};
struct DailyTick {
  std::string relay;
  /// The SyncPlan ignores ticks of an older generation (a relay dropped and
  /// tracked again must not end up with two daily timers).
  std::uint64_t generation = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, SyncUnsubscribe& x) {
  return f(caf::meta::type_name("SyncUnsubscribe"), x.subscription_id);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, RelayUp& x) {
  return f(caf::meta::type_name("RelayUp"), x.relay, x.max_message_bytes, x.max_filters,
           x.max_limit, x.lists_nips, x.lists_nip77, x.max_subscriptions, x.max_subscription_values,
           x.compressed);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, RelayDown& x) {
  return f(caf::meta::type_name("RelayDown"), x.relay, x.was_open, x.reason);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, RelaySubscriptionDone& x) {
  return f(caf::meta::type_name("RelaySubscriptionDone"), x.relay, x.subscription_id);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, RelaySubscriptionClosed& x) {
  return f(caf::meta::type_name("RelaySubscriptionClosed"), x.relay, x.subscription_id,
           x.rate_limited, x.message);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, RelayRateLimited& x) {
  return f(caf::meta::type_name("RelayRateLimited"), x.relay);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, RelayTraffic& x) {
  return f(caf::meta::type_name("RelayTraffic"), x.relay, x.events_received, x.events_stored,
           x.events_invalid, x.events_known, x.events_unrequested, x.events_protected, x.pages,
           x.bytes_received, x.negentropy_rounds, x.ids_needed, x.id_requests);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, RelayNegentropy& x) {
  return f(caf::meta::type_name("RelayNegentropy"), x.relay, x.supported);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, RetryTimer& x) {
  return f(caf::meta::type_name("RetryTimer"), x.relay);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, DailyTick& x) {
  return f(caf::meta::type_name("DailyTick"), x.relay, x.generation);
}

}  // namespace graspd

// Carry Nostr value types (filters, ids) that are only sent locally.
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(graspd::RepoDiscovery)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(graspd::HeldRepositories)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(graspd::HeldForPeers)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(graspd::RelayPublish)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(graspd::RelayPublished)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(graspd::PeerAckDue)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(graspd::SyncSubscribe)
