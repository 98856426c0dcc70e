// parse_event on arbitrary bytes: never crashes, and every accepted event
// re-serializes to JSON that parses back to the same event with the same id.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "messages/nostr/canonical.hpp"
#include "messages/nostr/json.hpp"

using namespace graspd::nostr;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const ParseLimits limits;
  auto ev = parse_event(input, limits);
  if (!ev) return 0;
  const auto again = parse_event(serialize_event(*ev), limits);
  if (!again || !(*again == *ev)) std::abort();
  if (compute_id(*again) != compute_id(*ev)) std::abort();
  return 0;
}
