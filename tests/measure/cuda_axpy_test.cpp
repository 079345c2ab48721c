#include <gtest/gtest.h>

#include <vector>

#include "measure/cuda/axpy.hpp"
#include "measure/host_info.hpp"

namespace dsgd::measure::cuda {
namespace {

TEST(MeasureCudaAxpy, UpdatesLikeTheHostOnADevice) {
  if (cuda_devices().empty()) GTEST_SKIP() << "no CUDA device on this machine";
  // Small integers and a power-of-two scale: exact in float, so the comparison is exact.
  const std::size_t n = 1'000'003;  // not a multiple of the block size
  std::vector<float> x(n);
  std::vector<float> y(n);
  for (std::size_t i = 0; i < n; ++i) {
    x[i] = static_cast<float>(i % 1000);
    y[i] = static_cast<float>(i % 7);
  }
  axpy_host(-0.5F, x.data(), y.data(), n);
  for (std::size_t i = 0; i < n; ++i) {
    ASSERT_EQ(y[i], static_cast<float>(i % 7) - 0.5F * static_cast<float>(i % 1000)) << "at " << i;
  }
}

}  // namespace
}  // namespace dsgd::measure::cuda
