// measure/kernel_timings.hpp: the mean of the timings around a run, and a platform re-timed with them keeping the
// shared chip's measured waiting share. On synthetic timings with known answers.

#include "measure/kernel_timings.hpp"

#include <gtest/gtest.h>

#include "measure/calibration.hpp"
#include "tests/support/error_message.hpp"

namespace dsgd::measure {
namespace {

KernelCalibration calibration(double conv_s, double memory_s, int concurrent) {
  KernelCalibration timings;
  timings.kernels = {{"conv", "synthetic conv", 16e9, 10, conv_s, 0.02}, {"elementwise", "synthetic", 1e9, 10, 1.0}};
  timings.memory = {"memory", "synthetic memcpy", 10e9, 10, memory_s};
  timings.concurrent = concurrent;
  return timings;
}

TEST(MeasureKernelTimings, MeanOfIsTheMeanClassByClass) {
  KernelTimings before{calibration(1.0, 2.0, 2), calibration(0.5, 1.0, 1)};
  before.busy.kernels[0].mean_s = 1.5;
  KernelTimings after{calibration(3.0, 4.0, 2), calibration(1.5, 3.0, 1)};
  after.busy.kernels[0].log_spread = 0.04;
  after.busy.kernels[0].mean_s = 4.0;
  after.busy.kernels[0].persistence = 0.5;
  after.busy.others_cores = 0.3;
  const auto mean = mean_of(before, after);
  EXPECT_DOUBLE_EQ(mean.busy_seconds("conv"), 2.0);
  EXPECT_DOUBLE_EQ(mean.busy_seconds("elementwise"), 1.0);
  EXPECT_DOUBLE_EQ(mean.busy.memory.median_s, 3.0);
  EXPECT_DOUBLE_EQ(mean.busy.kernels[0].log_spread, 0.03);
  EXPECT_DOUBLE_EQ(mean.busy.kernels[0].mean_s, 2.75);
  EXPECT_DOUBLE_EQ(mean.busy.kernels[0].persistence, 0.25);
  EXPECT_DOUBLE_EQ(mean.busy.others_cores, 0.3) << "the more disturbed of the two";
  ASSERT_TRUE(mean.alone.has_value());
  EXPECT_DOUBLE_EQ(mean.alone->kernels[0].median_s, 1.0);
  EXPECT_DOUBLE_EQ(mean.alone->memory.median_s, 2.0);
  EXPECT_NE(mean.busy.kernels[0].what.find("before and after"), std::string::npos) << mean.busy.kernels[0].what;
  EXPECT_EQ(before.busy.kernels[0].what, "synthetic conv") << "the inputs are untouched";

  after.busy.kernels.pop_back();
  EXPECT_THROW(mean_of(before, after), InternalError) << "a class timed once";
  EXPECT_THROW(before.busy_seconds("gemm"), InternalError);
}

// A calibrated two-core platform, without kernel timings yet.
platforms::Platform two_cores() {
  CalibrationInput input;
  input.cpu = parse_cpuinfo(
      "processor : 0\nvendor_id : GenuineIntel\ncpu family : 6\ncpu MHz : 2000\nphysical id : 0\ncore id : 0\n"
      "flags : avx2 fma\n\nprocessor : 1\nphysical id : 0\ncore id : 1\n");
  input.segments = fit_alpha_beta({{8, 2e-6}, {1024, 3e-6}, {1 << 20, 1e-3}}, {});
  return calibrated_platform(input);
}

TEST(MeasureKernelTimings, ARetimedPlatformKeepsItsWaitingShare) {
  auto platform = two_cores();
  const KernelTimings first{calibration(1.0, 1.0, 2), calibration(0.5, 1.0, 1)};
  platform = with_kernel_timings(platform, first, "here");
  ASSERT_TRUE(platform.nodes.shared_chip.has_value());
  platform.nodes.shared_chip->waiting_share = 0.3;
  platform.nodes.shared_chip->sources["waiting_share"] = "measured";

  const KernelTimings second{calibration(2.0, 1.0, 2), calibration(1.0, 1.0, 1)};
  const auto retimed = with_kernel_timings(platform, second, "here");
  ASSERT_TRUE(retimed.nodes.shared_chip.has_value());
  EXPECT_DOUBLE_EQ(retimed.nodes.shared_chip->waiting_share, 0.3);
  EXPECT_EQ(retimed.nodes.shared_chip->sources.at("waiting_share"), "measured");
  EXPECT_DOUBLE_EQ(retimed.nodes.cpu.efficiency.of("conv"), platform.nodes.cpu.efficiency.of("conv") / 2)
      << "twice the time: half the efficiency";
  EXPECT_DOUBLE_EQ(retimed.noise.spread, 0.02) << "the forward/backward's spread";
}

TEST(MeasureKernelTimings, BusyTimingsMoveTheRateAloneByTheFilesRatio) {
  // Calibrated: conv twice as fast alone, elementwise as fast.
  auto platform = with_kernel_timings(two_cores(), {calibration(1.0, 1.0, 2), calibration(0.5, 1.0, 1)}, "here");
  ASSERT_TRUE(platform.nodes.shared_chip.has_value());
  platform.nodes.shared_chip->waiting_share = 0.3;
  platform.nodes.shared_chip->alone.by_class.erase("elementwise");  // a class the chip does not list

  const auto retimed = with_busy_timings(platform, calibration(3.0, 1.0, 2), "here");
  const auto& cpu = retimed.nodes.cpu.efficiency;
  EXPECT_DOUBLE_EQ(cpu.of("conv"), platform.nodes.cpu.efficiency.of("conv") / 3) << "three times the time";
  ASSERT_TRUE(retimed.nodes.shared_chip.has_value());
  const auto& alone = retimed.nodes.shared_chip->alone;
  EXPECT_DOUBLE_EQ(alone.of("conv"), 2 * cpu.of("conv")) << "still twice as fast alone";
  EXPECT_DOUBLE_EQ(alone.of("elementwise"), cpu.of("elementwise")) << "not listed: alone as busy";
  EXPECT_NE(alone.sources.at("conv").find("alone and busy"), std::string::npos) << alone.sources.at("conv");
  EXPECT_DOUBLE_EQ(retimed.nodes.shared_chip->waiting_share, 0.3);

  const auto no_chip =
      with_busy_timings(with_kernel_timings(two_cores(), {calibration(1.0, 1.0, 2), std::nullopt}, "here"),
                        calibration(2.0, 1.0, 2), "here");
  EXPECT_FALSE(no_chip.nodes.shared_chip.has_value()) << "one core: nothing alone to scale";
}

}  // namespace
}  // namespace dsgd::measure
