// measure/pingpong_buffers.hpp: the cache size parser, and which buffer each message of a warm and a cold
// ping-pong gets.

#include "measure/pingpong_buffers.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <set>

#include "tests/support/error_message.hpp"

namespace dsgd::measure {
namespace {

using dsgd::testing::input_error;

TEST(MeasurePingPongBuffers, ParsesSysfsCacheSizes) {
  EXPECT_EQ(parse_cache_size("32768K\n"), std::size_t{32} << 20);
  EXPECT_EQ(parse_cache_size("2M"), std::size_t{2} << 20);
  EXPECT_EQ(parse_cache_size("1G"), std::size_t{1} << 30);
  EXPECT_EQ(parse_cache_size("512"), std::size_t{512});
  EXPECT_FALSE(parse_cache_size(""));
  EXPECT_FALSE(parse_cache_size("K"));
  EXPECT_FALSE(parse_cache_size("32X"));
  EXPECT_FALSE(parse_cache_size("-1K"));
}

TEST(MeasurePingPongBuffers, ColdPoolIsTwiceTheLastLevelCache) {
  const std::size_t cache = last_level_cache_bytes();
  EXPECT_EQ(cold_pool_bytes(), cache > 0 ? 2 * cache : std::size_t{64} << 20);
}

TEST(MeasurePingPongBuffers, WarmIsOneBufferForEveryMessage) {
  PingPongBuffers buffers(1 << 20, 0);
  EXPECT_FALSE(buffers.cold());
  const std::byte* first = buffers.next(8);
  EXPECT_EQ(buffers.next(1 << 20), first);
  EXPECT_EQ(buffers.next(8), first);
  EXPECT_EQ(pingpong_buffers_text(0), "from one warm buffer");
}

TEST(MeasurePingPongBuffers, ColdCyclesPageAlignedSlotsThroughThePool) {
  constexpr std::size_t kPool = std::size_t{1} << 20;
  PingPongBuffers buffers(64 << 10, kPool);
  EXPECT_TRUE(buffers.cold());
  // 5000-byte messages take two pages each: 128 slots in 1 MiB, all distinct, then the first again.
  std::set<const std::byte*> seen;
  const std::byte* first = buffers.next(5000);
  seen.insert(first);
  for (int i = 1; i < 128; ++i) {
    const std::byte* slot = buffers.next(5000);
    EXPECT_EQ(static_cast<std::size_t>(slot - first) % 8192, 0U);
    EXPECT_LT(static_cast<std::size_t>(slot - first), kPool);
    seen.insert(slot);
  }
  EXPECT_EQ(seen.size(), 128U);
  EXPECT_EQ(buffers.next(5000), first);
  EXPECT_EQ(pingpong_buffers_text(kPool), "from cold buffers (cycled through 1 MiB)");
}

TEST(MeasurePingPongBuffers, ColdKeepsTwoSlotsOfTheLargestMessage) {
  // A pool smaller than two of the largest messages still alternates between two, so no message finds the last one's
  // data in place.
  PingPongBuffers buffers(1 << 20, 4096);
  const std::byte* first = buffers.next(1 << 20);
  const std::byte* second = buffers.next(1 << 20);
  EXPECT_NE(first, second);
  EXPECT_EQ(buffers.next(1 << 20), first);
}

TEST(MeasurePingPongBuffers, RejectsAMessageLargerThanTheyWereMadeFor) {
  PingPongBuffers warm(4096, 0);
  EXPECT_NE(input_error([&] { warm.next(4097); }).find("4097 bytes is larger than the 4096"), std::string::npos);
  PingPongBuffers cold(4096, 1 << 16);
  EXPECT_NE(input_error([&] { cold.next(4097); }).find("larger"), std::string::npos);
}

}  // namespace
}  // namespace dsgd::measure
