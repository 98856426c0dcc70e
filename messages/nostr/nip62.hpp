// NIP-62 request to vanish: a kind 62 asks the relays its `relay` tags name (or every relay, with
// `ALL_RELAYS`) to delete every event of its author up to its created_at and to take none of them
// again. The store applies it (store/lmdb/write_rules.*; docs/store.md "Requests to vanish").
#pragma once

#include <cstdint>
#include <string_view>

#include "messages/nostr/event.hpp"
#include "messages/relay_url.hpp"

namespace graspd::nostr::nip62 {

inline constexpr std::uint32_t kind_request_to_vanish = 62;
/// The `relay` tag value that names every relay.
inline constexpr std::string_view all_relays = "ALL_RELAYS";

/// Whether `request` (a kind 62) names this relay: a `relay` tag with `ALL_RELAYS`, or a ws:// or
/// wss:// URL whose host and effective port are `service`'s (compared parsed, as announcements'
/// relays tags are: never by substring; the path is not compared, graspd serves its relay on
/// every path). Without a service (null) only ALL_RELAYS names it.
bool names_relay(const Event& request, const HostPort* service);

}  // namespace graspd::nostr::nip62
