#include "messages/nostr/negentropy.hpp"

#include <algorithm>
#include <bit>
#include <utility>

#include "messages/nostr/canonical.hpp"

namespace graspd::nostr::negentropy {
namespace {

enum Mode : std::uint64_t { skip_mode = 0, fingerprint_mode = 1, id_list_mode = 2 };

template <class T>
Result<T> fail(ErrorCode code, std::string detail) {
  return Result<T>::failure(Error{code, std::move(detail)});
}

const Bound infinity_bound{Item{infinity, {}}, 0};

Result<std::string_view> read_bytes(std::string_view& in, std::size_t n, const char* what) {
  if (in.size() < n) {
    return fail<std::string_view>(ErrorCode::truncated, std::string("message ends inside ") + what);
  }
  const auto bytes = in.substr(0, n);
  in.remove_prefix(n);
  return bytes;
}

std::uint64_t load_le64(const std::uint8_t* p) {
  std::uint64_t v;
  std::memcpy(&v, p, sizeof v);
  if constexpr (std::endian::native == std::endian::big) v = __builtin_bswap64(v);
  return v;
}

void store_le64(std::uint8_t* p, std::uint64_t v) {
  if constexpr (std::endian::native == std::endian::big) v = __builtin_bswap64(v);
  std::memcpy(p, &v, sizeof v);
}

// The ids of a range summed as 256-bit little-endian numbers, modulo 2^256.
// Four 64-bit limbs instead of the bytewise definition: the fingerprint of a
// whole 100k-record store is then a single pass of ~0.1 ms.
class Accumulator {
 public:
  void add(const EventId& id) {
    std::uint64_t carry = 0;
    for (std::size_t i = 0; i < limbs_.size(); ++i) {
      const std::uint64_t v = load_le64(id.data() + 8 * i);
      const std::uint64_t sum = limbs_[i] + v;
      const std::uint64_t with_carry = sum + carry;
      carry = static_cast<std::uint64_t>(sum < v) | static_cast<std::uint64_t>(with_carry < sum);
      limbs_[i] = with_carry;
    }
  }

  Fingerprint finish(std::uint64_t count) const {
    std::string input(id_size, '\0');
    for (std::size_t i = 0; i < limbs_.size(); ++i)
      store_le64(reinterpret_cast<std::uint8_t*>(input.data()) + 8 * i, limbs_[i]);
    append_varint(input, count);
    const Bytes32 hash = sha256(input);
    Fingerprint out;
    std::copy_n(hash.begin(), out.size(), out.begin());
    return out;
  }

 private:
  std::array<std::uint64_t, 4> limbs_{};
};

// Shortest bound separating adjacent records prev < curr.
Bound minimal_bound(const Item& prev, const Item& curr) {
  Bound bound{Item{curr.timestamp, {}}, 0};
  if (curr.timestamp != prev.timestamp) return bound;
  const auto diff = std::mismatch(curr.id.begin(), curr.id.end(), prev.id.begin());
  const auto shared = static_cast<std::size_t>(diff.first - curr.id.begin());
  bound.prefix_len = static_cast<std::uint8_t>(std::min(shared + 1, id_size));
  std::copy_n(curr.id.begin(), bound.prefix_len, bound.item.id.begin());
  return bound;
}

// The processing of one incoming message (or of initiate()). Timestamp delta
// state lives here: it restarts with every message.
class Round {
 public:
  Round(const Storage& storage, std::size_t frame_size_limit, bool initiator)
      : storage_(storage), limit_(frame_size_limit), initiator_(initiator) {}

  std::string initiate() {
    split_range(out_, 0, storage_.size(), infinity_bound);
    return std::move(out_);
  }

  Result<std::string> run(std::string_view in);

  std::vector<EventId> have;
  std::vector<EventId> need;

 private:
  Result<bool> process_range(std::string_view& in);
  void split_range(std::string& o, std::size_t lower, std::size_t upper, const Bound& bound);
  void flush_skip(std::string& o);
  void diff_id_list(std::size_t lower, std::size_t upper, std::string_view their_ids);
  std::size_t append_own_ids(std::string& o, std::size_t lower, std::size_t upper,
                             const Bound& bound);
  void append_remainder(std::size_t from);
  // Both references keep 200 bytes of headroom under the limit.
  bool exceeded(std::size_t size) const { return limit_ != 0 && size > limit_ - 200; }

