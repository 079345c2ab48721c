// measure/roofline: the roof under the kernels, the peak raised to a faster kernel, and a kernel above the roof
// flagged; on synthetic kernels with known answers.

#include "measure/roofline.hpp"

#include <gtest/gtest.h>

#include "core/error.hpp"

namespace dsgd::measure {
namespace {

RooflineMachine machine() {
  RooflineMachine out;
  out.cores = 2;
  out.nominal_peak_flops = 100e9;
  out.peak_source = "2 cores";
  out.stream.bytes_per_s = 10e9;
  out.stream.threads = 2;
  out.stream_one.bytes_per_s = 8e9;
  return out;
}

TEST(MeasureRoofline, TheRoofRunsFromHalfTheLeastIntensityToTwiceTheMost) {
  const auto roof = roofline(machine(), {roofline_point("sgemm", "kernel", 50, 80e9, "sgemm 512"),
                                         roofline_point("triad", "kernel", 2.0 / 12, 1.5e9, "a = b + s c")});
  EXPECT_DOUBLE_EQ(roof.peak_flops, 100e9);
  EXPECT_DOUBLE_EQ(roof.ridge_flop_per_byte, 10);
  ASSERT_EQ(roof.entries.size(), 6U) << "3 roof points, 2 kernels, the machine";
  EXPECT_DOUBLE_EQ(roof.entries[0].counters.at("intensity_flop_per_byte"), 1.0 / 12);
  EXPECT_DOUBLE_EQ(roof.entries[0].counters.at("gflops"), 10.0 / 12);
  EXPECT_DOUBLE_EQ(roof.entries[1].counters.at("intensity_flop_per_byte"), 10) << "the ridge";
  EXPECT_DOUBLE_EQ(roof.entries[2].counters.at("gflops"), 100) << "the peak at twice the most";
  EXPECT_TRUE(roof.warnings.empty());
  EXPECT_EQ(roof.entries[5].labels.at("plotted"), "no");
  EXPECT_DOUBLE_EQ(roof.entries[5].counters.at("stream_one_thread_Bps"), 8e9);
}

TEST(MeasureRoofline, AFasterKernelRaisesThePeakAndOneAboveTheMemorySlopeIsSuspect) {
  const auto roof = roofline(machine(), {roofline_point("sgemm", "kernel", 50, 120e9, "sgemm 2048"),
                                         roofline_point("update", "kernel", 0.1, 2e9, "the SGD update")});
  EXPECT_DOUBLE_EQ(roof.peak_flops, 120e9);
  EXPECT_NE(roof.source.find("raised to 120.0 GFLOP/s, the rate sgemm 2048 reached"), std::string::npos) << roof.source;
  ASSERT_EQ(roof.warnings.size(), 1U) << "2 GFLOP/s at 0.1 FLOP/byte is twice the 1 GFLOP/s the memory allows";
  EXPECT_EQ(roof.entries[4].labels.at("suspect"), roof.warnings[0]);
  EXPECT_EQ(roof.entries[3].labels.count("suspect"), 0U);
  EXPECT_THROW(roofline(machine(), {}), InputError);
}

}  // namespace
}  // namespace dsgd::measure
