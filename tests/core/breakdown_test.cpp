#include "core/breakdown.hpp"

#include <gtest/gtest.h>

#include <vector>

#include "core/error.hpp"

namespace dsgd {
namespace {

TEST(CoreBreakdown, Table3SharesCountABusyWorkerAndTheMastersUpdate) {
  const Breakdown master = Breakdown::of({{Category::kCpuUpdate, 1}, {Category::kWait, 50}});
  // The wait is idle time: left out of the shares, reported beside them.
  const Breakdown worker = Breakdown::of({{Category::kCpuGpuPara, 2},
                                          {Category::kCpuGpuData, 1},
                                          {Category::kForwardBackward, 6},
                                          {Category::kWait, 100}});
  // (2 + 1) communication of 2 + 1 + 6 busy + 1 of the master's update.
  const Table3Shares with_master = table3_shares(std::vector<Breakdown>{master, worker}, true);
  EXPECT_DOUBLE_EQ(with_master.comm_ratio, 3.0 / 10.0);
  EXPECT_DOUBLE_EQ(with_master.busy_s, 10.0);
  EXPECT_DOUBLE_EQ(with_master.wait_s, 100.0);
  EXPECT_DOUBLE_EQ(with_master.shares[Category::kCpuUpdate], 0.1);
  EXPECT_DOUBLE_EQ(with_master.shares[Category::kWait], 0.0);
  EXPECT_DOUBLE_EQ(with_master.shares.total(), 1.0);
  // Without a master, rank 0 is the worker.
  EXPECT_DOUBLE_EQ(table3_shares(std::vector<Breakdown>{worker}, false).comm_ratio, 3.0 / 9.0);
}

TEST(CoreBreakdown, Table3CommRatioCountsTheNetworkAndNothingElse) {
  const Breakdown worker = Breakdown::of({{Category::kNetwork, 1},
                                          {Category::kGpuGpuPara, 1},
                                          {Category::kGpuUpdate, 1},
                                          {Category::kForwardBackward, 1}});
  EXPECT_DOUBLE_EQ(table3_shares(std::vector<Breakdown>{worker}, false).comm_ratio, 0.5);
}

TEST(CoreBreakdown, Table3SharesOfAnIdleOrMissingWorker) {
  const Breakdown idle = Breakdown::of({{Category::kWait, 3}});
  const Table3Shares shares = table3_shares(std::vector<Breakdown>{idle}, false);
  EXPECT_EQ(shares.busy_s, 0.0);
  EXPECT_EQ(shares.comm_ratio, 0.0);
  EXPECT_EQ(shares.wait_s, 3.0);
  EXPECT_THROW(table3_shares(std::vector<Breakdown>{idle}, true), InternalError);
}

}  // namespace
}  // namespace dsgd
