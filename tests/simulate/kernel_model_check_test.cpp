// simulate/kernel_model_check: the kernel model's time of a layer alone is the sum of its kernels' costs on the
// rank's share of the CPU; one efficiency fitted on one point reproduces that point; every point of a profile is
// predicted and summarised.
#include "simulate/kernel_model_check.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "core/error.hpp"
#include "core/layer_kernels.hpp"
#include "simulate/kernel_cost.hpp"
#include "simulate/simgrid/platform_builder.hpp"

namespace dsgd::simulate {
namespace {

using platforms::ProfilePhase;

// A 4-core CPU of 100 GFLOP/s in all, 8x16 tiles, 1 us per kernel, a 4 MB cache and a 20 GB/s memory.
platforms::Platform four_core_platform() {
  platforms::Platform platform = flat_platform(1, 1e-6, 1e9, 100e9);
  auto& cpu = platform.nodes.cpu;
  cpu.cores_per_socket = 4;
  platforms::KernelModel model;
  model.parallel_units = 4;
  model.tile_m = 8;
  model.tile_n = 16;
  model.fixed_s = 1e-6;
  model.cache = platforms::Memory{"L2", 4e6, 200e9, {}};
  model.efficiency = 0.5;
  cpu.kernels = model;
  platform.nodes.memories = {platforms::Memory{"DRAM", std::nullopt, 20e9, {}}};
  return platform;
}

TEST(KernelModelCheck, ALayerIsItsKernelsOnTheThreadsShareOfTheCpu) {
  const auto platform = four_core_platform();
  const ModelSpec lenet = build_model("lenet");
  const std::size_t conv2 = 2;
  ASSERT_EQ(lenet.layers[conv2].name, "conv2");
  const KernelMachine half = *kernel_machine(platform.nodes.cpu.kernels, 50e9, 0.5, platform.nodes.memories);
  EXPECT_EQ(half.parallel_units, 2);
  double forward = 0;
  double backward = 0;
  const LayerSpec& spec = lenet.layers[conv2];
  const double resident = layer_alone_bytes(spec, 16);
  for (const LayerKernel& kernel : layer_kernels(lenet, conv2, 16)) {
    (kernel.pass == KernelPass::kForward ? forward : backward) += kernel_cost(half, kernel, resident).seconds;
  }
  EXPECT_DOUBLE_EQ(predicted_layer_seconds(platform, lenet, conv2, ProfilePhase::kForward, 16, 2), forward);
  EXPECT_DOUBLE_EQ(predicted_layer_seconds(platform, lenet, conv2, ProfilePhase::kBackward, 16, 2), backward);
  EXPECT_LT(predicted_layer_seconds(platform, lenet, conv2, ProfilePhase::kBackwardData, 16, 2), backward);
  EXPECT_GT(predicted_layer_seconds(platform, lenet, conv2, ProfilePhase::kForward, 16, 1), forward)
      << "one core is slower than two";
}

TEST(KernelModelCheck, OneFittedPointIsReproducedAndTheOthersPredicted) {
  auto platform = four_core_platform();
  const ModelSpec lenet = build_model("lenet");
  platforms::KernelProfile measured;
  measured.source = "test";
  const platforms::ProfileKey conv2{"lenet", "conv2", ProfilePhase::kBackward, 1};
  const platforms::ProfileKey ip1{"lenet", "ip1", ProfilePhase::kForward, 1};
  measured.add(conv2, 64, 40e-3);
  measured.add(ip1, 64, 1e-3);
  measured.add(ip1, 16, 0.3e-3);
  const FittedPoint point{conv2, 64};
  const double efficiency = fit_kernel_model(platform, measured, point);
  EXPECT_GT(efficiency, 0);
  EXPECT_LE(efficiency, 1);
  EXPECT_NE(platform.nodes.cpu.kernels->sources.at("efficiency").find("FITTED"), std::string::npos);
  const auto rows = check_kernel_model(platform, measured, point);
  ASSERT_EQ(rows.size(), 3u);
  int fitted = 0;
  for (const auto& row : rows) {
    if (row.fitted) {
      ++fitted;
      EXPECT_NEAR(row.error(), 0, 1e-5);
    } else {
      EXPECT_DOUBLE_EQ(row.predicted_s,
                       predicted_layer_seconds(platform, lenet, 4, ProfilePhase::kForward, row.batch, 1));
    }
  }
  EXPECT_EQ(fitted, 1);
  const KernelCheckSummary summary = summarize(rows);
  EXPECT_EQ(summary.rows, 2) << "the fitted point is not a prediction";
  ASSERT_NE(summary.worst, nullptr);
  EXPECT_FALSE(summary.worst->fitted);
}

TEST(KernelModelCheck, SummaryCountsAndMedians) {
  std::vector<KernelCheckRow> rows;
  for (const double predicted : {1.0, 1.1, 0.8, 2.0})
    rows.push_back({"m", "l", ProfilePhase::kForward, 1, 1, 1.0, predicted});
  rows.push_back({"m", "l", ProfilePhase::kBackward, 1, 1, 1.0, 5.0, true});
  const auto summary = summarize(rows);
  EXPECT_EQ(summary.rows, 4);
  EXPECT_EQ(summary.within_15, 2) << "0% and +10%; -20% and +100% are not";
  EXPECT_NEAR(summary.median_abs_error, 0.15, 1e-12);
  EXPECT_NEAR(summary.mean_error, (0 + 0.1 - 0.2 + 1.0) / 4, 1e-12);
  EXPECT_NEAR(summary.worst->error(), 1.0, 1e-12);
}

// A point faster than the model at peak (a physical bound) is fitted and flagged, not refused; one beyond the fit's
// ceiling is refused.
TEST(KernelModelCheck, APointFasterThanPeakIsFittedAndFlagged) {
  const ModelSpec lenet = build_model("lenet");
  const platforms::ProfileKey conv2{"lenet", "conv2", ProfilePhase::kBackward, 1};
  const auto seconds_at = [&](double efficiency) {
    auto probe = four_core_platform();
    probe.nodes.cpu.kernels->efficiency = efficiency;
    return predicted_layer_seconds(probe, lenet, 2, ProfilePhase::kBackward, 64, 1);
  };
  ASSERT_LT(seconds_at(1.5), seconds_at(1.0)) << "compute-bound at batch 64: faster above peak";
  platforms::KernelProfile measured;
  measured.add(conv2, 64, seconds_at(1.5));
  auto platform = four_core_platform();
  const double efficiency = fit_kernel_model(platform, measured, {conv2, 64});
  EXPECT_NEAR(efficiency, 1.5, 1.5 * 1e-5);
  const std::string& source = platform.nodes.cpu.kernels->sources.at("efficiency");
  EXPECT_NE(source.find("FITTED"), std::string::npos) << source;
  EXPECT_NE(source.find("ABOVE PEAK: 1.5 x"), std::string::npos) << source;

  platforms::KernelProfile impossible;
  impossible.add(conv2, 64, seconds_at(kFitCeiling) / 2);
  auto refused = four_core_platform();
  EXPECT_THROW(fit_kernel_model(refused, impossible, {conv2, 64}), InputError);
  platforms::KernelProfile within;
  within.add(conv2, 64, seconds_at(0.25));
  auto below = four_core_platform();
  fit_kernel_model(below, within, {conv2, 64});
  EXPECT_EQ(below.nodes.cpu.kernels->sources.at("efficiency").find("ABOVE PEAK"), std::string::npos);
}

TEST(KernelModelCheck, RefusesACpuWithoutAModelOrMoreThreadsThanCores) {
  const ModelSpec lenet = build_model("lenet");
  auto platform = four_core_platform();
  EXPECT_THROW(predicted_layer_seconds(platform, lenet, 0, ProfilePhase::kForward, 16, 5), InputError);
  EXPECT_THROW(predicted_layer_seconds(platform, lenet, 0, ProfilePhase::kForward, 16, 0), InputError);
  platform.nodes.cpu.kernels.reset();
  EXPECT_THROW(predicted_layer_seconds(platform, lenet, 0, ProfilePhase::kForward, 16, 1), InputError);
  platforms::KernelProfile measured;
  measured.add({"lenet", "conv9", ProfilePhase::kForward, 1}, 16, 1e-3);
  EXPECT_THROW(check_kernel_model(four_core_platform(), measured), InputError) << "no such layer";
  auto fit_target = four_core_platform();
  EXPECT_THROW(fit_kernel_model(fit_target, measured, {{"lenet", "conv1", ProfilePhase::kForward, 1}, 16}), InputError)
      << "the profile lacks the point";
}

}  // namespace
}  // namespace dsgd::simulate
