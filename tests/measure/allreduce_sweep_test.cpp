#include "measure/allreduce_sweep.hpp"

#include <gtest/gtest.h>

#include "core/error.hpp"
#include "measure/threads/executor.hpp"

namespace dsgd::measure {
namespace {

AllreduceSweep sweep_on_threads(int ranks, const AllreduceSweepOptions& options, const RunVariant& run) {
  WorldOptions world;
  world.size = ranks;
  world.timeout_s = 60;
  AllreduceSweep sweep;
  threads::run(world, [&](Comm& comm) {
    auto mine = allreduce_sweep(comm, options, run);
    if (comm.rank() == 0) sweep = std::move(mine);
  });
  return sweep;
}

TEST(MeasureAllreduceSweep, EveryVariantAtEverySizeGivesItsRoundsAndNcclTestsBandwidths) {
  const auto sweep = sweep_on_threads(3, {{1001, 4096}, {"ring", "rabenseifner"}, 3}, run_collective);
  ASSERT_EQ(sweep.seconds.size(), 2U);
  ASSERT_EQ(sweep.seconds[0].size(), 2U);
  EXPECT_EQ(sweep.seconds[1][1].size(), 3U);
  const auto entries = to_entries(sweep, "threads");
  ASSERT_EQ(entries.size(), 4U);
  EXPECT_EQ(entries[1].name, "allreduce/rabenseifner/1001");
  for (const auto& entry : entries) {
    EXPECT_EQ(entry.ranks, 3);
    EXPECT_GT(entry.counters.at("seconds_min"), 0);
    EXPECT_LE(entry.counters.at("seconds_min"), entry.real_time);
    EXPECT_GE(entry.counters.at("seconds_max"), entry.real_time);
    EXPECT_DOUBLE_EQ(entry.counters.at("algbw_Bps"), entry.counters.at("bytes") / entry.real_time);
    EXPECT_DOUBLE_EQ(entry.counters.at("busbw_Bps"), entry.counters.at("algbw_Bps") * 4.0 / 3.0);
  }
}

TEST(MeasureAllreduceSweep, AWrongSumIsCaughtInTheCheckingRound) {
  const RunVariant wrong = [](Comm& comm, const std::string& variant, Floats values) {
    run_collective(comm, variant, values);
    if (comm.rank() == 0 && values.count > 0) values.data[0] += 1;
  };
  EXPECT_THROW(sweep_on_threads(2, {{64}, {"ring"}, 1}, wrong), Error);
  EXPECT_THROW(sweep_on_threads(2, {{64}, {"ring"}, 0}, run_collective), Error);
}

}  // namespace
}  // namespace dsgd::measure
