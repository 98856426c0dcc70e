// The server's permessage-deflate frames, read back the way RFC 7692 clients read them: one raw
// inflate stream per connection (context takeover) or one per message, `00 00 ff ff` appended to
// every compressed payload.
#include "runtime/net/ws_deflate.hpp"

#include <gtest/gtest.h>
#include <zlib.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tests/support/wait_until.hpp"

namespace graspd::runtime {
namespace {

struct Decoded {
  bool compressed = false;
  std::string payload;
};

/// Splits the unmasked server frames in `wire` (every one final, text).
std::vector<Decoded> split_frames(const std::string& wire) {
  std::vector<Decoded> out;
  std::size_t at = 0;
  while (at < wire.size()) {
    auto b0 = static_cast<unsigned char>(wire[at]);
    auto b1 = static_cast<unsigned char>(wire[at + 1]);
    EXPECT_EQ(b0 & 0xbf, 0x81) << "FIN + text, RSV2/3 clear";
    EXPECT_EQ(b1 & 0x80, 0) << "server frames are not masked";
    std::size_t length = b1 & 0x7f;
    at += 2;
    std::size_t extra = length == 126 ? 2 : length == 127 ? 8 : 0;
    if (extra != 0) {
      length = 0;
      for (std::size_t i = 0; i < extra; ++i)
        length = (length << 8) | static_cast<unsigned char>(wire[at + i]);
      at += extra;
    }
    out.push_back({(b0 & 0x40) != 0, wire.substr(at, length)});
    at += length;
  }
  return out;
}

/// A client's inflater: one stream, or a fresh one per message.
class ClientInflater {
 public:
  ClientInflater(int window_bits, bool takeover) : window_bits_(window_bits), takeover_(takeover) {
    init();
  }
  ~ClientInflater() { inflateEnd(&z_); }
  std::string read(const Decoded& frame) {
    if (!frame.compressed) return frame.payload;
    if (!takeover_) {
      inflateEnd(&z_);
      init();
    }
    std::string in = frame.payload + std::string("\x00\x00\xff\xff", 4);
    std::string out;
    z_.next_in = reinterpret_cast<Bytef*>(in.data());
    z_.avail_in = static_cast<uInt>(in.size());
    do {
      // Small pieces: back-references must then come from the window itself, as in a client that
      // inflates into small buffers (a larger buffer would hide a too-far distance).
      char chunk[256];
      z_.next_out = reinterpret_cast<Bytef*>(chunk);
      z_.avail_out = sizeof chunk;
      int rc = inflate(&z_, Z_SYNC_FLUSH);
      EXPECT_TRUE(rc == Z_OK || rc == Z_BUF_ERROR) << rc << " " << (z_.msg ? z_.msg : "");
      if (rc != Z_OK && rc != Z_BUF_ERROR) break;
      out.append(chunk, sizeof chunk - z_.avail_out);
    } while (z_.avail_in != 0 || z_.avail_out == 0);
    return out;
  }

 private:
  void init() {
    z_ = {};
    ASSERT_EQ(inflateInit2(&z_, -window_bits_), Z_OK);
  }
  z_stream z_{};
  int window_bits_;
  bool takeover_;
};

std::shared_ptr<const std::string> event_json(int i, std::size_t content) {
  return std::make_shared<const std::string>(
      R"({"id":")" + std::string(64, static_cast<char>('a' + i % 6)) + R"(","kind":1,"content":")" +
      std::string(content, 'x') + std::to_string(i) + R"("})");
}

/// The frames `deflater` writes for `frame` alone.
std::vector<Decoded> encoded(MessageDeflater& deflater, const Frame& frame) {
  std::string wire;
  deflater.encode(frame, wire);
  return split_frames(wire);
}

/// Every kind of client (with and without context takeover) reads `frame` as `text`.
void expect_inflates_to(const Decoded& frame, const std::string& text) {
  for (bool takeover : {true, false}) EXPECT_EQ(ClientInflater(15, takeover).read(frame), text);
}

/// Encodes `frames`, reads them back with every kind of client and returns the texts read.
void expect_round_trip(const DeflateParams& params, const std::shared_ptr<DeflateCache>& cache,
                       const std::vector<Frame>& frames) {
  MessageDeflater deflater(params, cache);
  std::string wire;
  for (const auto& frame : frames) deflater.encode(frame, wire);
  auto decoded = split_frames(wire);
  ASSERT_EQ(decoded.size(), frames.size());
  for (bool takeover : {true, false}) {
    ClientInflater client(params.window_bits, takeover);
    for (std::size_t i = 0; i < frames.size(); ++i) {
      EXPECT_EQ(client.read(decoded[i]), frames[i].text())
          << "frame " << i << (takeover ? " with" : " without") << " context takeover";
    }
  }
}

