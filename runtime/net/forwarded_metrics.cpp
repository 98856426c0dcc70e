#include "runtime/net/forwarded_metrics.hpp"

#include <prometheus/counter.h>
#include <prometheus/registry.h>

#include <array>

namespace graspd::runtime {

std::function<void(ForwardedOutcome)> forwarded_counter(prometheus::Registry& registry) {
  auto& family = prometheus::BuildCounter()
                     .Name("graspd_forwarded_total")
                     .Help(
                         "Requests carrying a forwarding header, by outcome: used (a trusted "
                         "proxy named the client), untrusted_peer (ignored), malformed (the "
                         "last trusted hop taken)")
                     .Register(registry);
  std::array<prometheus::Counter*, 4> counters{};
  for (auto outcome :
       {ForwardedOutcome::used, ForwardedOutcome::untrusted_peer, ForwardedOutcome::malformed}) {
    counters[static_cast<std::size_t>(outcome)] = &family.Add({{"outcome", to_string(outcome)}});
  }
  return [counters](ForwardedOutcome outcome) {
    if (auto* counter = counters[static_cast<std::size_t>(outcome)]) counter->Increment();
  };
}

}  // namespace graspd::runtime