  const Storage& storage_;
  std::size_t limit_;
  bool initiator_;
  TimestampEncoder out_timestamps_;
  TimestampDecoder in_timestamps_;
  std::string out_{static_cast<char>(protocol_version)};
  std::size_t prev_index_ = 0;
  Bound prev_bound_{};
  bool skip_pending_ = false;
};

Result<std::string> Round::run(std::string_view in) {
  if (in.empty()) return fail<std::string>(ErrorCode::truncated, "empty message");
  const auto version = static_cast<std::uint8_t>(in.front());
  in.remove_prefix(1);
  if (version < 0x60 || version > 0x6f) {
    return fail<std::string>(ErrorCode::bad_version,
                             "invalid negentropy protocol version byte " + to_hex(&version, 1));
  }
  if (version != protocol_version) {
    // A responder names the version it speaks; the initiator cannot go lower.
    if (!initiator_) return std::move(out_);
    return fail<std::string>(ErrorCode::unsupported_version,
                             "unsupported negentropy protocol version " + to_hex(&version, 1));
  }
  while (!in.empty()) {
    auto stop = process_range(in);
    if (!stop) return Result<std::string>::failure(stop.error());
    if (*stop) break;
  }
  return std::move(out_);
}

// Handles one incoming range; true when the frame size limit ended the reply.
Result<bool> Round::process_range(std::string_view& in) {
  auto bound = read_bound(in, in_timestamps_);
  if (!bound) return Result<bool>::failure(bound.error());
  auto mode = read_varint(in);
  if (!mode) return Result<bool>::failure(mode.error());
  const std::size_t lower = prev_index_;
  std::size_t upper = storage_.lower_bound(*bound, lower);
  std::string o;
  if (*mode == skip_mode) {
    skip_pending_ = true;
  } else if (*mode == fingerprint_mode) {
    auto theirs = read_bytes(in, fingerprint_size, "a fingerprint");
    if (!theirs) return Result<bool>::failure(theirs.error());
    const Fingerprint ours = storage_.fingerprint(lower, upper);
    if (std::equal(ours.begin(), ours.end(), theirs->begin(),
                   [](std::uint8_t a, char b) { return a == static_cast<std::uint8_t>(b); })) {
      skip_pending_ = true;
    } else {
      flush_skip(o);
      split_range(o, lower, upper, *bound);
    }
  } else if (*mode == id_list_mode) {
    auto count = read_varint(in);
    if (!count) return Result<bool>::failure(count.error());
    if (*count > in.size() / id_size)
      return fail<bool>(ErrorCode::truncated, "message ends inside an id list");
    auto ids = read_bytes(in, *count * id_size, "an id list");
    if (initiator_) {
      diff_id_list(lower, upper, *ids);
      skip_pending_ = true;
    } else {
      flush_skip(o);
      upper = append_own_ids(o, lower, upper, *bound);
      out_ += o;  // committed even if the limit check below stops the reply
      o.clear();
    }
  } else {
    return fail<bool>(ErrorCode::bad_mode, "unexpected mode " + std::to_string(*mode));
  }
  if (exceeded(out_.size() + o.size())) {
    append_remainder(upper);
    return true;
  }
  out_ += o;
  prev_index_ = upper;
  prev_bound_ = *bound;
  return false;
}

// Below the IdList threshold the records themselves; otherwise 16 buckets of
// near-equal size, each with its fingerprint.
void Round::split_range(std::string& o, std::size_t lower, std::size_t upper, const Bound& bound) {
  const std::size_t n = upper - lower;
  if (n < id_list_threshold) {
    append_bound(o, out_timestamps_, bound);
    append_varint(o, id_list_mode);
    append_varint(o, n);
    for (std::size_t i = lower; i < upper; ++i)
      o.append(reinterpret_cast<const char*>(storage_[i].id.data()), id_size);
    return;
  }
  const std::size_t per_bucket = n / buckets;
  const std::size_t with_extra = n % buckets;
  std::size_t curr = lower;
  for (std::size_t i = 0; i < buckets; ++i) {
    const std::size_t size = per_bucket + (i < with_extra ? 1 : 0);
    const Fingerprint fp = storage_.fingerprint(curr, curr + size);
    curr += size;
    append_bound(o, out_timestamps_,
                 curr == upper ? bound : minimal_bound(storage_[curr - 1], storage_[curr]));
    append_varint(o, fingerprint_mode);
    o.append(reinterpret_cast<const char*>(fp.data()), fp.size());
  }
}

// Skips are deferred so that runs of matching ranges, and a trailing one,
// cost nothing; a Skip is written only when a non-skip range follows.
void Round::flush_skip(std::string& o) {
  if (!skip_pending_) return;
  skip_pending_ = false;
  append_bound(o, out_timestamps_, prev_bound_);
  append_varint(o, skip_mode);
}

// Initiator: compares the peer's ids with ours in [lower, upper). Matching
// is by id alone, like the references.
void Round::diff_id_list(std::size_t lower, std::size_t upper, std::string_view their_ids) {
  std::vector<EventId> theirs(their_ids.size() / id_size);
  for (std::size_t i = 0; i < theirs.size(); ++i)
    std::memcpy(theirs[i].data(), their_ids.data() + i * id_size, id_size);
  std::sort(theirs.begin(), theirs.end());
  theirs.erase(std::unique(theirs.begin(), theirs.end()), theirs.end());
  std::vector<bool> matched(theirs.size(), false);
  for (std::size_t i = lower; i < upper; ++i) {
    const EventId& id = storage_[i].id;
    const auto it = std::lower_bound(theirs.begin(), theirs.end(), id);
    const auto index = static_cast<std::size_t>(it - theirs.begin());
    // A second record with an already matched id counts as ours only.
    if (it == theirs.end() || *it != id || matched[index]) {
      have.push_back(id);
    } else {
      matched[index] = true;
    }
  }
  for (std::size_t i = 0; i < theirs.size(); ++i)
    if (!matched[i]) need.push_back(theirs[i]);
}

// Responder: answers an IdList with its own complete list for the range.
// When the ids would pass the frame size limit the list stops early at a
// full-record bound; the returned new `upper` makes the remainder
// fingerprint start there.
std::size_t Round::append_own_ids(std::string& o, std::size_t lower, std::size_t upper,
                                  const Bound& bound) {
  std::size_t count = upper - lower;
  // The references test "output so far + ids so far" before each id, with
  // the pending Skip (in `o`) left out of the sum.
  if (limit_ != 0) {
    const std::size_t budget = limit_ - 200;
    const std::size_t fits = out_.size() > budget ? 0 : (budget - out_.size()) / id_size + 1;
    count = std::min(count, fits);
  }
  const bool truncated = count < upper - lower;
  append_bound(o, out_timestamps_, truncated ? Bound::at(storage_[lower + count]) : bound);
  append_varint(o, id_list_mode);
  append_varint(o, count);
  for (std::size_t i = lower; i < lower + count; ++i)
    o.append(reinterpret_cast<const char*>(storage_[i].id.data()), id_size);
  return lower + count;
}

// Frame size limit reached: one Fingerprint range from `from` to infinity
// replaces the rest. `from` is the current range's upper end, not its lower
// one, exactly like the references (the peer then sees a mismatch and asks
// again for the dropped range).
void Round::append_remainder(std::size_t from) {
  append_bound(out_, out_timestamps_, infinity_bound);
  append_varint(out_, fingerprint_mode);
  const Fingerprint fp = storage_.fingerprint(from, storage_.size());
  out_.append(reinterpret_cast<const char*>(fp.data()), fp.size());
}

}  // namespace

// --- wire helpers ---------------------------------------------------------

void append_varint(std::string& out, std::uint64_t value) {
  char groups[10];
  std::size_t n = 0;
  do {
    groups[n++] = static_cast<char>(value & 0x7f);
    value >>= 7;
  } while (value != 0);
  while (n > 1) out += static_cast<char>(groups[--n] | 0x80);
  out += groups[0];
}

std::string encode_varint(std::uint64_t value) {
  std::string out;
  append_varint(out, value);
  return out;
}

Result<std::uint64_t> read_varint(std::string_view& in) {
  std::uint64_t value = 0;
  for (;;) {
    if (in.empty())
      return fail<std::uint64_t>(ErrorCode::truncated, "message ends inside a varint");
    const auto byte = static_cast<std::uint8_t>(in.front());
    in.remove_prefix(1);
    if ((value >> 57) != 0)
      return fail<std::uint64_t>(ErrorCode::varint_overflow, "varint above 2^64-1");
    value = (value << 7) | (byte & 0x7f);
    if ((byte & 0x80) == 0) return value;
  }
}

void TimestampEncoder::append(std::string& out, std::uint64_t timestamp) {
  if (timestamp == infinity) {
    last_ = infinity;
    append_varint(out, 0);
    return;
  }
  // Wrapping arithmetic as in the references (only reachable when echoing a
  // peer's non-increasing bounds).
  const std::uint64_t delta = timestamp - last_;
  last_ = timestamp;
  append_varint(out, delta + 1);
}

Result<std::uint64_t> TimestampDecoder::read(std::string_view& in) {
  auto encoded = read_varint(in);
  if (!encoded) return encoded;
  std::uint64_t timestamp = *encoded == 0 ? infinity : *encoded - 1;
  timestamp += last_;
  if (timestamp < last_) timestamp = infinity;
  last_ = timestamp;
  return timestamp;
}

void append_bound(std::string& out, TimestampEncoder& timestamps, const Bound& bound) {
  timestamps.append(out, bound.item.timestamp);
  append_varint(out, bound.prefix_len);
  out.append(reinterpret_cast<const char*>(bound.item.id.data()), bound.prefix_len);
}

Result<Bound> read_bound(std::string_view& in, TimestampDecoder& timestamps) {
  auto timestamp = timestamps.read(in);
  if (!timestamp) return Result<Bound>::failure(timestamp.error());
  auto length = read_varint(in);
  if (!length) return Result<Bound>::failure(length.error());
  if (*length > id_size) {
    return fail<Bound>(ErrorCode::prefix_too_long,
                       "bound prefix length " + std::to_string(*length) + " above 32");
  }
  auto prefix = read_bytes(in, *length, "a bound");
  if (!prefix) return Result<Bound>::failure(prefix.error());
  Bound bound{Item{*timestamp, {}}, static_cast<std::uint8_t>(*length)};
  std::memcpy(bound.item.id.data(), prefix->data(), prefix->size());
  return bound;
}

std::string message_to_hex(std::string_view message) {
  return to_hex(reinterpret_cast<const std::uint8_t*>(message.data()), message.size());
}

Result<std::string> message_from_hex(std::string_view hex) {
  std::string out(hex.size() / 2, '\0');
  if (hex.size() % 2 != 0 ||
      !from_hex(hex, reinterpret_cast<std::uint8_t*>(out.data()), out.size())) {
    return fail<std::string>(ErrorCode::bad_hex, "negentropy message is not hex");
  }
  return out;
}

// --- storage --------------------------------------------------------------

Storage::Storage(std::vector<Item> items) : items_(std::move(items)) {
  std::sort(items_.begin(), items_.end());
  items_.erase(std::unique(items_.begin(), items_.end()), items_.end());
}

Fingerprint Storage::fingerprint(std::size_t begin, std::size_t end) const {
  Accumulator sum;
  for (std::size_t i = begin; i < end; ++i) sum.add(items_[i].id);
  return sum.finish(end - begin);
}

std::size_t Storage::lower_bound(const Bound& bound, std::size_t from) const {
  from = std::min(from, items_.size());
  const auto it = std::lower_bound(items_.begin() + static_cast<std::ptrdiff_t>(from), items_.end(),
                                   bound.item);
  return static_cast<std::size_t>(it - items_.begin());
}

// --- reconciliation -------------------------------------------------------

Result<Negentropy> Negentropy::create(const Storage& storage, std::size_t frame_size_limit) {
  if (frame_size_limit != 0 && frame_size_limit < min_frame_size_limit) {
    return fail<Negentropy>(ErrorCode::frame_limit_too_small,
                            "frame size limit " + std::to_string(frame_size_limit) + " below " +
                                std::to_string(min_frame_size_limit));
  }
  return Negentropy(storage, frame_size_limit);
}

std::string Negentropy::initiate() const {
  return Round(*storage_, frame_size_limit_, true).initiate();
}

Result<std::optional<std::string>> Negentropy::reconcile(std::string_view message,
                                                         std::vector<EventId>& have,
                                                         std::vector<EventId>& need) const {
  Round round(*storage_, frame_size_limit_, true);
  auto out = round.run(message);
  if (!out) return Result<std::optional<std::string>>::failure(out.error());
  have.insert(have.end(), round.have.begin(), round.have.end());
  need.insert(need.end(), round.need.begin(), round.need.end());
  // Nothing but the version byte: every range matched.
  if (out->size() == 1) return std::optional<std::string>();
  return std::optional<std::string>(std::move(*out));
}

Result<std::string> Negentropy::respond(std::string_view message) const {
  return Round(*storage_, frame_size_limit_, false).run(message);
}

}  // namespace graspd::nostr::negentropy
