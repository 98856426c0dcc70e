// graspd_forwarded_total{outcome=used|untrusted_peer|malformed}: the requests that carried a
// forwarding header (runtime/net/forwarded_address.hpp), by what resolving them did.
#pragma once

#include <functional>

#include "runtime/net/forwarded_address.hpp"

namespace prometheus {
class Registry;
}

namespace graspd::runtime {

/// Registers the family with its three samples (all present from the start) and returns the
/// thread-safe counting function the HTTP listener calls (HttpServerOptions::count_forwarded).
std::function<void(ForwardedOutcome)> forwarded_counter(prometheus::Registry& registry);

}  // namespace graspd::runtime
