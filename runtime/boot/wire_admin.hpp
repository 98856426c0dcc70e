// Wiring of the NIP-86 management API: the management actor (actors/ops/management.*), its
// configuration (who may call, the accepted URLs, the configured lists, the runtime lists read from
// the store) and the site content's entry that hands each call to it without blocking.
#pragma once

#include <functional>
#include <string>

#include "actors/ops/management.hpp"
#include "messages/interfaces.hpp"
#include "runtime/boot/services.hpp"
#include "runtime/boot/wire_policy.hpp"
#include "runtime/boot/wire_store.hpp"
#include "runtime/net/http_routes.hpp"

namespace graspd::boot {

struct WiredAdmin {
  management_actor management;
};

/// Config → ManagementConfig (the stored runtime lists are the caller's): the operator and
/// NGIT_ADMIN_NPUBS, https:// and wss:// of NGIT_DOMAIN, NGIT_EVENT_BLACKLIST and the npub entries
/// of NGIT_REPOSITORY_WHITELIST.
actors::ManagementConfig management_config(const runtime::Config& config);

WiredAdmin wire_admin(const Services& services, const WiredStore& store, const WiredPolicy& policy);

/// SiteContent::management for `wired`: each call goes to the management actor through a one-shot
/// requester, the network thread does not wait.
std::function<void(std::string, std::string, runtime::HttpRespond)> management_entry(
    caf::actor_system& system, const WiredAdmin& wired);

void stop(const WiredAdmin& wired);

}  // namespace graspd::boot
