#include "measure/host_info.hpp"

#include <gtest/gtest.h>

namespace dsgd::measure {
namespace {

TEST(MeasureHostInfo, ReadsTheCpu) {
  const CpuInfo cpu = cpu_info();
  EXPECT_GE(cpu.logical_cores, 1U);
  EXPECT_FALSE(cpu.model.empty()) << "/proc/cpuinfo has a model name on Linux";
}

TEST(MeasureHostInfo, CudaDevicesIsEmptyOrDescribesEachDevice) {
  // Without a GPU (or without the CUDA back end) this is an empty list, never an error.
  for (const auto& device : cuda_devices()) {
    EXPECT_FALSE(device.name.empty());
    EXPECT_GT(device.memory_bytes, 0);
    EXPECT_GE(device.compute_major, 3);
  }
  if (!cuda_built()) {
    EXPECT_TRUE(cuda_devices().empty());
  }
}

}  // namespace
}  // namespace dsgd::measure
