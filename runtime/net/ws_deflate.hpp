// The server's half of permessage-deflate (RFC 7692) for outbound text messages, with the system's
// zlib. Beast negotiates the extension and inflates what clients send; the session frames its data
// messages itself through a MessageDeflater, because Beast (1.74) compresses every message through
// one per-connection stream and Huffman-codes a fresh block per message: ~20 µs of CPU for a
// 600-byte EVENT on this project's machines, 10 ms for a REQ answer of 500 events.
//
// What this does instead:
// - Every compressed message is independent (the server never refers to earlier messages, which
//   RFC 7692 allows whatever was negotiated), so a message can be built from pieces compressed
//   elsewhere: an EVENT frame is a stored block of its head (`["EVENT","<subid>",`), the event's
//   JSON compressed once and cached (DeflateCache), and a stored block of its tail. A REQ served
//   again, or one event delivered to many subscriptions, compresses each event once.
// - Messages shorter than kMinCompressBytes (OK, EOSE, CLOSED) leave uncompressed (RSV1 clear,
//   RFC 7692 §6): deflate's block overhead would eat the saving.
// - An event whose compressed JSON is not cached yet leaves uncompressed too, and the cache's own
//   thread compresses it for the next time; unless the frame asks for bytes before latency
//   (Frame::deflate_now: events a client fetched by id, as a sync fetches what NIP-77 found
//   missing), which is compressed in line and cached. zlib spends ~15-20 µs on every small
//   independent message whatever its settings (a Huffman block built and sent per message), so
//   compressing a REQ answer of 500 new events in line cost ~10 ms of the I/O thread's CPU before
//   the client saw its first byte; now the first answer costs what an uncompressed one costs.
// No Beast here (docs/toolchain.md §9).
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>

#include "messages/frame.hpp"

namespace graspd::runtime {

/// What the handshake agreed for the server's messages.
struct DeflateParams {
  bool enabled = false;
  int window_bits = 15;  // server_max_window_bits
};

/// Reads the server's answer to the offer (`Sec-WebSocket-Extensions` of the 101 response).
DeflateParams negotiated_deflate(std::string_view response_extensions);

/// Messages shorter than this are sent uncompressed.
inline constexpr std::size_t kMinCompressBytes = 128;

/// Raw deflate of `text` as one independent piece ending on a byte boundary (a sync flush), at
/// `window_bits`; appended to `out`. One zlib stream per thread and window size.
void deflate_independent(std::string_view text, int window_bits, std::string& out);

/// Compressed event bodies, shared by every connection; thread-safe, least recently used first
/// out once `max_bytes` (bodies held + compressed bytes) would be exceeded. 0 = no cache.
///
/// A miss seen on the way out (`cached_or_queue`) is compressed later by the cache's own thread,
/// started on the first such miss. What waits for it is bounded: bodies queued hold at most
/// `max_pending_bytes()` (a sixteenth of `max_bytes`, so 2 MiB by default); a miss past that is not
/// queued, and the next answer that needs the body queues it again.
class DeflateCache {
 public:
  explicit DeflateCache(std::size_t max_bytes) : max_bytes_(max_bytes) {}
  ~DeflateCache();
  DeflateCache(const DeflateCache&) = delete;
  DeflateCache& operator=(const DeflateCache&) = delete;

  /// The body deflated at window 15, from the cache when the same text was compressed before,
  /// otherwise compressed now (and kept).
  std::shared_ptr<const std::string> compressed(const std::shared_ptr<const std::string>& body);
  /// The body deflated at window 15 when the cache holds it; otherwise null, and the body is
  /// queued for the cache's thread. A body the cache can never hold (no cache, or larger than a
  /// quarter of it) is compressed now, as `compressed` does.
  std::shared_ptr<const std::string> cached_or_queue(
      const std::shared_ptr<const std::string>& body);

  /// Whether `body`'s compressed copy is cached; neither a use (the eviction order stays) nor a
  /// miss (nothing is queued).
  bool contains(const std::string& body) const;
  std::size_t bytes() const;
  std::uint64_t hits() const;
  /// Bytes of the bodies queued for the cache's thread and not in the cache yet.
  std::size_t pending() const;
  std::size_t max_pending_bytes() const { return max_bytes_ / 16; }

 private:
  struct Entry {
    std::size_t hash = 0;
    std::shared_ptr<const std::string> body{};  // compared on a hit: a hash is no proof
    std::shared_ptr<const std::string> deflated{};
  };
  using List = std::list<Entry>;

  static std::size_t cost(std::size_t body_bytes, std::size_t deflated_bytes) {
    return body_bytes + deflated_bytes + 128;
  }
  static std::size_t cost(const Entry& e) { return cost(e.body->size(), e.deflated->size()); }
  /// Whether a body of this size may be kept (one entry is at most a quarter of the cache).
  bool holds(std::size_t body_bytes) const {
    return max_bytes_ != 0 && cost(body_bytes, body_bytes / 2) <= max_bytes_ / 4;
  }

  // Both with mutex_ held.
  std::shared_ptr<const std::string> find(std::size_t hash, const std::string& body);
  void insert(Entry entry);

  void queue(const std::shared_ptr<const std::string>& body);
  void compress_queued();

  std::size_t max_bytes_;
  mutable std::mutex mutex_;
  List lru_;  // most recently used first
  std::unordered_multimap<std::size_t, List::iterator> index_;
  std::size_t bytes_ = 0;
  std::uint64_t hits_ = 0;
  // The cache's thread and what waits for it (under mutex_).
  std::deque<std::shared_ptr<const std::string>> queued_;
  std::size_t queued_bytes_ = 0;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread worker_;
};

/// Builds the complete WebSocket frames (header and payload) of one connection's outbound text
/// messages. Server frames are not masked.
class MessageDeflater {
 public:
  /// `cache` may be null (every body compressed when sent).
  MessageDeflater(DeflateParams params, std::shared_ptr<DeflateCache> cache)
      : params_(params), cache_(std::move(cache)) {}

  /// Appends the frame carrying `frame` to `out`: compressed, unless it is short, or an event
  /// whose compressed JSON the cache does not hold yet (then the cache compresses it for later)
  /// and that does not ask to be compressed now (Frame::deflate_now).
  void encode(const Frame& frame, std::string& out) const;

 private:
  bool cacheable(const Frame& frame) const;

  DeflateParams params_;
  std::shared_ptr<DeflateCache> cache_;
};

}  // namespace graspd::runtime
