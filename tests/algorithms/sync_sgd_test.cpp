// algorithms/sync_sgd: A-BSP (a-bsp-sgd), seed 004's BSP with a clock of --period local steps, gives the same
// weights on threads, MPI and SimGrid at a period above 1 (the catalog-wide test runs it at period 1), and it is
// Sync SGD's local-SGD mode: the same weights at every period.

#include <gtest/gtest.h>

#include "tests/algorithms/training_runs.hpp"

namespace dsgd::algorithms {
namespace {

using testing::hex;
using ABsp = testing::TrainingRuns;

TEST_F(ABsp, LocalStepsGiveTheSameWeightsOnThreadsMpiAndSimgrid) {
  auto cli = with("a-bsp-sgd");
  cli.run.hyper.period = 4;
  cli.run.budget.iterations = 20;
  const auto hashes = run_everywhere(cli);
  EXPECT_EQ(hashes.mpi, hashes.threads);
  EXPECT_EQ(hashes.simgrid, hashes.threads);
  cli.run.hyper.period = 1;
  EXPECT_NE(hex(run_threads(cli).parameters_hash), hashes.threads) << "local steps changed nothing";
}

TEST_F(ABsp, IsSyncSgdAtEveryPeriod) {
  for (const int period : {1, 4}) {
    auto a_bsp = with("a-bsp-sgd");
    auto sync = with("sync-sgd");
    a_bsp.run.hyper.period = sync.run.hyper.period = period;
    EXPECT_EQ(hex(run_threads(a_bsp).parameters_hash), hex(run_threads(sync).parameters_hash)) << period;
  }
}

}  // namespace
}  // namespace dsgd::algorithms
