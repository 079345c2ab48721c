// measure/kernel_calibration.hpp and measure/threads_pingpong.hpp: kernel efficiencies and the platform they are
// written into, on synthetic timings with known answers; the microbenchmarks themselves once, tiny, for their
// shape (never their speed).

#include "measure/kernel_calibration.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "measure/calibration.hpp"
#include "measure/threads_pingpong.hpp"
#include "platforms/catalog.hpp"
#include "platforms/loader.hpp"
#include "tests/support/error_message.hpp"
#include "tests/support/scratch_dir.hpp"

namespace dsgd::measure {
namespace {

using dsgd::testing::input_error;

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

KernelTiming timing(const std::string& kernel_class, double work, double median_s) {
  return {kernel_class, "synthetic " + kernel_class, work, 10, median_s};
}

// A calibrated platform of one-core hosts at 2 GHz x 32 FLOP/cycle = 64 GFLOP/s.
platforms::Platform synthetic_platform() {
  CalibrationInput input;
  input.host = "testhost";
  input.cpu = parse_cpuinfo(
      "processor : 0\nvendor_id : GenuineIntel\ncpu family : 6\ncpu MHz : 2000\nphysical id : 0\ncore id : 0\n"
      "flags : avx2 fma\n\nprocessor : 1\nphysical id : 0\ncore id : 1\n");
  std::vector<PingPongPoint> points;
  for (double bytes = 8; bytes < (1 << 20); bytes *= 2) points.push_back({bytes, 2 * (1e-6 + bytes / 4e9)});
  input.segments = fit_alpha_beta(points, {});
  return calibrated_platform(input);
}

KernelCalibration synthetic_calibration() {
  KernelCalibration calibration;
  calibration.kernels = {timing("conv", 32e9, 1.0),          // 32 GFLOP/s: half the peak
                         timing("elementwise", 6.4e9, 1.0),  // a tenth
                         timing("copy", 1e9, 1.0)};          // 1 GB/s of the 10 GB/s memcpy below
  calibration.memory = timing("memory", 10e9, 1.0);
  return calibration;
}

// synthetic_calibration() run in 2 copies at once (every core of synthetic_platform() busy), and the same kernels
// timed in one copy alone, faster: conv at 40 GFLOP/s (0.625 of the peak), elementwise at 0.2.
KernelCalibration busy_calibration() {
  KernelCalibration busy = synthetic_calibration();
  busy.concurrent = 2;
  return busy;
}

KernelCalibration alone_calibration() {
  KernelCalibration alone;
  alone.kernels = {timing("conv", 40e9, 1.0), timing("elementwise", 12.8e9, 1.0)};
  for (auto& kernel : alone.kernels) kernel.what += " alone";
  alone.memory = timing("memory", 12e9, 1.0);
  alone.concurrent = 1;
  alone.others_cores = 0.5;
  return alone;
}

TEST(MeasureKernelCalibration, EfficiencyIsTheAchievedRateOverThePeak) {
  EXPECT_DOUBLE_EQ(kernel_efficiency(timing("conv", 3e9, 0.1), 60e9), 0.5) << "expectation 30 / 60 GFLOP/s";
  EXPECT_DOUBLE_EQ(kernel_efficiency(timing("copy", 1e9, 0.5), 8e9), 0.25) << "expectation 2 / 8 GB/s";
  // Within 5% above the peak is noise: counted as the peak.
  EXPECT_DOUBLE_EQ(kernel_efficiency(timing("gemm", 1.03e9, 1.0), 1e9), 1.0);
}

TEST(MeasureKernelCalibration, AMeasuredMeanIsWhatIsCharged) {
  // A long upper tail: the mean above the median. A run of many iterations pays the mean.
  auto tailed = timing("conv", 3e9, 0.1);
  tailed.mean_s = 0.125;
  EXPECT_DOUBLE_EQ(tailed.charged_s(), 0.125);
  EXPECT_DOUBLE_EQ(kernel_efficiency(tailed, 60e9), 0.4) << "expectation 24 / 60 GFLOP/s at the mean";
  auto platform = synthetic_platform();
  auto calibration = synthetic_calibration();
  calibration.kernels[0].mean_s = 2 * calibration.kernels[0].median_s;  // conv
  calibration.memory.mean_s = 10 * calibration.memory.median_s;         // one repetition preempted
  apply_kernel_calibration(platform, calibration, "testhost, today");
  auto untailed = synthetic_platform();
  apply_kernel_calibration(untailed, synthetic_calibration(), "testhost, today");
  EXPECT_DOUBLE_EQ(platform.nodes.cpu.efficiency.of("conv"), untailed.nodes.cpu.efficiency.of("conv") / 2);
  EXPECT_DOUBLE_EQ(platform.nodes.memories[0].bandwidth_Bps, untailed.nodes.memories[0].bandwidth_Bps)
      << "a bandwidth is the median's rate";
  EXPECT_TRUE(contains(platform.nodes.cpu.efficiency.sources.at("conv"), "mean 2000 ms (median 1000 ms)"))
      << platform.nodes.cpu.efficiency.sources.at("conv");
}

TEST(MeasureKernelCalibration, PersistenceIsTheLag1AutocorrelationOfWhatSetsCopiesApart) {
  // One copy: slow and fast in runs of 3 repetitions, then alternating each repetition.
  const std::vector<double> runs{1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2};
  EXPECT_GT(persistence({runs}), 0.4);
  const std::vector<double> alternating{1, 2, 1, 2, 1, 2, 1, 2};
  EXPECT_LT(persistence({alternating}), -0.8);
  // Two copies that slow down together: nothing sets them apart, whatever the common drift.
  const std::vector<double> twice = {2, 2, 2, 4, 4, 4, 2, 2, 2, 4, 4, 4};
  EXPECT_EQ(persistence({runs, twice}), 0.0) << "no difference between the copies";
  // Two copies where one is the slower for three repetitions at a time: the difference persists.
  const std::vector<double> other{2, 2, 2, 1, 1, 1, 2, 2, 2, 1, 1, 1};
  EXPECT_GT(persistence({runs, other}), 0.4);
  EXPECT_LT(persistence({alternating, {2, 1, 2, 1, 2, 1, 2, 1}}), -0.8);
  EXPECT_EQ(persistence({{1.0, 2.0}}), 0.0) << "too few repetitions";
  EXPECT_EQ(persistence({}), 0.0);
}

TEST(MeasureKernelCalibration, ImpossibleRatesAndPeaksAreRejected) {
  EXPECT_TRUE(contains(input_error([] { kernel_efficiency(timing("conv", 2e9, 1.0), 1e9); }), "the peak is wrong"));
  EXPECT_TRUE(contains(input_error([] { kernel_efficiency(timing("conv", 1e9, 1.0), 0); }), "not > 0"));
  EXPECT_TRUE(contains(input_error([] { kernel_efficiency(timing("conv", 1e9, 0), 1e9); }), "no positive work"));
}

TEST(MeasureKernelCalibration, PlatformGetsEfficienciesMemoryAndSources) {
  auto platform = synthetic_platform();
  ASSERT_DOUBLE_EQ(platform.nodes.cpu.peak_flops, 64e9);
  apply_kernel_calibration(platform, synthetic_calibration(), "testhost, today");
  const auto& efficiency = platform.nodes.cpu.efficiency;
  EXPECT_DOUBLE_EQ(efficiency.of("conv"), 0.5);
  EXPECT_DOUBLE_EQ(efficiency.of("elementwise"), 0.1);
  EXPECT_DOUBLE_EQ(efficiency.of("copy"), 0.1) << "copy is a fraction of the measured memory bandwidth";
  EXPECT_DOUBLE_EQ(efficiency.of("gemm"), 1.0) << "not measured: the schema's default";
  ASSERT_EQ(platform.nodes.memories.size(), 1U);
  EXPECT_EQ(platform.nodes.memories[0].name, kMeasuredMemoryName);
  EXPECT_DOUBLE_EQ(platform.nodes.memories[0].bandwidth_Bps, 10e9);
  const std::string& source = efficiency.sources.at("conv");
  EXPECT_TRUE(contains(source,
                       "measured by dsgd calibrate on testhost, today: synthetic conv, 10 repetitions, "
                       "mean 1000 ms (median 1000 ms)"))
      << source;

  // Applied twice (dsgd calibrate --kernels-only), the memory is replaced, not added.
  apply_kernel_calibration(platform, synthetic_calibration(), "testhost, later");
  EXPECT_EQ(platform.nodes.memories.size(), 1U);
}

TEST(MeasureKernelCalibration, AKernelAboveTheNominalPeakRaisesTheClock) {
  auto platform = synthetic_platform();  // 2 GHz x 32 FLOP/cycle = 64 GFLOP/s
  auto calibration = synthetic_calibration();
  calibration.kernels.push_back(timing("gemm", 96e9, 1.0));  // 96 GFLOP/s: the core ran at 3 GHz at least
  apply_kernel_calibration(platform, calibration, "here");
  EXPECT_DOUBLE_EQ(platform.nodes.cpu.clock_Hz, 3e9) << "expectation 96e9 / 32";
  EXPECT_DOUBLE_EQ(platform.nodes.cpu.peak_flops, 96e9);
  EXPECT_DOUBLE_EQ(platform.nodes.cpu.efficiency.of("gemm"), 1.0);
  EXPECT_DOUBLE_EQ(platform.nodes.cpu.efficiency.of("conv"), 1.0 / 3) << "expectation 32 / 96 GFLOP/s";
  EXPECT_TRUE(contains(platform.nodes.cpu.sources.at("clock_Hz"),
                       "raised from the nominal 2e+09 Hz because class "
                       "'gemm' ran at 96 GFLOP/s"))
      << platform.nodes.cpu.sources.at("clock_Hz");
}

// A memcpy slowed by another program while it ran, then a copy kernel faster than it: the bandwidth is the least
// that explains the copy, not an error (a calibration on a busy machine failed here before).
TEST(MeasureKernelCalibration, ACopyAboveTheMeasuredMemcpyRaisesTheBandwidth) {
  auto platform = synthetic_platform();
  auto calibration = synthetic_calibration();
  calibration.kernels[2] = timing("copy", 25e9, 1.0);  // 25 GB/s over a memcpy measured at 10 GB/s
  apply_kernel_calibration(platform, calibration, "here");
  ASSERT_EQ(platform.nodes.memories.size(), 1U);
  EXPECT_DOUBLE_EQ(platform.nodes.memories[0].bandwidth_Bps, 25e9) << "expectation: the copy kernel's 25 GB/s";
  EXPECT_DOUBLE_EQ(platform.nodes.cpu.efficiency.of("copy"), 1.0);
  const std::string& source = platform.nodes.memories[0].sources.at("bandwidth_Bps");
  EXPECT_TRUE(contains(source, "raised from 10 GB/s to the copy kernel's 25 GB/s")) << source;
}

TEST(MeasureKernelCalibration, TheTimingAloneMakesASharedChip) {
  auto platform = synthetic_platform();
  ASSERT_EQ(platform.nodes.count, 2) << "a host per core of the synthetic cpuinfo";
  const auto alone = alone_calibration();
  apply_kernel_calibration(platform, busy_calibration(), "testhost, today", &alone);
  ASSERT_TRUE(platform.nodes.shared_chip.has_value());
  const auto& chip = *platform.nodes.shared_chip;
  EXPECT_EQ(chip.nodes, 2) << "every host on the one chip";
  EXPECT_EQ(chip.cores, 2) << "the copies that ran at once";
  EXPECT_EQ(chip.waiting_share, 0.0) << "not measured here";
  EXPECT_DOUBLE_EQ(chip.alone.of("conv"), 0.625) << "expectation 40 / 64 GFLOP/s";
  EXPECT_DOUBLE_EQ(chip.alone.of("elementwise"), 0.2) << "expectation 12.8 / 64 GFLOP/s";
  EXPECT_EQ(chip.alone.by_class.count("copy"), 0U) << "not timed alone: not listed";
  // The busy efficiencies are the busy timing's, and the memory stays the busy memcpy's.
  EXPECT_DOUBLE_EQ(platform.nodes.cpu.efficiency.of("conv"), 0.5);
  EXPECT_DOUBLE_EQ(platform.nodes.memories[0].bandwidth_Bps, 10e9);
  // Every number has its source: the alone ones cite the timing alone and its load.
  const std::string& conv = chip.alone.sources.at("conv");
  EXPECT_TRUE(contains(conv, "measured by dsgd calibrate on testhost, today: synthetic conv alone, 10 repetitions"))
      << conv;
  EXPECT_TRUE(contains(conv, "kept 0.50 cores busy")) << conv;
  EXPECT_TRUE(contains(conv, "40 GFLOP/s over the peak 64 GFLOP/s")) << conv;
  EXPECT_TRUE(contains(platform.nodes.cpu.efficiency.sources.at("conv"), "kept 0.00 cores busy"));
  EXPECT_TRUE(contains(chip.sources.at("nodes"), "testhost, today")) << chip.sources.at("nodes");
  EXPECT_TRUE(contains(chip.sources.at("cores"), "2 copies")) << chip.sources.at("cores");
  EXPECT_FALSE(chip.sources.contains("waiting_share"));
  // And the platform is one the loader takes.
  EXPECT_NO_THROW(platforms::parse_platform(platforms::to_json(platform), "calibrated.json"));
}

TEST(MeasureKernelCalibration, WithoutATimingAloneThereIsNoSharedChip) {
  auto platform = synthetic_platform();
  apply_kernel_calibration(platform, busy_calibration(), "here");
  EXPECT_FALSE(platform.nodes.shared_chip.has_value());
  // Calibrated again without one (--kernels-only on a one-core machine), an earlier chip goes.
  const auto alone = alone_calibration();
  apply_kernel_calibration(platform, busy_calibration(), "here", &alone);
  ASSERT_TRUE(platform.nodes.shared_chip.has_value());
  apply_kernel_calibration(platform, busy_calibration(), "here");
  EXPECT_FALSE(platform.nodes.shared_chip.has_value());
}

TEST(MeasureKernelCalibration, ATimingAloneOfSeveralCopiesIsRejected) {
  auto platform = synthetic_platform();
  auto alone = alone_calibration();
  alone.concurrent = 2;
  EXPECT_TRUE(contains(input_error([&] { apply_kernel_calibration(platform, busy_calibration(), "here", &alone); }),
                       "the timing alone ran 2 copies at once, not 1"));
}

TEST(MeasureKernelCalibration, AKernelAloneAboveTheNominalPeakRaisesTheClock) {
  auto platform = synthetic_platform();  // 2 GHz x 32 FLOP/cycle = 64 GFLOP/s
  auto alone = alone_calibration();
  alone.kernels[0] = timing("conv", 96e9, 1.0);  // 96 GFLOP/s alone: the core boosted to 3 GHz at least
  alone.kernels[0].what = "synthetic conv alone";
  apply_kernel_calibration(platform, busy_calibration(), "here", &alone);
  EXPECT_DOUBLE_EQ(platform.nodes.cpu.clock_Hz, 3e9) << "expectation 96e9 / 32";
  EXPECT_DOUBLE_EQ(platform.nodes.shared_chip->alone.of("conv"), 1.0);
  EXPECT_DOUBLE_EQ(platform.nodes.cpu.efficiency.of("conv"), 1.0 / 3) << "expectation 32 / 96 GFLOP/s, busy";
  EXPECT_DOUBLE_EQ(platform.nodes.shared_chip->alone.of("elementwise"), 12.8 / 96);
  const std::string& clock = platform.nodes.cpu.sources.at("clock_Hz");
  EXPECT_TRUE(contains(clock,
                       "class 'conv' ran at 96 GFLOP/s (measured by dsgd calibrate on here: synthetic conv "
                       "alone"))
      << clock;
  EXPECT_TRUE(contains(clock, "kept 0.50 cores busy")) << clock << ": the load of the timing alone";
}

using MeasureKernelCalibrationFile = dsgd::testing::ScratchDirTest;

TEST_F(MeasureKernelCalibrationFile, WrittenPlatformReadsBackWithItsEfficiencies) {
  auto platform = synthetic_platform();
  auto calibration = synthetic_calibration();
  calibration.kernels.push_back(timing("gemm", 96e9, 1.0));  // a raised clock must read back too
  apply_kernel_calibration(platform, calibration, "testhost, today");
  const auto path = dir_ / "calibrated.json";
  write_platform_file(path, platform);
  const auto read = platforms::load_platform(path.string());
  EXPECT_DOUBLE_EQ(read.nodes.cpu.efficiency.of("conv"), 1.0 / 3);
  EXPECT_DOUBLE_EQ(read.nodes.cpu.clock_Hz, 3e9);
  EXPECT_DOUBLE_EQ(read.nodes.cpu.efficiency.of("copy"), 0.1);
  EXPECT_EQ(read.nodes.cpu.efficiency.sources.at("elementwise"),
            platform.nodes.cpu.efficiency.sources.at("elementwise"));
  ASSERT_EQ(read.nodes.memories.size(), 1U);
  EXPECT_DOUBLE_EQ(read.nodes.memories[0].bandwidth_Bps, 10e9);
}

TEST_F(MeasureKernelCalibrationFile, WrittenSharedChipReadsBack) {
  auto platform = synthetic_platform();
  const auto alone = alone_calibration();
  apply_kernel_calibration(platform, busy_calibration(), "testhost, today", &alone);
  const auto path = dir_ / "calibrated.json";
  write_platform_file(path, platform);
  const auto read = platforms::load_platform(path.string());
  ASSERT_TRUE(read.nodes.shared_chip.has_value());
  EXPECT_EQ(read.nodes.shared_chip->nodes, 2);
  EXPECT_EQ(read.nodes.shared_chip->cores, 2);
  EXPECT_DOUBLE_EQ(read.nodes.shared_chip->alone.of("conv"), 0.625);
  EXPECT_EQ(read.nodes.shared_chip->alone.sources.at("conv"), platform.nodes.shared_chip->alone.sources.at("conv"));
  EXPECT_EQ(read.nodes.shared_chip->sources, platform.nodes.shared_chip->sources);
}

TEST(MeasureKernelCalibration, HostsWithMoreCoresThanTheKernelsUsedAreRejected) {
  auto platform = synthetic_platform();
  platform.nodes.cpu.cores_per_socket = 4;
  EXPECT_TRUE(contains(input_error([&] { apply_kernel_calibration(platform, synthetic_calibration(), "here"); }),
                       "have 4 cores but the kernels ran on 1 thread"));
}

TEST(MeasureKernelCalibration, BadBenchmarkOptionsAreRejected) {
  KernelBenchOptions options;
  options.batch = 0;
  EXPECT_TRUE(contains(input_error([&] { measure_kernels(options); }), "batch must be at least 1"));
  options = {};
  options.concurrent = 0;
  EXPECT_TRUE(contains(input_error([&] { measure_kernels(options); }), "concurrent copies"));
  options = {};
  options.model = "lenet5";
  EXPECT_TRUE(
      contains(dsgd::testing::error_of<UnknownNameError>([&] { measure_kernels(options); }), "valid values are"));
}

// LeNet's microbenchmarks as small as they get: batch 2, 2 repetitions and no warm-up, 16 images; `copies` copies.
KernelBenchOptions tiny_lenet(int copies) {
  KernelBenchOptions options;
  options.batch = 2;
  options.repetitions = 2;
  options.warmup = 0;
  options.dataset_images = 16;
  options.concurrent = copies;
  return options;
}

TEST(MeasureKernelCalibration, TinyRealRunTimesEveryClassOfLenet) {
  const auto calibration = measure_kernels(tiny_lenet(2));
  std::vector<std::string> classes;
  for (const auto& kernel : calibration.kernels) {
    classes.push_back(kernel.kernel_class);
    EXPECT_GT(kernel.median_s, 0) << kernel.kernel_class;
    EXPECT_EQ(kernel.repetitions, 4) << "2 copies x 2 repetitions";
    EXPECT_TRUE(contains(kernel.what, "2 copies at once")) << kernel.what;
    EXPECT_GE(kernel.log_spread, 0) << kernel.kernel_class;
    EXPECT_GE(kernel.slowest_ratio, 1) << "the slowest of 2 copies is no faster than their mean";
    EXPECT_GT(kernel.mean_s, 0) << kernel.kernel_class;
    EXPECT_EQ(kernel.persistence, 0) << "2 repetitions are too few to tell";
    if (kernel.kernel_class != "gemm") {
      EXPECT_TRUE(contains(kernel.what, "in an iteration's order")) << kernel.what;
    }
  }
  EXPECT_EQ(classes, (std::vector<std::string>{"gemm", "copy", "conv", "elementwise"}));
  EXPECT_EQ(calibration.memory.kernel_class, "memory");
  EXPECT_DOUBLE_EQ(calibration.memory.work, 2.0 * 431080 * 4) << "LeNet's parameter vector, read and written";
  // One repetition of the iteration: batch load, forward+backward, update and memcpy (not the gemm timed alone).
  double iteration_s = calibration.memory.mean_s;
  for (const auto& kernel : calibration.kernels) iteration_s += kernel.kernel_class == "gemm" ? 0 : kernel.mean_s;
  EXPECT_NEAR(calibration.iteration_s, iteration_s, 1e-12 * iteration_s);
}

TEST(MeasureKernelCalibration, CopiesTakingTurnsAreATimingAlone) {
  auto options = tiny_lenet(3);
  options.turns = true;
  const auto alone = measure_kernels(options);
  EXPECT_EQ(alone.concurrent, 1) << "one copy computes at a time";
  ASSERT_EQ(alone.kernels.size(), 4U);
  for (const auto& kernel : alone.kernels) {
    EXPECT_EQ(kernel.repetitions, 6) << "3 copies x 2 repetitions";
    EXPECT_GT(kernel.median_s, 0) << kernel.kernel_class;
    EXPECT_TRUE(contains(kernel.what, "3 copies on their own threads taking turns")) << kernel.what;
    EXPECT_EQ(kernel.slowest_ratio, 0) << "no copies at once, no slowest of them";
  }
  // It is what a shared chip's rate alone is made of.
  auto platform = synthetic_platform();
  apply_kernel_calibration(platform, measure_kernels(tiny_lenet(1)), "test", &alone);
  ASSERT_TRUE(platform.nodes.shared_chip.has_value());
  EXPECT_TRUE(contains(platform.nodes.shared_chip->alone.sources.at("conv"), "taking turns"));
}

TEST(MeasureKernelCalibration, LogSpreadIsTheInterquartileRangeOfTheLogsOver1349) {
  // Five samples: the quartiles are the 2nd and 4th exactly, whatever the extremes.
  const double q3 = 2 * std::exp(1.349);
  EXPECT_NEAR(log_spread({100.0, 2.0, 3.0, q3, 1e-3}), 1.0, 1e-12);
  EXPECT_NEAR(log_spread({2.0, 2.0, 2.0, 2.0}), 0.0, 1e-12) << "no spread";
  // Interpolated: quartiles of {1, 2, 4, 8} at positions 0.75 and 2.25: 1.75 and 5.
  EXPECT_NEAR(log_spread({8.0, 4.0, 2.0, 1.0}), std::log(5.0 / 1.75) / 1.349, 1e-12);
  EXPECT_EQ(log_spread({1.0, 2.0, 3.0}), 0.0) << "too few samples";
}

TEST(MeasureKernelCalibration, TheNoiseIsTheForwardBackwardsSpread) {
  auto platform = synthetic_platform();
  auto calibration = synthetic_calibration();
  calibration.kernels[0].log_spread = 0.05;  // conv
  calibration.kernels[1].log_spread = 0.5;   // elementwise: not the noise's
  apply_kernel_calibration(platform, calibration, "testhost, today");
  EXPECT_EQ(platform.noise.distribution, platforms::NoiseDistribution::kLognormal);
  EXPECT_DOUBLE_EQ(platform.noise.spread, 0.05);
  EXPECT_TRUE(contains(platform.noise.sources.at("sigma"), "synthetic conv")) << platform.noise.sources.at("sigma");
  const auto reloaded = platforms::parse_platform(platforms::to_json(platform), "calibrated.json");
  EXPECT_DOUBLE_EQ(reloaded.noise.spread, 0.05);

  // Calibrated again with no spread measured, the earlier noise goes.
  calibration.kernels[0].log_spread = 0;
  apply_kernel_calibration(platform, calibration, "testhost, later");
  EXPECT_EQ(platform.noise.distribution, platforms::NoiseDistribution::kNone);
  EXPECT_TRUE(contains(platform.noise.description, "not measured")) << platform.noise.description;
}

TEST(MeasureKernelCalibration, SigmaForTheSlowestInvertsTheExpectedMaximum) {
  // Two lognormal factors of mean 1: E[max] = 2 Phi(sigma / sqrt 2) in closed form.
  const auto slowest_of_two = [](double sigma) { return 2 * 0.5 * std::erfc(-sigma / 2); };
  for (const double sigma : {0.01, 0.1, 0.5}) {
    EXPECT_NEAR(lognormal_sigma_for_slowest(slowest_of_two(sigma), 2), sigma, 1e-6) << sigma;
  }
  // The slowest of more copies is slower for the same sigma: the same ratio needs less of it.
  EXPECT_LT(lognormal_sigma_for_slowest(slowest_of_two(0.1), 8), 0.1 / 2);
  EXPECT_EQ(lognormal_sigma_for_slowest(1.0, 2), 0.0);
  EXPECT_EQ(lognormal_sigma_for_slowest(0.9, 2), 0.0);
  EXPECT_EQ(lognormal_sigma_for_slowest(100.0, 2), 2.0) << "capped";
  EXPECT_TRUE(contains(input_error([] { lognormal_sigma_for_slowest(1.1, 1); }), "slowest of 1 copies"));
}

TEST(MeasureKernelCalibration, PersistenceGivesTheNoiseACorrelationTime) {
  auto platform = synthetic_platform();
  auto calibration = busy_calibration();                                 // 2 copies
  calibration.kernels[0].slowest_ratio = 2 * 0.5 * std::erfc(-0.1 / 2);  // sigma 0.1
  calibration.kernels[0].persistence = 0.5;
  calibration.iteration_s = 0.02;
  apply_kernel_calibration(platform, calibration, "testhost, today");
  EXPECT_NEAR(platform.noise.correlation_s, -0.02 / std::log(0.5), 1e-12) << "exp(-20 ms / tau) = 0.5";
  EXPECT_TRUE(contains(platform.noise.sources.at("correlation_s"), "fitted to the microbenchmark"));
  EXPECT_DOUBLE_EQ(platforms::parse_platform(platforms::to_json(platform), "c.json").noise.correlation_s,
                   platform.noise.correlation_s);

  // No persistence (or none measured): independent draws, and a recalibration drops an earlier correlation time.
  calibration.kernels[0].persistence = -0.1;
  apply_kernel_calibration(platform, calibration, "testhost, later");
  EXPECT_EQ(platform.noise.correlation_s, 0);
  EXPECT_EQ(platform.noise.sources.count("correlation_s"), 0U);
}

TEST(MeasureKernelCalibration, SeveralCopiesFitTheNoiseToTheSlowestCopy) {
  auto platform = synthetic_platform();
  auto calibration = busy_calibration();  // 2 copies
  calibration.kernels[0].log_spread = 0.5;
  calibration.kernels[0].slowest_ratio = 2 * 0.5 * std::erfc(-0.1 / 2);  // sigma 0.1
  apply_kernel_calibration(platform, calibration, "testhost, today");
  EXPECT_NEAR(platform.noise.spread, 0.1, 1e-6) << "the slowest copy's, not the log spread";
  EXPECT_TRUE(contains(platform.noise.sources.at("sigma"), "fitted to the microbenchmark"))
      << platform.noise.sources.at("sigma");
}

TEST(MeasureThreadsPingPong, OnePointPerPowerOfTwo) {
  ThreadsPingPongOptions options{.min_bytes = 8, .max_bytes = 1024, .rounds = 1};
  const auto points = threads_pingpong(options);
  ASSERT_EQ(points.size(), 8U);
  EXPECT_EQ(points.front().bytes, 8);
  EXPECT_EQ(points.back().bytes, 1024);
  for (const auto& point : points) EXPECT_GT(point.round_trip_s, 0);
  options.rounds = 0;
  EXPECT_TRUE(contains(input_error([&] { threads_pingpong(options); }), "rounds must be at least 1"));
}

TEST(MeasureThreadsPingPong, BesideComputingRanksTheyStopWhenThePairEnds) {
  ThreadsPingPongOptions options{.min_bytes = 8, .max_bytes = 64, .rounds = 1};
  options.busy_ranks = 2;
  const auto points = threads_pingpong(options);  // returns only once the computing threads stopped
  ASSERT_EQ(points.size(), 4U);
  for (const auto& point : points) EXPECT_GT(point.round_trip_s, 0);
  options.mean = true;
  for (const auto& point : threads_pingpong(options)) EXPECT_GT(point.round_trip_s, 0);
  options.busy_ranks = -1;
  EXPECT_TRUE(contains(input_error([&] { threads_pingpong(options); }), "busy ranks must be >= 0"));
}

TEST(MeasureThreadsPingPong, FromColdBuffers) {
  const ThreadsPingPongOptions options{.min_bytes = 1024, .max_bytes = 65536, .rounds = 1, .pool_bytes = 1 << 20};
  const auto points = threads_pingpong(options);
  ASSERT_EQ(points.size(), 7U);
  for (const auto& point : points) EXPECT_GT(point.round_trip_s, 0);
}

}  // namespace
}  // namespace dsgd::measure
