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
// No Beast here (docs/toolchain.md §9).
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
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
class DeflateCache {
 public:
  explicit DeflateCache(std::size_t max_bytes) : max_bytes_(max_bytes) {}
  /// The body deflated at window 15, from the cache when the same text was compressed before.
  std::shared_ptr<const std::string> compressed(const std::shared_ptr<const std::string>& body);
  std::size_t bytes() const;
  std::uint64_t hits() const;

 private:
  struct Entry {
    std::size_t hash;
    std::shared_ptr<const std::string> body;  // compared on a hit: a hash is no proof
    std::shared_ptr<const std::string> deflated;
  };
  using List = std::list<Entry>;

  static std::size_t cost(const Entry& e) { return e.body->size() + e.deflated->size() + 128; }

  std::size_t max_bytes_;
  mutable std::mutex mutex_;
  List lru_;  // most recently used first
  std::unordered_multimap<std::size_t, List::iterator> index_;
  std::size_t bytes_ = 0;
  std::uint64_t hits_ = 0;
};

/// Builds the complete WebSocket frames (header and payload) of one connection's outbound text
/// messages. Server frames are not masked.
class MessageDeflater {
 public:
  /// `cache` may be null (every body compressed when sent).
  MessageDeflater(DeflateParams params, std::shared_ptr<DeflateCache> cache)
      : params_(params), cache_(std::move(cache)) {}

  /// Appends the frame carrying `frame` to `out`.
  void encode(const Frame& frame, std::string& out) const;

 private:
  void encode_deflated(const Frame& frame, std::string& payload) const;

  DeflateParams params_;
  std::shared_ptr<DeflateCache> cache_;
};

}  // namespace graspd::runtime
