#include "app/run_common.hpp"

#include <gtest/gtest.h>

#include <vector>

#include "core/breakdown.hpp"

namespace dsgd::app {
namespace {

// A measured run's entry takes its Table 3 shares from core/breakdown.hpp, as the simulated studies do
// (tests/simulate/scaling_study_test.cpp holds the studies to the same function): equal category times, equal
// comm ratio.
TEST(AppRunCommon, MeasuredRunsShareTheTable3DefinitionOfSimulatedOnes) {
  algorithms::RunResult result;
  result.info.has_master = true;
  result.ranks = 2;
  result.per_rank = {Breakdown::of({{Category::kCpuUpdate, 0.5}, {Category::kWait, 9}}),
                     Breakdown::of({{Category::kCpuGpuPara, 2},
                                    {Category::kNetwork, 1},
                                    {Category::kForwardBackward, 6},
                                    {Category::kWait, 4}})};
  const reports::Entry entry = run_entry(RunCli{}, result, "threads");
  const Table3Shares expected = table3_shares(result.per_rank, true);
  EXPECT_DOUBLE_EQ(entry.counters.at("comm_ratio"), expected.comm_ratio);
  EXPECT_DOUBLE_EQ(entry.counters.at("comm_ratio"), 3.0 / 9.5);
  for (std::size_t i = 0; i < kCategoryNames.size(); ++i) {
    EXPECT_DOUBLE_EQ(entry.counters.at("share:" + std::string(kCategoryNames[i])), expected.shares.seconds[i])
        << kCategoryNames[i];
  }
  EXPECT_DOUBLE_EQ(entry.counters.at("idle_share"), 4.0 / 13.5);
}

}  // namespace
}  // namespace dsgd::app
