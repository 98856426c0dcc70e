// NIP-77 negentropy set reconciliation, protocol V1: the pure core (no I/O).
// Byte-identical with the C++/JS references and strfry: same bucket count,
// IdList threshold, frame-size-limit rules and version handling (see
// docs/spec/nip77-negentropy.md §2–6). Messages are binary here; the
// NEG-OPEN/NEG-MSG JSON layer hex-encodes them (message_to_hex/_from_hex).
#pragma once

#include <array>
#include <compare>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "messages/nostr/event.hpp"
#include "messages/nostr/json.hpp"

namespace graspd::nostr::negentropy {

inline constexpr std::uint8_t protocol_version = 0x61;
/// Timestamp reserved as the upper end of every range; never a record's.
inline constexpr std::uint64_t infinity = std::numeric_limits<std::uint64_t>::max();
inline constexpr std::size_t id_size = 32;
inline constexpr std::size_t fingerprint_size = 16;
/// Split factor and IdList threshold of the references; other values are
/// protocol-valid but would change every message byte.
inline constexpr std::size_t buckets = 16;
inline constexpr std::size_t id_list_threshold = 2 * buckets;
/// Non-zero frame size limits below this are refused (as by the references).
inline constexpr std::size_t min_frame_size_limit = 4096;
/// graspd's limits (spec §6): the server's equals strfry's, so replies are
/// byte-identical to strfry's; the client's keeps a hex NEG-MSG well below
/// strfry's 131,072-byte websocket payload limit.
inline constexpr std::size_t server_frame_size_limit = 500000;
inline constexpr std::size_t client_frame_size_limit = 60000;

enum class ErrorCode {
  truncated,              // input ends inside a field
  varint_overflow,        // a varint above 2^64-1
  bad_version,            // version byte outside 0x60-0x6F
  unsupported_version,    // initiator got a 0x60-0x6F version other than 0x61
  bad_mode,               // range mode other than 0, 1, 2
  prefix_too_long,        // bound prefix length above 32
  bad_hex,                // message_from_hex: odd length or a non-hex digit
  frame_limit_too_small,  // Negentropy::create with 0 < limit < 4096
  too_many_rounds,        // ClientSession: the peer kept the reconciliation going past the cap
};

struct Error {
  ErrorCode code = ErrorCode::truncated;
  std::string detail;  // human-readable, e.g. "bound prefix length 40 above 32"
};

template <class T>
using Result = Parsed<T, Error>;

/// A record: (created_at, event id). Ordered by timestamp, then id bytewise.
struct Item {
  std::uint64_t timestamp = 0;
  EventId id{};

  friend bool operator==(const Item&, const Item&) = default;
  friend std::strong_ordering operator<=>(const Item& a, const Item& b) {
    if (a.timestamp != b.timestamp) return a.timestamp <=> b.timestamp;
    return std::memcmp(a.id.data(), b.id.data(), id_size) <=> 0;
  }
};

/// A range boundary: records < bound are below it. Only the first
/// `prefix_len` bytes of `item.id` are sent; the rest are zero.
struct Bound {
  Item item;
  std::uint8_t prefix_len = 0;

  /// The bound that sits exactly at `item` (all 32 id bytes).
  static Bound at(const Item& item) { return Bound{item, id_size}; }
  friend bool operator==(const Bound&, const Bound&) = default;
};

using Fingerprint = std::array<std::uint8_t, fingerprint_size>;

// --- wire helpers ---------------------------------------------------------

/// Unsigned base-128, most significant group first, minimal length.
void append_varint(std::string& out, std::uint64_t value);
std::string encode_varint(std::uint64_t value);
/// Consumes one varint from the front of `in`. Non-minimal encodings (leading
/// 0x80 bytes) are accepted like the references do; truncation and values
/// above 2^64-1 are errors (the C++ reference silently wraps those).
Result<std::uint64_t> read_varint(std::string_view& in);

/// Timestamps travel as deltas within one message: 0 is infinity, otherwise
/// 1 + (t - previous). One encoder/decoder per message and direction.
class TimestampEncoder {
 public:
  void append(std::string& out, std::uint64_t timestamp);

 private:
  std::uint64_t last_ = 0;
};

class TimestampDecoder {
 public:
  /// Saturates to infinity on overflow, like the C++ reference.
  Result<std::uint64_t> read(std::string_view& in);

 private:
  std::uint64_t last_ = 0;
};

void append_bound(std::string& out, TimestampEncoder& timestamps, const Bound& bound);
Result<Bound> read_bound(std::string_view& in, TimestampDecoder& timestamps);

/// Lowercase hex for NEG-MSG / NEG-OPEN payloads, and its inverse (either case).
std::string message_to_hex(std::string_view message);
Result<std::string> message_from_hex(std::string_view hex);

// --- storage --------------------------------------------------------------

/// An immutable, sorted snapshot of records: what one side reconciles.
class Storage {
 public:
  Storage() = default;
  /// Sorts `items` and removes duplicate (timestamp, id) pairs (the references
  /// reject them; a merged query result may legitimately repeat a record).
  /// The same id under two timestamps stays two records. Timestamps must be
  /// below `infinity`.
  explicit Storage(std::vector<Item> items);

  std::size_t size() const { return items_.size(); }
  bool empty() const { return items_.empty(); }
  const Item& operator[](std::size_t index) const { return items_[index]; }
  const std::vector<Item>& items() const { return items_; }

  /// Fingerprint of the records [begin, end): SHA-256 over (sum of ids as
  /// 256-bit little-endian numbers mod 2^256) || varint(count), first 16 bytes.
  /// Requires begin <= end <= size().
  Fingerprint fingerprint(std::size_t begin, std::size_t end) const;
  /// First index >= `from` whose record is not below `bound`.
  std::size_t lower_bound(const Bound& bound, std::size_t from = 0) const;

 private:
  std::vector<Item> items_;
};

// --- reconciliation -------------------------------------------------------

/// One side of a reconciliation over a Storage that must outlive it. Holds
/// no per-round state: every message is processed on its own (timestamp
/// deltas restart in each message), so one object serves a whole session and
/// all methods are const and thread-compatible.
class Negentropy {
 public:
  /// `frame_size_limit` caps each produced message in bytes (0 = unlimited);
  /// 1..4095 is refused. Messages stay about 200 bytes under the limit.
  static Result<Negentropy> create(const Storage& storage, std::size_t frame_size_limit = 0);

  /// Client: the first message (version + the whole store as one range).
  /// Never above 997 bytes, whatever the frame size limit.
  std::string initiate() const;

  /// Client ("initiator"): processes a server message, appends ids only we
  /// hold to `have` and ids only the server holds to `need`. A later round
  /// may report an id again (frame size limits make ranges be re-asked), so
  /// callers de-duplicate. Returns the next message, or nullopt when
  /// reconciliation is complete (send NEG-CLOSE). On error `have`/`need` are
  /// unchanged.
  Result<std::optional<std::string>> reconcile(std::string_view message, std::vector<EventId>& have,
                                               std::vector<EventId>& need) const;

  /// Server: the reply to a client message, always sent (even if just the
  /// version byte). An unsupported 0x60-0x6F version is answered with the
  /// bare V1 version byte so the client can retry in V1.
  Result<std::string> respond(std::string_view message) const;

  std::size_t frame_size_limit() const { return frame_size_limit_; }

 private:
  Negentropy(const Storage& storage, std::size_t frame_size_limit)
      : storage_(&storage), frame_size_limit_(frame_size_limit) {}

  const Storage* storage_;
  std::size_t frame_size_limit_;
};

}  // namespace graspd::nostr::negentropy
