// algorithms/hybrid_sgd.cpp: dMath's hybrid parallelism computes sync-sgd's gradient (the mean over the global
// batch) with the head split over the workers, so its weights are sync-sgd's to rounding at any worker count; it
// refuses what its split layers cannot take; and in simulation AlexNet's head sends activations instead of 58 M
// weights, so at seed 001's batch of 1,024 on 16 K80s it sends less and runs faster than sync-sgd. The catalog-wide
// tests (algorithms_test.cpp) hold it bit-identical across threads, MPI and SimGrid, size-only included.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "algorithms/runner.hpp"
#include "algorithms/trainer.hpp"
#include "app/run_common.hpp"
#include "measure/threads/executor.hpp"
#include "platforms/catalog.hpp"
#include "simulate/weak_scaling.hpp"
#include "tests/algorithms/training_runs.hpp"

namespace dsgd::algorithms {
namespace {

using HybridSgd = testing::TrainingRuns;

TEST_F(HybridSgd, TrainsToSyncSgdsWeightsOnAnyNumberOfWorkers) {
  for (const int workers : {1, 2, 3}) {
    const auto sync = weights("sync-sgd", workers, 20, cli_.run.hyper);
    const std::uint64_t sync_bytes = bytes_sent_;
    const auto hybrid = weights("hybrid-sgd", workers, 20, cli_.run.hyper);
    ASSERT_EQ(hybrid.size(), sync.size());
    const auto [difference, largest] = testing::largest_difference(hybrid, sync);
    std::printf(
        "%d workers, 20 iterations: largest difference from sync-sgd %.3g (largest weight %.3g); rank 0 sent "
        "%llu bytes (sync-sgd %llu)\n",
        workers, difference, largest, static_cast<unsigned long long>(bytes_sent_),
        static_cast<unsigned long long>(sync_bytes));
    EXPECT_LE(difference, 1e-5 * largest) << workers << " workers: more than rounding apart";
    EXPECT_GT(difference, 0.0) << workers << " workers: the head's sums should differ in order from sync-sgd's";
    if (workers > 1) {
      EXPECT_LT(bytes_sent_, sync_bytes) << "LeNet's activations are smaller than its weights";
    }
  }
}

TEST_F(HybridSgd, RefusesLarsAndLocalSteps) {
  for (const bool lars : {true, false}) {
    Hyperparameters hyper = cli_.run.hyper;
    hyper.lars = lars;
    hyper.period = lars ? 1 : 2;
    try {
      weights("hybrid-sgd", 2, 1, hyper);
      FAIL() << "accepted " << (lars ? "--lars" : "--period 2");
    } catch (const InputError& error) {
      EXPECT_EQ(std::string(error.what()),
                "hybrid-sgd splits the head's weights over the workers and sums every iteration: it takes no "
                "--period, --lars or --per-layer");
    }
  }
}

TEST(HybridSgdSimulated, AlexNetAtBatch1024On16K80sSendsLessAndRunsFasterThanSyncSgd) {
  const auto platform = platforms::load_platform("k80-dmath");
  auto run = [&](const std::string& algorithm) {
    simulate::ScalingOptions options;
    options.algorithm = algorithm;
    options.model = "alexnet";
    options.hyper.batch = 64;  // x 16 GPUs: seed 001 Table III's 1,024
    options.workers = {16};
    options.iterations = 2;
    return simulate::simulate_weak_scaling(platform, options).front();
  };
  const auto sync = run("sync-sgd");
  const auto hybrid = run("hybrid-sgd");
  std::printf(
      "alexnet, 16 K80s, batch 1024: sync-sgd %.4f s/iteration, %.4g bytes/iteration/worker; hybrid-sgd %.4f "
      "s/iteration, %.4g bytes\n",
      sync.seconds_per_iteration, sync.bytes_sent_per_iteration, hybrid.seconds_per_iteration,
      hybrid.bytes_sent_per_iteration);
  EXPECT_LT(hybrid.seconds_per_iteration, sync.seconds_per_iteration);
  // sync-sgd's ring moves 2 x 15/16 of 244 MB per worker; the hybrid rolls 15 blocks of 64 x 9216 activations and
  // scatters as many back (about 71 MB), plus the head's smaller sums and the convolutions' 9 MB.
  EXPECT_LT(hybrid.bytes_sent_per_iteration, 0.5 * sync.bytes_sent_per_iteration);
}

}  // namespace
}  // namespace dsgd::algorithms
