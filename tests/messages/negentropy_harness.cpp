// Line-protocol wrapper of the negentropy core, in the format of the
// reference test suite (hoytech/negentropy test/): one command per stdin line
//   item,<timestamp>,<idhex>   add a record
//   seal                       build the storage (FRAMESIZELIMIT env, 0 = none)
//   initiate                   become the client; prints msg,<hex>
//   msg,<hex>                  client: prints have,<id> / need,<id> lines, then
//                              msg,<hex> or done; server: prints msg,<hex>
// Errors go to stderr with exit status 1. Used by tests/interop/negentropy_interop.mjs
// and usable as a harness of the reference suite.
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "messages/nostr/negentropy.hpp"

namespace neg = graspd::nostr::negentropy;

namespace {

[[noreturn]] void die(const std::string& why) {
  std::cerr << "negentropy_harness: " << why << std::endl;
  std::exit(1);
}

std::vector<std::string> split(const std::string& line) {
  std::vector<std::string> fields;
  std::stringstream stream(line);
  std::string field;
  while (std::getline(stream, field, ',')) fields.push_back(field);
  return fields;
}

std::uint64_t parse_u64(const std::string& text, const char* what) {
  try {
    std::size_t used = 0;
    const auto value = std::stoull(text, &used);
    if (used == text.size()) return value;
  } catch (const std::exception&) {
  }
  die(std::string("bad ") + what + ": " + text);
}

class Harness {
 public:
  explicit Harness(std::size_t frame_size_limit) : limit_(frame_size_limit) {}

  void handle(const std::vector<std::string>& fields) {
    const std::string& command = fields[0];
    if (command == "item") return add(fields);
    if (command == "seal") return seal();
    if (command == "initiate") return initiate();
    if (command == "msg") return message(fields.size() >= 2 ? fields[1] : std::string());
    die("unknown command: " + command);
  }

 private:
  void add(const std::vector<std::string>& fields) {
    if (fields.size() != 3) die("wrong number of fields in item line");
    neg::Item item{parse_u64(fields[1], "timestamp"), {}};
    if (!graspd::nostr::from_hex(fields[2], item.id)) die("bad id: " + fields[2]);
    items_.push_back(item);
  }

  void seal() {
    storage_.emplace(std::move(items_));
    auto created = neg::Negentropy::create(*storage_, limit_);
    if (!created) die(created.error().detail);
    negentropy_.emplace(*created);
  }

  const neg::Negentropy& sealed() const {
    if (!negentropy_) die("not sealed");
    return *negentropy_;
  }

  void initiate() {
    initiator_ = true;
    emit(sealed().initiate());
  }

  void message(const std::string& hex) {
    auto bytes = neg::message_from_hex(hex);
    if (!bytes) die(bytes.error().detail);
    if (!initiator_) {
      auto reply = sealed().respond(*bytes);
      if (!reply) die(reply.error().detail);
      return emit(*reply);
    }
    std::vector<graspd::nostr::EventId> have, need;
    auto next = sealed().reconcile(*bytes, have, need);
    if (!next) die(next.error().detail);
    for (const auto& id : have) std::cout << "have," << graspd::nostr::to_hex(id) << '\n';
    for (const auto& id : need) std::cout << "need," << graspd::nostr::to_hex(id) << '\n';
    if (!next->has_value()) {
      std::cout << "done" << std::endl;
      return;
    }
    emit(**next);
  }

  void emit(const std::string& message) {
    if (limit_ != 0 && message.size() > limit_) die("frame size limit exceeded");
    std::cout << "msg," << neg::message_to_hex(message) << std::endl;
  }

  std::size_t limit_;
  std::vector<neg::Item> items_;
  std::optional<neg::Storage> storage_;
  std::optional<neg::Negentropy> negentropy_;
  bool initiator_ = false;
};

}  // namespace

int main() {
  std::size_t limit = 0;
  if (const char* env = std::getenv("FRAMESIZELIMIT")) limit = parse_u64(env, "FRAMESIZELIMIT");
  Harness harness(limit);
  std::string line;
  while (std::getline(std::cin, line)) {
    if (line.empty()) continue;
    harness.handle(split(line));
  }
  return 0;
}