TEST(WsDeflate, ReadsTheNegotiatedParameters) {
  EXPECT_FALSE(negotiated_deflate("").enabled);
  EXPECT_FALSE(negotiated_deflate("x-webkit-deflate-frame").enabled);
  auto plain = negotiated_deflate("permessage-deflate");
  EXPECT_TRUE(plain.enabled);
  EXPECT_EQ(plain.window_bits, 15);
  auto small = negotiated_deflate(
      "permessage-deflate; server_max_window_bits=10; "
      "client_max_window_bits=12; server_no_context_takeover");
  EXPECT_TRUE(small.enabled);
  EXPECT_EQ(small.window_bits, 10);
  EXPECT_EQ(negotiated_deflate("foo; server_max_window_bits=9, permessage-deflate").window_bits,
            15);
  EXPECT_EQ(negotiated_deflate("permessage-deflate; server_max_window_bits=\"11\"").window_bits,
            11);
}

TEST(WsDeflate, EventFramesSmallFramesAndWholeFramesArriveIntactForEveryClient) {
  auto cache = std::make_shared<DeflateCache>(1 << 20);
  std::vector<Frame> frames;
  for (int i = 0; i < 20; ++i) {
    auto body = event_json(i % 7, 300);  // repeats: cache hits
    frames.emplace_back("[\"EVENT\",\"sub" + std::to_string(i) + "\",", body, "]");
    if (i % 5 == 0) frames.emplace_back(std::make_shared<const std::string>("[\"EOSE\",\"s\"]"));
  }
  frames.emplace_back(std::make_shared<const std::string>(std::string(200000, 'n') + "end"));
  frames.emplace_back("[\"EVENT\",\"big\",", event_json(1, 70000), "]");
  frames.emplace_back("head only ", event_json(2, 200), "");
  expect_round_trip({true, 15}, cache, frames);  // bodies not cached yet leave uncompressed
  ASSERT_TRUE(test::wait_until([&] { return cache->pending() == 0; }));
  expect_round_trip({true, 15}, cache, frames);
  EXPECT_GT(cache->hits(), 0u);
}

TEST(WsDeflate, AnEventLeavesUncompressedUntilCachedThenItsCachedFrameInflatesToTheSameText) {
  auto cache = std::make_shared<DeflateCache>(1 << 20);
  MessageDeflater deflater({true, 15}, cache);
  const Frame frame("[\"EVENT\",\"sub\",", event_json(3, 600), "]");
  auto cold = encoded(deflater, frame);
  ASSERT_EQ(cold.size(), 1u);
  EXPECT_FALSE(cold[0].compressed) << "not compressed on the way out";
  EXPECT_EQ(cold[0].payload, frame.text());
  ASSERT_TRUE(test::wait_until([&] { return cache->pending() == 0 && cache->bytes() > 0; }));
  auto warm = encoded(deflater, frame);
  ASSERT_EQ(warm.size(), 1u);
  EXPECT_TRUE(warm[0].compressed) << "compressed by the cache's thread meanwhile";
  EXPECT_LT(warm[0].payload.size(), frame.size());
  expect_inflates_to(warm[0], frame.text());
  EXPECT_EQ(cache->hits(), 1u);
}

TEST(WsDeflate, AFrameThatAsksForBytesBeforeLatencyLeavesCompressedTheFirstTimeAndIsCached) {
  auto cache = std::make_shared<DeflateCache>(1 << 20);
  MessageDeflater deflater({true, 15}, cache);
  const Frame fetched("[\"EVENT\",\"ids\",", event_json(5, 600), "]", /*deflate_now=*/true);
  auto frames = encoded(deflater, fetched);
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_TRUE(frames[0].compressed) << "compressed although nothing was cached";
  EXPECT_LT(frames[0].payload.size(), fetched.size());
  expect_inflates_to(frames[0], fetched.text());
  EXPECT_EQ(cache->pending(), 0u) << "nothing left for the cache's thread";
  // Kept: the same event in an ordinary answer is served from the cache.
  auto second = encoded(deflater, Frame("[\"EVENT\",\"a\",", event_json(5, 600), "]"));
  ASSERT_EQ(second.size(), 1u);
  EXPECT_TRUE(second[0].compressed);
  EXPECT_EQ(cache->hits(), 1u);
}

