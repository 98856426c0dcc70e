// The connection caps (runtime/net/connection_limiter.*) shared by the WebSocket sessions and git
// hosting: overall and per client address, an IPv6 client's addresses counted together by /64.
#include "runtime/net/connection_limiter.hpp"

#include <gtest/gtest.h>

namespace graspd::runtime {
namespace {

TEST(ConnectionLimiter, CapsEachAddressAndTheTotalAndFreesOnRelease) {
  ConnectionLimiter limiter(3, 2);
  EXPECT_TRUE(limiter.try_acquire("127.0.0.2"));
  EXPECT_TRUE(limiter.try_acquire("127.0.0.2"));
  EXPECT_FALSE(limiter.try_acquire("127.0.0.2")) << "per-address cap";
  EXPECT_TRUE(limiter.try_acquire("127.0.0.1"));
  EXPECT_FALSE(limiter.try_acquire("127.0.0.3")) << "overall cap";
  limiter.release("127.0.0.2");
  EXPECT_EQ(limiter.open(), 2u);
  EXPECT_TRUE(limiter.try_acquire("127.0.0.3"));
}

TEST(ConnectionLimiter, AnIpv6ClientRotatingAddressesWithinItsSlash64SharesOneCap) {
  ConnectionLimiter limiter(100, 2);
  EXPECT_TRUE(limiter.try_acquire("2001:db8:0:1::1"));
  EXPECT_TRUE(limiter.try_acquire("2001:db8:0:1::2"));
  EXPECT_FALSE(limiter.try_acquire("2001:db8:0:1:ffff::3"));
  EXPECT_TRUE(limiter.try_acquire("2001:db8:0:2::1")) << "another /64";
  limiter.release("2001:db8:0:1::1");
  EXPECT_TRUE(limiter.try_acquire("2001:db8:0:1::9"));
}

}  // namespace
}  // namespace graspd::runtime
