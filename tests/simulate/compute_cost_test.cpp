// simulate/compute_cost: a step's layer kernels priced by a kernel profile where it covers them; a compute step's
// time on a shared chip (platforms::SharedChip) against the closed form
//   alone + (busy - alone) x (min(k, cores) - 1) / (cores - 1),   x k / cores beyond the cores,
// the chip's load k, and the sites place_ranks puts on chips. Times are round numbers
// (tests/support/shared_chip_platform.hpp), so most checks are exact.

#include "simulate/compute_cost.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/error.hpp"
#include "core/layer_kernels.hpp"
#include "core/model_zoo.hpp"
#include "platforms/kernel_profile.hpp"
#include "simulate/simgrid/platform_builder.hpp"
#include "tests/support/shared_chip_platform.hpp"

namespace dsgd::simulate {
namespace {

using testing::kAloneS;
using testing::kBusyS;
using testing::kGemmS;
using testing::shared_chip_platform;

platforms::Noise lognormal(double sigma, double correlation_s) {
  platforms::Noise noise;
  noise.distribution = platforms::NoiseDistribution::kLognormal;
  noise.spread = sigma;
  noise.correlation_s = correlation_s;
  return noise;
}

TEST(SimulateComputeCost, NoiseWithoutACorrelationTimeDrawsEachStepAlone) {
  ComputeNoise noise(lognormal(0.1, 0), 7);
  for (std::uint64_t step = 0; step < 5; ++step) {
    EXPECT_EQ(noise.factor(3, step, 0.01 * static_cast<double>(step)), noise_factor(noise.noise(), 7, 3, step));
  }
  EXPECT_EQ(ComputeNoise(platforms::Noise{}, 7).factor(0, 0, 0), 1.0) << "no noise";
}

TEST(SimulateComputeCost, PersistentNoiseKeepsANodesSpeedForItsCorrelationTime) {
  // Steps 1 ms apart: with a correlation time of 1000 s the factor barely moves; with 1 us it is a fresh draw
  // each step. Either way the factors have mean 1 and the distribution's spread across nodes.
  ComputeNoise slow(lognormal(0.2, 1000), 11);
  ComputeNoise fast(lognormal(0.2, 1e-6), 11);
  double largest_step = 0;
  double fast_largest_step = 0;
  double previous = slow.factor(0, 0, 0);
  double fast_previous = fast.factor(0, 0, 0);
  EXPECT_EQ(previous, fast_previous) << "the first step is the stationary draw";
  for (std::uint64_t step = 1; step < 200; ++step) {
    const double at_s = 1e-3 * static_cast<double>(step);
    const double factor = slow.factor(0, step, at_s);
    const double fast_factor = fast.factor(0, step, at_s);
    largest_step = std::max(largest_step, std::abs(std::log(factor / previous)));
    fast_largest_step = std::max(fast_largest_step, std::abs(std::log(fast_factor / fast_previous)));
    previous = factor;
    fast_previous = fast_factor;
  }
  EXPECT_LT(largest_step, 0.01);  // 0.2 x sqrt(1 - exp(-2e-6)) x a few sigma
  EXPECT_GT(fast_largest_step, 0.2);

  // Across many nodes (each a stationary start), the mean factor is 1 and log(factor) has sigma 0.2.
  double sum = 0;
  double sum_log2 = 0;
  constexpr int kNodes = 20000;
  for (int node = 0; node < kNodes; ++node) {
    const double factor = slow.factor(node, 0, 0.5);
    sum += factor;
    sum_log2 += std::pow(std::log(factor) + 0.02, 2);  // log(factor) has mean -sigma^2 / 2
  }
  EXPECT_NEAR(sum / kNodes, 1.0, 0.01);
  EXPECT_NEAR(std::sqrt(sum_log2 / kNodes), 0.2, 0.01);
}

TEST(SimulateComputeCost, PersistentNoiseIsSharedByANodesRanksAndRepeats) {
  ComputeNoise noise(lognormal(0.2, 0.01), 5);
  ComputeNoise again(lognormal(0.2, 0.01), 5);
  for (std::uint64_t step = 0; step < 20; ++step) {
    const double at_s = 0.004 * static_cast<double>(step);
    const double factor = noise.factor(2, step, at_s);
    EXPECT_EQ(again.factor(2, step, at_s), factor) << "same seed, same calls: same factors";
    EXPECT_EQ(noise.factor(2, step, at_s), factor) << "a second rank of the node, at the same time";
  }
  EXPECT_THROW(noise.factor(-1, 0, 0), InternalError);
}

TEST(SimulateComputeCost, SharedChipEndpoints) {
  EXPECT_DOUBLE_EQ(shared_chip_seconds(kAloneS, kBusyS, 1, 2), kAloneS) << "expectation: alone with one rank busy";
  EXPECT_DOUBLE_EQ(shared_chip_seconds(kAloneS, kBusyS, 2, 2), kBusyS) << "expectation: busy with every core busy";
  EXPECT_DOUBLE_EQ(shared_chip_seconds(kAloneS, kBusyS, 4, 2), 2 * kBusyS) << "expectation: twice the ranks, turns";
  EXPECT_DOUBLE_EQ(shared_chip_seconds(kAloneS, kBusyS, 1, 4), kAloneS);
  EXPECT_DOUBLE_EQ(shared_chip_seconds(kAloneS, kBusyS, 4, 4), kBusyS);
  EXPECT_DOUBLE_EQ(shared_chip_seconds(kAloneS, kBusyS, 8, 4), 2 * kBusyS);
  // One core: always busy (there is no "others idle" to gain from), in turns beyond it.
  EXPECT_DOUBLE_EQ(shared_chip_seconds(kAloneS, kBusyS, 1, 1), kBusyS);
  EXPECT_DOUBLE_EQ(shared_chip_seconds(kAloneS, kBusyS, 3, 1), 3 * kBusyS);
}

TEST(SimulateComputeCost, SharedChipInterpolatesAFractionalLoad) {
  // 1.5 ranks' worth on 2 cores: half way from alone to busy.
  EXPECT_DOUBLE_EQ(shared_chip_seconds(kAloneS, kBusyS, 1.5, 2), 1.8) << "expectation 1.6 + 0.4 x 0.5";
  // 2.5 on 4 cores: 1.5 of the 3 other cores busy.
  EXPECT_DOUBLE_EQ(shared_chip_seconds(kAloneS, kBusyS, 2.5, 4), 1.8) << "expectation 1.6 + 0.4 x 1.5 / 3";
  // 2.5 on 2 cores: busy, in turns of 2.5 / 2.
  EXPECT_DOUBLE_EQ(shared_chip_seconds(kAloneS, kBusyS, 2.5, 2), 2.5) << "expectation 2 x 2.5 / 2";
}

TEST(SimulateComputeCost, SharedChipIsMonotonicInTheLoad) {
  for (const int cores : {1, 2, 3, 8}) {
    SCOPED_TRACE(std::to_string(cores) + " cores");
    double previous = shared_chip_seconds(kAloneS, kBusyS, 1, cores);
    for (double load = 1.25; load <= 3.0 * cores; load += 0.25) {
      const double seconds = shared_chip_seconds(kAloneS, kBusyS, load, cores);
      EXPECT_GT(seconds, previous) << "load " << load;  // alone < busy: every extra share of a core costs
      previous = seconds;
    }
  }
}

TEST(SimulateComputeCost, SharedChipRefusesALoadBelowOne) {
  // The step's own rank is part of the load: below 1 is a bug in the caller.
  EXPECT_THROW(shared_chip_seconds(kAloneS, kBusyS, 0.5, 2), InternalError);
  EXPECT_THROW(shared_chip_seconds(kAloneS, kBusyS, 1, 0), InternalError);
}

TEST(SimulateComputeCost, ChipLoadCountsTheWaitingRanksShare) {
  const auto sites = place_ranks(shared_chip_platform(3, 3, 2, 0.5), 3);
  ASSERT_EQ(sites[0].chip_ranks, 3);
  EXPECT_DOUBLE_EQ(chip_load(sites[0], 1), 2.0) << "expectation 1 + 0.5 x 2";
  EXPECT_DOUBLE_EQ(chip_load(sites[0], 2), 2.5) << "expectation 2 + 0.5 x 1";
  EXPECT_DOUBLE_EQ(chip_load(sites[0], 3), 3.0);
  const auto idle = place_ranks(shared_chip_platform(3, 3, 2, 0), 3);
  EXPECT_DOUBLE_EQ(chip_load(idle[0], 1), 1.0) << "waiting ranks that take nothing";
  EXPECT_DOUBLE_EQ(chip_load(idle[0], 2), 2.0);
}

TEST(SimulateComputeCost, PlaceRanksPutsConsecutiveNodesOnAChip) {
  const auto sites = place_ranks(shared_chip_platform(5, 2, 2, 0.25), 5);
  const std::vector<int> chips = {sites[0].chip, sites[1].chip, sites[2].chip, sites[3].chip, sites[4].chip};
  EXPECT_EQ(chips, (std::vector<int>{0, 0, 1, 1, 2}));
  EXPECT_EQ(sites[0].chip_ranks, 2);
  EXPECT_EQ(sites[4].chip_ranks, 1) << "the last chip holds one rank";
  EXPECT_EQ(sites[3].chip_cores, 2);
  EXPECT_DOUBLE_EQ(sites[3].chip_waiting_share, 0.25);
  // Ranks counted are the ones placed, not the chip's nodes.
  EXPECT_EQ(place_ranks(shared_chip_platform(4, 4, 2), 3)[0].chip_ranks, 3);
  // No shared chip: no chip.
  auto plain = shared_chip_platform(2, 2, 2);
  plain.nodes.shared_chip.reset();
  EXPECT_EQ(place_ranks(plain, 2)[1].chip, -1);
}

TEST(SimulateComputeCost, AloneUsesTheAloneEfficiencyAndFallsBackToBusy) {
  const auto sites = place_ranks(shared_chip_platform(2, 2, 2), 2);
  EXPECT_DOUBLE_EQ(compute_seconds(sites[0], testing::conv_step()), kBusyS);
  EXPECT_DOUBLE_EQ(compute_seconds_alone(sites[0], testing::conv_step()), kAloneS);
  // gemm was measured with every core busy only: it runs at that rate alone too.
  EXPECT_DOUBLE_EQ(compute_seconds_alone(sites[0], testing::gemm_step()), kGemmS);
  auto plain = shared_chip_platform(2, 2, 2);
  plain.nodes.shared_chip.reset();
  EXPECT_DOUBLE_EQ(compute_seconds_alone(place_ranks(plain, 2)[0], testing::conv_step()), kBusyS)
      << "no chip: alone is compute_seconds";
}

TEST(SimulateComputeCost, AllComputingSecondsLoadsTheChipWithEveryRank) {
  const auto step = testing::conv_step();
  EXPECT_DOUBLE_EQ(all_computing_seconds(place_ranks(shared_chip_platform(2, 2, 2), 2)[0], step), kBusyS);
  EXPECT_DOUBLE_EQ(all_computing_seconds(place_ranks(shared_chip_platform(3, 3, 2), 3)[0], step), 1.5 * kBusyS)
      << "expectation: 3 ranks on 2 cores take turns";
  EXPECT_DOUBLE_EQ(all_computing_seconds(place_ranks(shared_chip_platform(4, 4, 4), 2)[0], step), 1.6 + 0.4 / 3)
      << "expectation: 2 of 4 cores busy, a third of the way from alone to busy";
  EXPECT_DOUBLE_EQ(all_computing_seconds(place_ranks(shared_chip_platform(2, 2, 2), 1)[0], step), kAloneS)
      << "expectation: a world of one rank computes alone";
  // The waiting share does not matter when every rank computes.
  EXPECT_DOUBLE_EQ(all_computing_seconds(place_ranks(shared_chip_platform(3, 3, 2, 1.0), 3)[0], step), 1.5 * kBusyS);
  auto plain = shared_chip_platform(3, 3, 2);
  plain.nodes.shared_chip.reset();
  const auto site = place_ranks(plain, 3)[0];
  EXPECT_DOUBLE_EQ(all_computing_seconds(site, step), compute_seconds(site, step)) << "no chip: compute_seconds";
}

// --- kernel profiles ---------------------------------------------------------------------------------------------

using platforms::KernelProfile;
using platforms::ProfileKey;
using platforms::ProfilePhase;

// lenet at batch 16 on one-core ranks: every forward 1 ms, conv1's backward 2 ms, conv2's 3 ms, nothing else.
std::shared_ptr<const KernelProfile> lenet_profile() {
  auto profile = std::make_shared<KernelProfile>();
  profile->source = "test";
  for (const LayerSpec& layer : build_model("lenet").layers) {
    profile->add({"lenet", layer.name, ProfilePhase::kForward, 1}, 16, 1e-3);
  }
  profile->add({"lenet", "conv1", ProfilePhase::kBackward, 1}, 16, 2e-3);
  profile->add({"lenet", "conv2", ProfilePhase::kBackward, 1}, 16, 3e-3);
  return profile;
}

// The roofline of one kernel at the class rate: FLOPs at the CPU's conv efficiency (flat platforms' memory is free).
double class_rate_seconds(const RankSite& site, const LayerKernel& kernel) {
  return kernel.flops / (site.peak_flops * site.efficiency.of("conv"));
}

TEST(SimulateComputeCost, AProfilePricesTheKernelsItCoversAndTheClassRateTheRest) {
  auto platform = flat_platform(2, 1e-6, 1e9, 1e9);
  platform.nodes.cpu.efficiency.by_class["conv"] = 0.5;
  platforms::attach_kernel_profile(platform, lenet_profile());
  const RankSite site = place_ranks(platform, 1).front();
  ASSERT_EQ(site.threads, 1);
  const std::vector<LayerKernel> kernels = iteration_kernels(build_model("lenet"), 16);
  const ComputeStep step{.flops = 1, .kernel_class = "conv", .kernels = kernels};
  double expected = 0;
  int profiled = 0;
  for (const LayerKernel& kernel : kernels) {
    if (kernel.pass == KernelPass::kForward) {
      expected += 1e-3;
      ++profiled;
    } else if (kernel.layer_name == "conv1") {
      expected += 2e-3;  // the first layer computes no input gradient: its weights' gradient is all of it
      ++profiled;
    } else if (kernel.layer_name == "conv2") {
      expected += 1.5e-3;  // data and weights each do the forward's multiply-adds: half of 3 ms each
      ++profiled;
    } else {
      expected += class_rate_seconds(site, kernel);
    }
  }
  EXPECT_NEAR(compute_seconds(site, step), expected, 1e-15);
  const KernelPricing pricing = kernel_pricing(site, step);
  EXPECT_EQ(pricing.kernels[KernelPricing::kProfile], profiled);
  EXPECT_EQ(pricing.kernels[KernelPricing::kClassRate], static_cast<int>(kernels.size()) - profiled);
  EXPECT_NE(pricing.describe().find(std::to_string(profiled) + " from the kernel profile"), std::string::npos)
      << pricing.describe();

  // At a batch the profile did not measure (nor interpolate) it covers nothing: each kernel at the class rate.
  const std::vector<LayerKernel> other = iteration_kernels(build_model("lenet"), 32);
  const ComputeStep uncovered{.flops = 1e9, .kernel_class = "conv", .kernels = other};
  double by_kernel = 0;
  for (const LayerKernel& kernel : other) by_kernel += class_rate_seconds(site, kernel);
  EXPECT_NEAR(compute_seconds(site, uncovered), by_kernel, 1e-15);
  EXPECT_EQ(kernel_pricing(site, uncovered).kernels[KernelPricing::kProfile], 0);
  platform.nodes.cpu.profile.reset();
  EXPECT_EQ(kernel_pricing(place_ranks(platform, 1).front(), step).describe(), "whole steps at their class's rate");
}

TEST(SimulateComputeCost, OnASharedChipAProfileIsTheAloneTimeAndBusyTakesTheClassSlowdown) {
  auto platform = shared_chip_platform(2, 2, 2);
  auto profile = std::make_shared<KernelProfile>();
  profile->source = "test";
  const std::vector<LayerKernel> kernels = iteration_kernels(build_model("lenet"), 16);
  for (const LayerSpec& layer : build_model("lenet").layers) {
    profile->add({"lenet", layer.name, ProfilePhase::kForward, 1}, 16, 1e-3);
    profile->add({"lenet", layer.name, ProfilePhase::kBackward, 1}, 16, 2e-3);
  }
  platforms::attach_kernel_profile(platform, profile);
  const RankSite site = place_ranks(platform, 2).front();
  const ComputeStep step{.flops = testing::kStepFlops, .kernel_class = "conv", .kernels = kernels};
  const double alone = 3e-3 * static_cast<double>(build_model("lenet").layers.size());
  EXPECT_NEAR(compute_seconds_alone(site, step), alone, 1e-15);
  EXPECT_NEAR(compute_seconds(site, step), alone * kBusyS / kAloneS, 1e-15) << "conv's busy over alone";
}

}  // namespace
}  // namespace dsgd::simulate
