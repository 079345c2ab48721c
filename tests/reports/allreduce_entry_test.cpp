// reports/allreduce_entry: nccl-tests' algbw and busbw, and an allreduce's entry with its min, median and max.

#include "reports/allreduce_entry.hpp"

#include <gtest/gtest.h>

namespace dsgd::reports {
namespace {

TEST(ReportsAllreduceEntry, BusBandwidthIsAlgorithmBandwidthTimesTwoPMinusOneOverP) {
  EXPECT_DOUBLE_EQ(allreduce_bus_factor(8), 1.75);
  EXPECT_DOUBLE_EQ(allreduce_bus_factor(1), 0.0) << "one rank moves nothing";
  EXPECT_DOUBLE_EQ(algorithm_bandwidth_Bps(4e6, 2e-3), 2e9);
  EXPECT_DOUBLE_EQ(algorithm_bandwidth_Bps(4e6, 0), 0) << "no time, no rate";
  const auto entry = allreduce_entry("mpi", "measured", "ring", 4, 1000000, {1e-3, 2e-3, 5e-3, 7});
  EXPECT_EQ(entry.name, "allreduce/ring/1000000");
  EXPECT_EQ(entry.iterations, 7);
  EXPECT_DOUBLE_EQ(entry.real_time, 2e-3);
  EXPECT_DOUBLE_EQ(entry.counters.at("bytes"), 4e6);
  EXPECT_DOUBLE_EQ(entry.counters.at("seconds_max"), 5e-3);
  EXPECT_DOUBLE_EQ(entry.counters.at("algbw_Bps"), 2e9);
  EXPECT_DOUBLE_EQ(entry.counters.at("busbw_Bps"), 3e9);  // x 2 (4 - 1) / 4
}

}  // namespace
}  // namespace dsgd::reports
