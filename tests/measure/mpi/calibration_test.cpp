// measure/calibration.hpp without MPI: the alpha-beta fit on synthetic ping-pong data with known alpha and beta,
// the split into segments, the CPU facts from a /proc/cpuinfo text, and the platform file it writes (which must
// pass the same validation as every platform file).
#include "measure/calibration.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <limits>

#include "core/error.hpp"
#include "platforms/loader.hpp"

namespace dsgd::measure {
namespace {

// Round trips of a link with one-way latency alpha and bandwidth 1/beta: T(n) = 2 alpha + 2 n beta.
std::vector<PingPongPoint> synthetic(double alpha_s, double bandwidth_Bps, double from, double to, double wobble = 0) {
  std::vector<PingPongPoint> points;
  int i = 0;
  for (double bytes = from; bytes < to; bytes *= 2, ++i) {
    const double noise = 1 + (i % 2 ? wobble : -wobble);  // +-wobble, alternating: no bias
    points.push_back({bytes, 2 * (alpha_s + bytes / bandwidth_Bps) * noise});
  }
  return points;
}

TEST(MeasureCalibration, RecoversAlphaAndBetaExactlyFromNoiseFreeData) {
  for (const auto weighting : {FitWeighting::kRelative, FitWeighting::kAbsolute}) {
    const auto fits = fit_alpha_beta(synthetic(0.2e-6, 5e9, 8, 1 << 26), {}, weighting);
    ASSERT_EQ(fits.size(), 1U);
    EXPECT_NEAR(fits[0].latency_s, 0.2e-6, 1e-12) << "expectation 0.2 us";
    EXPECT_NEAR(fits[0].bandwidth_Bps / 5e9, 1.0, 1e-9) << "expectation 5 GB/s";
    EXPECT_LT(fits[0].rms_relative_residual, 1e-9);
    EXPECT_EQ(fits[0].points, 23U);
    EXPECT_EQ(fits[0].min_bytes, 8);
    EXPECT_EQ(fits[0].max_bytes, 1 << 25);
    EXPECT_NEAR(fits[0].one_way_s(1e6), 0.2e-6 + 1e6 / 5e9, 1e-12);
  }
}

TEST(MeasureCalibration, NoisyDataGivesCloseParametersAndReportsTheResidual) {
  const auto fits = fit_alpha_beta(synthetic(1e-6, 2e9, 8, 1 << 24, 0.05), {});
  ASSERT_EQ(fits.size(), 1U);
  EXPECT_NEAR(fits[0].latency_s, 1e-6, 0.1e-6);
  EXPECT_NEAR(fits[0].bandwidth_Bps, 2e9, 0.1e9);
  EXPECT_GT(fits[0].rms_relative_residual, 0.03);
  EXPECT_LT(fits[0].max_relative_residual, 0.07);
}

TEST(MeasureCalibration, SegmentsAreFittedSeparately) {
  // Eager below 4 KiB, rendezvous above: a different alpha and beta on each side.
  auto points = synthetic(0.2e-6, 8e9, 8, 4096);
  const auto above = synthetic(3e-6, 4e9, 4096, 1 << 26);
  points.insert(points.end(), above.begin(), above.end());
  const auto fits = fit_alpha_beta(points, {4096});
  ASSERT_EQ(fits.size(), 2U);
  EXPECT_EQ(fits[0].from_bytes, 0);
  EXPECT_EQ(fits[0].to_bytes, 4096);
  EXPECT_EQ(fits[0].max_bytes, 2048);  // 4096 itself belongs above the boundary
  EXPECT_NEAR(fits[0].latency_s, 0.2e-6, 1e-12);
  EXPECT_NEAR(fits[0].bandwidth_Bps / 8e9, 1.0, 1e-6);
  EXPECT_EQ(fits[1].min_bytes, 4096);
  EXPECT_TRUE(std::isinf(fits[1].to_bytes));
  EXPECT_NEAR(fits[1].latency_s, 3e-6, 1e-12);
  EXPECT_NEAR(fits[1].bandwidth_Bps / 4e9, 1.0, 1e-9);
  // One fit over both segments is worse than either.
  const auto joint = fit_alpha_beta(points, {});
  EXPECT_GT(joint[0].rms_relative_residual, 0.05);
}

TEST(MeasureCalibration, NegativeInterceptIsRefittedThroughTheOrigin) {
  // Large messages whose time per byte grows with the size: a line through 1..64 MiB crosses zero below the
  // origin. Here T(n) = 2 (-1 us + n / 2 GB/s): the free fit would say alpha = -1 us.
  const auto points = synthetic(-1e-6, 2e9, 1 << 20, 1 << 27);
  for (const auto weighting : {FitWeighting::kRelative, FitWeighting::kAbsolute}) {
    const auto fits = fit_alpha_beta(points, {}, weighting);
    ASSERT_EQ(fits.size(), 1U);
    EXPECT_TRUE(fits[0].through_origin);
    EXPECT_EQ(fits[0].latency_s, 0) << "expectation: alpha clamped to 0";
    EXPECT_EQ(fits[0].intercept_s, 0);
    EXPECT_NEAR(fits[0].bandwidth_Bps / 2e9, 1.0, 0.01) << "expectation: about 2 GB/s";
    EXPECT_LT(fits[0].max_relative_residual, 0.01);  // 2 us of 1 ms at 1 MiB, less above
    EXPECT_NE(fits[0].note.find("intercept was negative (-1 us one way)"), std::string::npos) << fits[0].note;
    EXPECT_NE(fits[0].note.find("through the origin"), std::string::npos) << fits[0].note;
    EXPECT_NE(describe(fits[0]).find(fits[0].note), std::string::npos) << describe(fits[0]);
  }
  // Exact y = b x: b comes back whether the intercept rounds to a hair below zero (a refit) or not.
  const auto exact = fit_alpha_beta(synthetic(0, 4e9, 1024, 1 << 20), {});
  EXPECT_NEAR(exact[0].bandwidth_Bps / 4e9, 1.0, 1e-9);
  // An ordinary fit has no note.
  const auto ordinary = fit_alpha_beta(synthetic(1e-6, 1e9, 8, 1 << 20), {});
  EXPECT_FALSE(ordinary[0].through_origin);
  EXPECT_TRUE(ordinary[0].note.empty());
}

TEST(MeasureCalibration, SegmentsWithFewerThanTwoSizesAreLeftOut) {
  const auto fits = fit_alpha_beta(synthetic(1e-6, 1e9, 8, 1 << 20), {16, 1 << 30});
  ASSERT_EQ(fits.size(), 1U);  // [0, 16) has only 8 B; [1 GiB, inf) nothing
  EXPECT_EQ(fits[0].min_bytes, 16);
  EXPECT_THROW(fit_alpha_beta({{8, 1e-6}}, {}), InputError);
}

TEST(MeasureCalibration, BadInputsAreInputErrors) {
  EXPECT_THROW(fit_alpha_beta(synthetic(1e-6, 1e9, 8, 1024), {4096, 1024}), InputError);
  EXPECT_THROW(fit_alpha_beta(synthetic(1e-6, 1e9, 8, 1024), {0}), InputError);
  EXPECT_THROW(fit_alpha_beta({{8, 1e-6}, {16, 0}}, {}), InputError);
  EXPECT_THROW(fit_alpha_beta({{-8, 1e-6}, {16, 1e-6}}, {}), InputError);
}

TEST(MeasureCalibration, BytesText) {
  EXPECT_EQ(bytes_text(8), "8 B");
  EXPECT_EQ(bytes_text(4000), "4000 B");
  EXPECT_EQ(bytes_text(4096), "4 KiB");
  EXPECT_EQ(bytes_text(64.0 * 1024 * 1024), "64 MiB");
}

constexpr const char* kCpuinfo = R"(processor	: 0
vendor_id	: AuthenticAMD
cpu family	: 25
model name	: AMD EPYC
cpu MHz		: 2596.134
physical id	: 0
core id		: 0
flags		: fpu sse2 avx fma avx2 avx512f avx512bw

processor	: 1
vendor_id	: AuthenticAMD
cpu family	: 25
model name	: AMD EPYC
cpu MHz		: 2596.134
physical id	: 0
core id		: 1
flags		: fpu sse2 avx fma avx2 avx512f avx512bw
)";

TEST(MeasureCalibration, ParsesCpuinfo) {
  const auto cpu = parse_cpuinfo(kCpuinfo);
  EXPECT_EQ(cpu.model, "AMD EPYC");
  EXPECT_EQ(cpu.vendor, "AuthenticAMD");
  EXPECT_EQ(cpu.family, 25);
  EXPECT_DOUBLE_EQ(cpu.clock_Hz, 2596.134e6);
  EXPECT_EQ(cpu.logical_cores, 2);
  EXPECT_EQ(cpu.physical_cores, 2);
  EXPECT_TRUE(cpu.has("avx512f"));
  EXPECT_FALSE(cpu.has("avx512"));
}

TEST(MeasureCalibration, CorePeakFromVectorFeatures) {
  // Zen 4: AVX-512 on 256-bit datapaths, 2 FMA pipes: 8 lanes x 2 x 2 = 32 FLOP/cycle.
  const auto zen4 = derive_core_peak(parse_cpuinfo(kCpuinfo));
  EXPECT_EQ(zen4.vector_width_bits, 512);
  EXPECT_EQ(zen4.sp_flops_per_cycle, 32);
  EXPECT_NE(zen4.per_cycle_source.find("derived"), std::string::npos);
  // An Intel core with AVX-512: 16 lanes x 2 pipes x 2 = 64 (Skylake-SP Gold and later).
  CpuFacts intel;
  intel.vendor = "GenuineIntel";
  intel.flags = {"avx2", "fma", "avx512f"};
  EXPECT_EQ(derive_core_peak(intel).sp_flops_per_cycle, 64);
  // Haswell: AVX2 + FMA: 8 x 2 x 2 = 32, as platforms/catalog/cori-haswell.json says.
  intel.flags = {"avx2", "fma"};
  EXPECT_EQ(derive_core_peak(intel).sp_flops_per_cycle, 32);
  EXPECT_EQ(derive_core_peak(intel).vector_width_bits, 256);
}

CalibrationInput example_input() {
  CalibrationInput input;
  input.host = "testhost";
  input.date = "2024-01-01T00:00:00+0000";
  input.transport = "Open MPI v4.1.4";
  input.cpu = parse_cpuinfo(kCpuinfo);
  auto points = synthetic(0.2e-6, 8e9, 8, 4096);
  const auto above = synthetic(3e-6, 4e9, 65536, 1 << 26);
  points.insert(points.end(), above.begin(), above.end());
  input.segments = fit_alpha_beta(points, {4096, 65536});
  return input;
}

TEST(MeasureCalibration, PlatformTakesLatencyFromSmallAndBandwidthFromLargeMessages) {
  const auto platform = calibrated_platform(example_input());
  EXPECT_EQ(platform.name, "this-machine");
  EXPECT_EQ(platform.nodes.count, 2);  // the physical cores
  EXPECT_EQ(platform.nodes.cpu.cores(), 1);
  EXPECT_NEAR(platform.nodes.cpu.peak_flops, 2596.134e6 * 32, 1);
  EXPECT_NEAR(platform.network.link.latency_s, 0.2e-6, 1e-12);
  EXPECT_NEAR(platform.network.link.bandwidth_Bps / 4e9, 1.0, 1e-9);
  EXPECT_EQ(platform.network.topology.kind(), platforms::TopologyKind::kStar);
  const std::string& source = platform.network.link.sources.at("bandwidth_Bps");
  EXPECT_NE(source.find("measured: dsgd calibrate"), std::string::npos) << source;
  EXPECT_NE(source.find("testhost"), std::string::npos) << source;
  EXPECT_NE(source.find("64 KiB..32 MiB"), std::string::npos) << source;

  auto input = example_input();
  input.nodes = 16;
  EXPECT_EQ(calibrated_platform(input).nodes.count, 16);
}

TEST(MeasureCalibration, PlatformLinkCarriesEverySegment) {
  // example_input's fits: [0, 4 KiB) and [64 KiB, inf); the empty [4 KiB, 64 KiB) was left out by the fit.
  const auto link = calibrated_platform(example_input()).network.link;
  ASSERT_EQ(link.segments.size(), 2U);
  EXPECT_EQ(link.segments[0].min_bytes, 0);
  EXPECT_NEAR(link.segments[0].latency_s, 0.2e-6, 1e-12);
  EXPECT_NEAR(link.segments[0].bandwidth_Bps / 8e9, 1.0, 1e-6);
  EXPECT_EQ(link.segments[1].min_bytes, 65536);  // the fit's lower boundary, not its smallest size
  EXPECT_NEAR(link.segments[1].latency_s, 3e-6, 1e-12);
  EXPECT_NEAR(link.segments[1].bandwidth_Bps / 4e9, 1.0, 1e-9);
  EXPECT_NE(link.segments[1].sources.at("latency_s").find("alpha = intercept/2"), std::string::npos);
  EXPECT_NE(link.segments[1].sources.at("bandwidth_Bps").find("64 KiB..32 MiB"), std::string::npos);
  // Sizes between the measured segments take the segment below: 8 KiB is costed with the eager fit.
  EXPECT_DOUBLE_EQ(link.message_s(8192), link.segments[0].latency_s + 8192 / link.segments[0].bandwidth_Bps);
}

TEST(MeasureCalibration, PlatformOfAFitThroughTheOrigin) {
  auto input = example_input();
  auto points = synthetic(0.2e-6, 8e9, 8, 4096);
  const auto above = synthetic(-1e-6, 2e9, 4 << 20, 1 << 27);  // time per byte grows: negative free intercept
  points.insert(points.end(), above.begin(), above.end());
  input.segments = fit_alpha_beta(points, {4096, 4 << 20});
  ASSERT_EQ(input.segments.size(), 2U);
  ASSERT_TRUE(input.segments[1].through_origin);
  const auto link = calibrated_platform(input).network.link;
  ASSERT_EQ(link.segments.size(), 2U);
  EXPECT_EQ(link.segments[1].min_bytes, 4 << 20);
  EXPECT_EQ(link.segments[1].latency_s, 0);
  EXPECT_NE(link.segments[1].sources.at("latency_s").find("alpha = 0: the free fit's intercept was negative"),
            std::string::npos)
      << link.segments[1].sources.at("latency_s");
  EXPECT_NEAR(link.latency_s, 0.2e-6, 1e-12);  // the representative latency: the first segment's
  EXPECT_NEAR(link.bandwidth_Bps, link.segments[1].bandwidth_Bps, 1);  // the representative bandwidth: the last's
}

TEST(MeasureCalibration, SegmentWithUnboundedBandwidthIsLeftOutOfTheLink) {
  auto input = example_input();
  input.segments[0].slope_s_per_byte = 0;  // flat: no finite bandwidth
  input.segments[0].bandwidth_Bps = std::numeric_limits<double>::infinity();
  const auto link = calibrated_platform(input).network.link;
  ASSERT_EQ(link.segments.size(), 1U);
  EXPECT_EQ(link.segments[0].min_bytes, 0);  // the segment above extends down to 0
  EXPECT_NEAR(link.segments[0].latency_s, 3e-6, 1e-12);
  EXPECT_NE(link.description.find("left out"), std::string::npos) << link.description;
}

TEST(MeasureCalibration, WrittenPlatformFileValidates) {
  const auto path = std::filesystem::temp_directory_path() / ("dsgd-calibration-test-" + std::to_string(::getpid())) /
                    "this-machine.json";
  const auto platform = calibrated_platform(example_input());
  write_platform_file(path, platform);
  const auto loaded = platforms::read_platform_file(path);
  EXPECT_EQ(loaded.name, platform.name);
  EXPECT_EQ(loaded.nodes.count, platform.nodes.count);
  EXPECT_DOUBLE_EQ(loaded.network.link.latency_s, platform.network.link.latency_s);
  EXPECT_DOUBLE_EQ(loaded.network.link.bandwidth_Bps, platform.network.link.bandwidth_Bps);
  EXPECT_DOUBLE_EQ(loaded.nodes.cpu.peak_flops, platform.nodes.cpu.peak_flops);
  ASSERT_EQ(loaded.network.link.segments.size(), platform.network.link.segments.size());
  for (std::size_t i = 0; i < loaded.network.link.segments.size(); ++i) {
    EXPECT_EQ(loaded.network.link.segments[i].min_bytes, platform.network.link.segments[i].min_bytes);
    EXPECT_DOUBLE_EQ(loaded.network.link.segments[i].latency_s, platform.network.link.segments[i].latency_s);
    EXPECT_DOUBLE_EQ(loaded.network.link.segments[i].bandwidth_Bps, platform.network.link.segments[i].bandwidth_Bps);
  }
  std::filesystem::remove_all(path.parent_path());
}

TEST(MeasureCalibration, UnusableInputsAreInputErrors) {
  auto input = example_input();
  input.cpu.clock_Hz = 0;
  EXPECT_THROW(calibrated_platform(input), InputError);
  input = example_input();
  input.segments.clear();
  EXPECT_THROW(calibrated_platform(input), InputError);
  input = example_input();
  for (auto& segment : input.segments) segment.slope_s_per_byte = -1;
  EXPECT_THROW(calibrated_platform(input), InputError);
}

}  // namespace
}  // namespace dsgd::measure
