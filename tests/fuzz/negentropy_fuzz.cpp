// The negentropy core on arbitrary bytes: respond() and an initiator's
// reconcile() over a small fixed store, with and without a frame size limit.
// Never crashes; errors are values; replies respect the limit, stay within a
// linear bound of the input, and parse back. Then the same bytes choose two
// subsets of the store, which must reconcile to their exact differences.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "messages/nostr/canonical.hpp"
#include "messages/nostr/negentropy.hpp"

using namespace graspd::nostr;
using namespace graspd::nostr::negentropy;

namespace {

// 200 records: runs of equal timestamps, ids sharing long prefixes, and the
// extreme timestamps 0 and infinity - 1.
std::vector<Item> fuzz_items() {
  std::vector<Item> items;
  for (int i = 0; i < 200; ++i) {
    Item item{1700000000 + static_cast<std::uint64_t>(i / 9), sha256(std::to_string(i))};
    if (i % 3 == 0) std::fill_n(item.id.begin(), 20 + i % 12, 0x42);
    if (i == 0) item.timestamp = 0;
    if (i == 199) item.timestamp = infinity - 1;
    items.push_back(item);
  }
  return items;
}

const Storage& fuzz_storage() {
  static const Storage storage(fuzz_items());
  return storage;
}

void check_reply(const Negentropy& neg, std::size_t input_size, const std::string& reply) {
  const std::size_t limit = neg.frame_size_limit();
  if (limit != 0 && reply.size() > limit) std::abort();
  // Each input range (>= 3 bytes) yields at most a Skip and 16 fingerprints,
  // or an IdList whose ids come from the store once.
  if (reply.size() > 400 * input_size + 32 * fuzz_storage().size() + 1200) std::abort();
  std::vector<EventId> have, need;
  if (!neg.reconcile(reply, have, need)) std::abort();  // our own output always parses
}

void feed_raw(std::string_view input) {
  for (std::size_t limit : {std::size_t{0}, min_frame_size_limit}) {
    const Negentropy neg = *Negentropy::create(fuzz_storage(), limit);
    if (auto reply = neg.respond(input)) check_reply(neg, input.size(), *reply);
    std::vector<EventId> have, need;
    auto next = neg.reconcile(input, have, need);
    if (next && next->has_value()) check_reply(neg, input.size(), **next);
    if (!next && (!have.empty() || !need.empty())) std::abort();
  }
}

bool bit(std::string_view input, std::size_t i) {
  if (input.empty()) return false;
  return (static_cast<std::uint8_t>(input[(i / 8) % input.size()]) >> (i % 8)) & 1;
}

// Record i is the client's when bit i is set and the server's when bit i+200 is.
void sync_subsets(std::string_view input) {
  const auto& all = fuzz_storage().items();
  std::vector<Item> client_items, server_items;
  std::set<EventId> only_client, only_server;
  for (std::size_t i = 0; i < all.size(); ++i) {
    const bool c = bit(input, i), s = bit(input, i + all.size());
    if (c) client_items.push_back(all[i]);
    if (s) server_items.push_back(all[i]);
    if (c && !s) only_client.insert(all[i].id);
    if (s && !c) only_server.insert(all[i].id);
  }
  const Storage client_store(client_items), server_store(server_items);
  const std::size_t limit = input.size() % 2 == 0 ? 0 : min_frame_size_limit;
  const Negentropy client = *Negentropy::create(client_store, limit);
  const Negentropy server = *Negentropy::create(server_store, limit);
  std::set<EventId> have_set, need_set;
  std::optional<std::string> message = client.initiate();
  for (int round = 0; message; ++round) {
    auto reply = server.respond(*message);
    if (!reply || round > 100) std::abort();
    std::vector<EventId> have, need;
    auto next = client.reconcile(*reply, have, need);
    if (!next) std::abort();
    have_set.insert(have.begin(), have.end());
    need_set.insert(need.begin(), need.end());
    message = *next;
  }
  if (have_set != only_client || need_set != only_server) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  feed_raw(input);
  sync_subsets(input);
  return 0;
}
