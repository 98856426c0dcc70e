#include "runtime/net/ws_deflate.hpp"

#include <zlib.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <functional>
#include <stdexcept>

namespace graspd::runtime {

namespace {

std::string_view trim_ows(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

/// Splits `s` at `sep`, calling `fn` with each trimmed piece.
template <class Fn>
void for_each_piece(std::string_view s, char sep, Fn&& fn) {
  while (true) {
    auto at = s.find(sep);
    fn(trim_ows(s.substr(0, at)));
    if (at == std::string_view::npos) return;
    s.remove_prefix(at + 1);
  }
}

/// One raw-deflate stream per window size, reset for every piece.
class ThreadDeflaters {
 public:
  ~ThreadDeflaters() {
    for (auto& z : streams_) {
      if (z) deflateEnd(z.get());
    }
  }
  z_stream& at(int window_bits) {
    auto& z = streams_[static_cast<std::size_t>(window_bits)];
    if (!z) {
      z = std::make_unique<z_stream>();
      // Level 1: several times the speed of the higher levels for a few percent of ratio.
      // memLevel 4: a 16 KiB hash table instead of 64 KiB at 8, which deflateReset clears before
      // every message; the same output size on event JSON for two thirds of the instructions.
      if (deflateInit2(z.get(), 1, Z_DEFLATED, -window_bits, 4, Z_DEFAULT_STRATEGY) != Z_OK) {
        z.reset();
        throw std::runtime_error("deflateInit2 failed");
      }
    } else {
      deflateReset(z.get());
    }
    return *z;
  }

 private:
  std::array<std::unique_ptr<z_stream>, 16> streams_;
};

constexpr std::string_view kSyncMarker("\x00\x00\xff\xff", 4);

/// A stored (uncompressed) deflate block, not final; starts and ends on a byte boundary.
void append_stored(std::string& out, std::string_view text) {
  do {
    auto n = std::min<std::size_t>(text.size(), 0xffff);
    const char block[5] = {0, static_cast<char>(n & 0xff), static_cast<char>(n >> 8),
                           static_cast<char>(~n & 0xff), static_cast<char>((~n >> 8) & 0xff)};
    out.append(block, sizeof block);
    out.append(text.substr(0, n));
    text.remove_prefix(n);
  } while (!text.empty());
}

/// Bytes append_stored writes for `n` bytes of text.
std::size_t stored_size(std::size_t n) {
  return n + 5 * std::max<std::size_t>(1, (n + 0xfffe) / 0xffff);
}

/// RFC 6455 §5.2 header of an unmasked, final text frame.
void append_header(std::string& out, bool compressed, std::size_t length) {
  out.push_back(static_cast<char>(0x81 | (compressed ? 0x40 : 0)));
  if (length < 126) {
    out.push_back(static_cast<char>(length));
  } else if (length <= 0xffff) {
    out.push_back(126);
    out.push_back(static_cast<char>(length >> 8));
    out.push_back(static_cast<char>(length & 0xff));
  } else {
    out.push_back(127);
    for (int shift = 56; shift >= 0; shift -= 8)
      out.push_back(static_cast<char>((static_cast<std::uint64_t>(length) >> shift) & 0xff));
  }
}

}  // namespace

DeflateParams negotiated_deflate(std::string_view response_extensions) {
  DeflateParams params;
  for_each_piece(response_extensions, ',', [&](std::string_view extension) {
    bool first = true;
    bool ours = false;
    for_each_piece(extension, ';', [&](std::string_view param) {
      if (std::exchange(first, false)) {
        ours = param == "permessage-deflate";
        params.enabled = params.enabled || ours;
        return;
      }
      if (!ours) return;
      auto eq = param.find('=');
      if (trim_ows(param.substr(0, eq)) != "server_max_window_bits" || eq == std::string_view::npos)
        return;
      auto value = trim_ows(param.substr(eq + 1));
      if (value.size() >= 2 && value.front() == '"') value = value.substr(1, value.size() - 2);
      int bits = 15;
      std::from_chars(value.data(), value.data() + value.size(), bits);
      params.window_bits = std::clamp(bits, 9, 15);  // zlib has no 8-bit raw deflate
    });
  });
  return params;
}

void deflate_independent(std::string_view text, int window_bits, std::string& out) {
  thread_local ThreadDeflaters deflaters;
  auto& z = deflaters.at(std::clamp(window_bits, 9, 15));
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  z.avail_in = static_cast<uInt>(text.size());
  std::size_t room = deflateBound(&z, static_cast<uLong>(text.size())) + 16;
  do {
    const auto used = out.size();
    out.resize(used + room);
    z.next_out = reinterpret_cast<Bytef*>(out.data() + used);
    z.avail_out = static_cast<uInt>(room);
    deflate(&z, Z_SYNC_FLUSH);
    out.resize(out.size() - z.avail_out);
    room = 4096;
  } while (z.avail_out == 0 || z.avail_in != 0);
}

namespace {

std::shared_ptr<const std::string> deflate_body(const std::string& body) {
  auto out = std::make_shared<std::string>();
  deflate_independent(body, 15, *out);
  return out;
}

}  // namespace

DeflateCache::~DeflateCache() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (worker_.joinable()) worker_.join();
}

std::shared_ptr<const std::string> DeflateCache::find(std::size_t hash, const std::string& body) {
  auto [it, end] = index_.equal_range(hash);
  for (; it != end; ++it) {
    const auto& entry = *it->second;
    if (entry.body.get() == &body || *entry.body == body) {
      lru_.splice(lru_.begin(), lru_, it->second);
      return entry.deflated;
    }
  }
  return nullptr;
}

void DeflateCache::insert(Entry entry) {
  bytes_ += cost(entry);
  const auto hash = entry.hash;
  lru_.push_front(std::move(entry));
  index_.emplace(hash, lru_.begin());
  while (bytes_ > max_bytes_) {
    auto last = std::prev(lru_.end());
    auto [it, end] = index_.equal_range(last->hash);
    while (it != end && it->second != last) ++it;
    if (it != end) index_.erase(it);
    bytes_ -= cost(*last);
    lru_.erase(last);
  }
}

std::shared_ptr<const std::string> DeflateCache::compressed(
    const std::shared_ptr<const std::string>& body) {
  if (max_bytes_ == 0) return deflate_body(*body);
  const auto hash = std::hash<std::string_view>{}(*body);
  {
    std::lock_guard lock(mutex_);
    if (auto found = find(hash, *body)) {
      ++hits_;
      return found;
    }
  }
  auto deflated = deflate_body(*body);  // outside the lock: the other io threads go on
  Entry entry{hash, body, deflated};
  if (cost(entry) > max_bytes_ / 4) return deflated;
  std::lock_guard lock(mutex_);
  if (!find(hash, *body)) insert(std::move(entry));  // another thread may have been quicker
  return deflated;
}

std::shared_ptr<const std::string> DeflateCache::cached_or_queue(
    const std::shared_ptr<const std::string>& body) {
  if (!holds(body->size())) return compressed(body);
  const auto hash = std::hash<std::string_view>{}(*body);
  std::lock_guard lock(mutex_);
  if (auto found = find(hash, *body)) {
    ++hits_;
    return found;
  }
  queue(body);
  return nullptr;
}

void DeflateCache::queue(const std::shared_ptr<const std::string>& body) {
  if (queued_bytes_ + body->size() > max_pending_bytes()) return;
  queued_bytes_ += body->size();
  queued_.push_back(body);
  if (!worker_.joinable()) worker_ = std::thread([this] { compress_queued(); });
  // The thread waits only on an empty queue: one wake-up per burst, not one per event.
  if (queued_.size() == 1) wake_.notify_one();
}

void DeflateCache::compress_queued() {
  std::unique_lock lock(mutex_);
  while (true) {
    wake_.wait(lock, [this] { return stopping_ || !queued_.empty(); });
    if (stopping_) return;
    auto body = std::move(queued_.front());
    queued_.pop_front();
    const auto hash = std::hash<std::string_view>{}(*body);
    // A body queued by several answers before it was compressed is compressed once.
    if (!find(hash, *body)) {
      lock.unlock();
      auto deflated = deflate_body(*body);
      lock.lock();
      if (!find(hash, *body)) insert(Entry{hash, body, std::move(deflated)});
    }
    // Counted as pending until it is in the cache: pending() == 0 means every queued body is.
    queued_bytes_ -= body->size();
  }
}

bool DeflateCache::contains(const std::string& body) const {
  std::lock_guard lock(mutex_);
  auto [it, end] = index_.equal_range(std::hash<std::string_view>{}(body));
  return std::any_of(it, end, [&](const auto& indexed) { return *indexed.second->body == body; });
}

std::size_t DeflateCache::bytes() const {
  std::lock_guard lock(mutex_);
  return bytes_;
}

std::uint64_t DeflateCache::hits() const {
  std::lock_guard lock(mutex_);
  return hits_;
}

std::size_t DeflateCache::pending() const {
  std::lock_guard lock(mutex_);
  return queued_bytes_;
}

bool MessageDeflater::cacheable(const Frame& frame) const {
  // A cached body was compressed at window 15; a smaller negotiated window still reads it when the
  // body is no longer than that window (no distance can reach further back).
  return cache_ && !frame.head().empty() &&
         (params_.window_bits == 15 ||
          frame.body().size() <= (std::size_t{1} << params_.window_bits));
}

namespace {

void append_plain(const Frame& frame, std::string& out) {
  append_header(out, false, frame.size());
  out.append(frame.head()).append(frame.body()).append(frame.tail());
}

void append_deflated(const Frame& frame, int window_bits, std::string& out) {
  std::string payload;
  deflate_independent(frame.text(), window_bits, payload);
  payload.resize(payload.size() - kSyncMarker.size());  // RFC 7692 §7.2.1
  append_header(out, true, payload.size());
  out.append(payload);
}

/// Head and tail as stored blocks around the body's cached piece (which ends with a sync flush).
void append_around(const Frame& frame, std::string_view piece, std::string& out) {
  const bool tail = !frame.tail().empty();
  const auto length = stored_size(frame.head().size()) + piece.size() +
                      (tail ? stored_size(frame.tail().size()) + 1 : 0) -
                      (tail ? 0 : kSyncMarker.size());
  append_header(out, true, length);
  append_stored(out, frame.head());
  if (!tail) {
    out.append(piece.substr(0, piece.size() - kSyncMarker.size()));
    return;
  }
  out.append(piece);
  append_stored(out, frame.tail());
  // The header byte of the empty stored block whose other four bytes the client adds back.
  out.push_back('\0');
}

}  // namespace

void MessageDeflater::encode(const Frame& frame, std::string& out) const {
  if (!params_.enabled || frame.size() < kMinCompressBytes) return append_plain(frame, out);
  if (!cacheable(frame)) return append_deflated(frame, params_.window_bits, out);
  auto piece = frame.deflate_now() ? cache_->compressed(frame.shared_body())
                                   : cache_->cached_or_queue(frame.shared_body());
  // Not compressed yet: the cache's thread compresses it for the next answer that holds it.
  if (!piece) return append_plain(frame, out);
  append_around(frame, *piece, out);
}

}  // namespace graspd::runtime
