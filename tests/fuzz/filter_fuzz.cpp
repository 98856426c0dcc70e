// parse_filter on arbitrary bytes: never crashes, and accepted filters
// survive serialize_filter -> parse_filter unchanged.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "messages/nostr/json.hpp"

using namespace graspd::nostr;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const ParseLimits limits;
  auto filter = parse_filter(input, limits);
  if (!filter) return 0;
  const auto again = parse_filter(serialize_filter(*filter), limits);
  if (!again || !(*again == *filter)) std::abort();
  (void)filter->is_unsatisfiable();
  return 0;
}
