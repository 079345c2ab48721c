// measure/cpu_kernel_model: this CPU described for the kernel model from /proc, sysfs and measurements, every value
// positive and sourced, the efficiency left at 1 for a check to fit.
#include "measure/cpu_kernel_model.hpp"

#include <gtest/gtest.h>

namespace dsgd::measure {
namespace {

TEST(CpuKernelModel, DescribesThisCpuFromWhatItReadsAndMeasures) {
  if (cache_bytes(2) == 0 || cache_bytes(3) == 0) GTEST_SKIP() << "sysfs gives no cache sizes here";
  const CpuKernelDescription description = describe_cpu_kernels("test host");
  const auto& cpu = description.cpu;
  ASSERT_TRUE(cpu.kernels);
  const auto& model = *cpu.kernels;
  EXPECT_GE(model.parallel_units, 1);
  EXPECT_EQ(model.tile_n * 32, cpu.vector_width_bits) << "one register of fp32 lanes";
  EXPECT_GT(model.fixed_s, 0);
  EXPECT_LT(model.fixed_s, 1e-3) << "a ReLU over one float";
  EXPECT_GE(model.sync_s_per_unit, 0);
  ASSERT_TRUE(model.cache);
  EXPECT_DOUBLE_EQ(*model.cache->size_bytes, static_cast<double>(cache_bytes(2)) * model.parallel_units);
  EXPECT_EQ(model.efficiency, 1) << "left for a check to fit";
  ASSERT_EQ(description.memories.size(), 2u);
  EXPECT_EQ(description.memories[0].name, "L3");
  EXPECT_GT(description.memories[1].bandwidth_Bps, 0);
  EXPECT_NEAR(cpu.peak_flops, cpu.cores() * cpu.clock_Hz * cpu.sp_flops_per_cycle_per_core, 1);
  for (const char* field : {"parallel_units", "tile", "fixed_s", "sync_s_per_unit", "efficiency"}) {
    EXPECT_TRUE(model.sources.contains(field)) << field;
  }
  EXPECT_NE(model.sources.at("fixed_s").find("test host"), std::string::npos);
}

}  // namespace
}  // namespace dsgd::measure
