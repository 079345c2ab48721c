// measure/transports.hpp: the sizes (seed 001's among them), memcpy's timing, the CUDA copies exactly where a device
// is, and a 0-byte copy refused.
#include "measure/transports.hpp"

#include <gtest/gtest.h>

#include <algorithm>

#include "core/error.hpp"
#include "core/nn/backend.hpp"
#include "measure/stream.hpp"

namespace dsgd::measure {
namespace {

TEST(MeasureTransports, SizesAscendAndHoldTheSeedsOwn) {
  const auto sizes = transport_sizes(std::size_t{4} << 20);
  EXPECT_TRUE(std::is_sorted(sizes.begin(), sizes.end()));
  EXPECT_EQ(sizes.front(), 1U);
  EXPECT_EQ(sizes.back(), std::size_t{4} << 20);
  for (const std::size_t seed : {128, 512, 16384, 524288, 2097152, 4194304})
    EXPECT_NE(std::find(sizes.begin(), sizes.end(), seed), sizes.end()) << seed;
  EXPECT_EQ(transport_sizes(100), (std::vector<std::size_t>{1, 4, 16, 64}));
}

TEST(MeasureTransports, MemcpyIsTimedAndTheCudaCopiesAppearWhereADeviceIs) {
  const auto transports = local_transports();
  ASSERT_FALSE(transports.empty());
  EXPECT_EQ(transports.front().name, "memcpy");
  const auto small = time_transport(transports.front(), 64, 0.001, 3);
  const auto large = time_transport(transports.front(), std::size_t{1} << 20, 0.001, 3);
  EXPECT_GE(small.samples, 3);
  EXPECT_GT(small.one_way_s, 0);
  EXPECT_LE(small.min_s, small.one_way_s);
  EXPECT_LT(small.one_way_s, large.one_way_s);  // a MiB takes longer than 64 bytes
  const bool device = nn::backend_device_count("cuda") > 0;
  EXPECT_EQ(transports.size() > 1, device);
  EXPECT_THROW(time_transport(transports.front(), 0), InputError);
}

// STREAM's triad checks its own result and counts 12 bytes per element.
TEST(MeasureStream, TheTriadMeasuresABandwidth) {
  const auto one = stream_triad(1, 1 << 20, 3);
  EXPECT_EQ(one.threads, 1);
  EXPECT_EQ(one.elements, 1U << 20);
  EXPECT_GT(one.bytes_per_s, 1e8);  // any machine streams more than 100 MB/s
  EXPECT_THROW(stream_triad(1, 16, 0), InputError);
}

}  // namespace
}  // namespace dsgd::measure