TEST(WsDeflate, WithoutACacheEveryEventIsCompressedOnTheWayOut) {
  auto none = std::make_shared<DeflateCache>(0);
  std::string wire;
  MessageDeflater({true, 15}, none)
      .encode(Frame("[\"EVENT\",\"s\",", event_json(4, 600), "]"), wire);
  auto frames = split_frames(wire);
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_TRUE(frames[0].compressed);
  EXPECT_EQ(ClientInflater(15, false).read(frames[0]),
            "[\"EVENT\",\"s\"," + *event_json(4, 600) + "]");
  EXPECT_EQ(none->pending(), 0u);
}

TEST(WsDeflate, WhatWaitsForTheCachesThreadStaysWithinItsBound) {
  DeflateCache cache(256 * 1024);  // 16 KiB may wait
  std::vector<std::shared_ptr<const std::string>> bodies;
  for (int i = 0; i < 300; ++i) {
    bodies.push_back(event_json(i, 2000 + static_cast<std::size_t>(i)));
    EXPECT_EQ(cache.cached_or_queue(bodies.back()), nullptr);
    EXPECT_LE(cache.pending(), cache.max_pending_bytes());
  }
  ASSERT_TRUE(test::wait_until([&] { return cache.pending() == 0; }));
  // Looked at without queueing the misses again: caching those would evict the bodies counted.
  std::size_t cached = 0;
  for (const auto& body : bodies) cached += cache.contains(*body) ? 1 : 0;
  EXPECT_GT(cached, 0u);
  EXPECT_LE(cache.bytes(), 256u * 1024);
}

TEST(WsDeflate, ASmallNegotiatedWindowIsRespected) {
  auto cache = std::make_shared<DeflateCache>(1 << 20);
  std::vector<Frame> frames;
  // Longer than 2^9 with repeats far apart: a window-15 piece would reach back too far.
  std::string noise;
  std::uint32_t state = 12345;
  for (int i = 0; i < 1000; ++i) {
    state = state * 1103515245u + 12345u;
    noise.push_back(static_cast<char>('a' + (state >> 16) % 26));
  }
  std::string far = noise + noise.substr(0, 400);  // the only match is 1000 bytes back
  for (int i = 0; i < 3; ++i) {
    frames.emplace_back("[\"EVENT\",\"s\",", std::make_shared<const std::string>(far), "]");
    frames.emplace_back("[\"EVENT\",\"s\",", event_json(i, 200), "]");
  }
  expect_round_trip({true, 9}, cache, frames);
}

TEST(WsDeflate, ShortMessagesAndUnnegotiatedConnectionsLeaveUncompressed) {
  std::string wire;
  MessageDeflater({true, 15}, nullptr)
      .encode(Frame(std::make_shared<const std::string>("[\"OK\"]")), wire);
  MessageDeflater({false, 15}, nullptr)
      .encode(Frame("[\"EVENT\",\"s\",", event_json(0, 500), "]"), wire);
  auto frames = split_frames(wire);
  ASSERT_EQ(frames.size(), 2u);
  EXPECT_FALSE(frames[0].compressed);
  EXPECT_EQ(frames[0].payload, "[\"OK\"]");
  EXPECT_FALSE(frames[1].compressed);
  EXPECT_EQ(frames[1].payload, "[\"EVENT\",\"s\"," + *event_json(0, 500) + "]");
}

TEST(WsDeflate, TheCacheComparesTextsAndStaysWithinItsBound) {
  DeflateCache cache(64 * 1024);
  auto a = event_json(0, 1000);
  auto a_copy = std::make_shared<const std::string>(*a);
  auto first = cache.compressed(a);
  EXPECT_EQ(cache.compressed(a_copy), first) << "same text, another copy: a hit";
  EXPECT_EQ(cache.hits(), 1u);
  for (int i = 0; i < 200; ++i) cache.compressed(event_json(i, 1000 + static_cast<std::size_t>(i)));
  EXPECT_LE(cache.bytes(), 64u * 1024);
  EXPECT_GT(cache.bytes(), 0u);
  DeflateCache none(0);
  none.compressed(a);
  EXPECT_EQ(none.bytes(), 0u);
}

}  // namespace
}  // namespace graspd::runtime
