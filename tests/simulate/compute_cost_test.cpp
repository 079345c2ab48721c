// simulate/compute_cost: a compute step's time on a shared chip (platforms::SharedChip) against the closed form
//   alone + (busy - alone) x (min(k, cores) - 1) / (cores - 1),   x k / cores beyond the cores,
// the chip's load k, and the sites place_ranks puts on chips. Times are round numbers
// (tests/support/shared_chip_platform.hpp), so most checks are exact.

#include "simulate/compute_cost.hpp"

#include <gtest/gtest.h>

#include <vector>

#include "core/error.hpp"
#include "simulate/simgrid/platform_builder.hpp"
#include "tests/support/shared_chip_platform.hpp"

namespace dsgd::simulate {
namespace {

using testing::kAloneS;
using testing::kBusyS;
using testing::kGemmS;
using testing::shared_chip_platform;

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

}  // namespace
}  // namespace dsgd::simulate
