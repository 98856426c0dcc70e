// parse_relay_message (frames from remote relays, graspd as a client) on
// arbitrary bytes: never crashes.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "messages/nostr/relay_message.hpp"

using namespace graspd::nostr;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view frame(reinterpret_cast<const char*>(data), size);
  (void)parse_relay_message(frame, ParseLimits{});
  return 0;
}
