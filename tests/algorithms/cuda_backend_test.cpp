// Every algorithm of the catalog with its forward and backward passes on the cuda back end (algorithms/trainer.hpp
// "Memory"): on threads and under mpirun, against the same run on the cpu back end. Skipped, saying so, where this
// machine has no CUDA device (the refusal itself is tested in tests/app/cli_test.cpp).

#include <cmath>

#include "core/nn/backend.hpp"
#include "core/subprocess.hpp"
#include "tests/algorithms/training_runs.hpp"

namespace dsgd::algorithms::testing {
namespace {

class AlgorithmsOnCuda : public TrainingRuns {
 protected:
  void SetUp() override {
    if (nn::backend_device_count("cuda") == 0) GTEST_SKIP() << "no CUDA device here (no GPU or no NVIDIA driver)";
    TrainingRuns::SetUp();
  }
};

double seconds_in(const RunResult& result, Category category) {
  double total = 0;
  for (const auto& rank : result.per_rank) total += rank.seconds[static_cast<std::size_t>(category)];
  return total;
}

// FP32 on both back ends, but cuDNN and oneDNN sum in different orders: the runs agree closely, not bit for bit.
TEST_F(AlgorithmsOnCuda, EveryAlgorithmLearnsAsOnTheCpu) {
  for (const auto& entry : algorithm_catalog()) {
    SCOPED_TRACE(entry.info.name);
    auto cli = with(entry.info.name);
    const RunResult cpu = run_threads(cli);
    cli.run.backend = "cuda";
    const RunResult cuda = run_threads(cli);
    ASSERT_EQ(cuda.curve.size(), cpu.curve.size());
    EXPECT_TRUE(std::isfinite(cuda.curve.back().test_loss));
    EXPECT_NEAR(cuda.curve.back().test_accuracy, cpu.curve.back().test_accuracy, 0.05);
    if (entry.info.synchronous) {
      EXPECT_NEAR(cuda.curve.back().test_loss, cpu.curve.back().test_loss, 0.02);
    }
    // The host copies of weights and gradients are measured, not assumed: charged to cpu-gpu para (where the cpu
    // back end puts only a master's exchanges and Hogwild's shared-vector traffic).
    EXPECT_GT(seconds_in(cuda, Category::kCpuGpuPara), 0);
  }
}

TEST_F(AlgorithmsOnCuda, RanksUnderMpirunComputeOnTheGpu) {
  // A GPU machine without OpenMPI (the lent ones have none) runs the threads case above and skips this one.
  if (!program_exists("mpirun")) GTEST_SKIP() << "mpirun is not installed";
  auto cli = with("sync-sgd");
  cli.run.backend = "cuda";
  EXPECT_FALSE(run_mpi(cli).empty());
  // Deterministic on one back end: the same weights from two runs.
  EXPECT_EQ(run_mpi(cli), run_mpi(cli));
}

}  // namespace
}  // namespace dsgd::algorithms::testing
