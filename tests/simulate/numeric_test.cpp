// simulate/numeric.hpp: a numeric simulation gives the native threads run's weights bit for bit (LeNet on
// Fashion-MNIST, as `dsgd run --executor simgrid` and `--executor threads` do); a straggler on the simulated
// platform makes its pushes as stale as the platform implies; a world over the memory limit is refused before
// anything runs; a target never reached stops at the budget; gradients computed side by side on several threads
// give the weights of one thread.

#include "simulate/numeric.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "app/run_common.hpp"
#include "core/memory.hpp"
#include "core/model_zoo.hpp"
#include "core/nn/backend.hpp"
#include "core/nn/network.hpp"
#include "measure/threads/executor.hpp"
#include "platforms/catalog.hpp"
#include "simulate/simgrid/kernel_pool.hpp"
#include "simulate/simgrid/platform_builder.hpp"
#include "tests/support/scratch_dir.hpp"
#include "tests/support/synthetic_images.hpp"

namespace dsgd::simulate {
namespace {

algorithms::RunResult run_threads(const algorithms::RunOptions& run, const algorithms::RunData& data) {
  algorithms::RunResult result;
  WorldOptions world;
  world.size = algorithms::world_size(run);
  measure::threads::run(world, algorithms::training_worker(run, data, &result));
  return result;
}

TEST(NumericSimulation, SyncSgdOnFashionMnistGivesTheThreadsRunsWeights) {
  app::RunCli cli;  // LeNet on Fashion-MNIST, as `dsgd run` defaults
  cli.run.algorithm = "sync-sgd";
  cli.run.workers = 4;
  cli.run.budget.target_accuracy = 0;
  cli.run.budget.iterations = 20;
  cli.run.budget.eval_every = 10;
  cli.test_images = 500;
  const auto data = app::load_run_data(cli);
  const auto native = run_threads(cli.run, data);

  NumericOptions options;
  options.run = cli.run;
  const auto simulated = simulate_numeric(platforms::load_platform("cori-knl"), options, data);
  EXPECT_EQ(simulated.result.parameters_hash, native.parameters_hash);
  ASSERT_EQ(simulated.result.curve.size(), 2U);
  EXPECT_EQ(simulated.result.curve.back().test_accuracy, native.curve.back().test_accuracy);
  EXPECT_EQ(simulated.result.stop_reason, "iterations");
  // The clock is the platform's: 20 iterations of a KNL core, not this machine's time.
  EXPECT_GT(simulated.result.train_seconds, 0);
  EXPECT_NE(simulated.result.train_seconds, native.train_seconds);
  EXPECT_TRUE(simulated.result.staleness.empty());  // no parameter server
}

class NumericOnSyntheticData : public testing::ScratchDirTest {
 protected:
  void SetUp() override {
    ScratchDirTest::SetUp();
    testing::write_synthetic_idx_folder(dir_, 960, 200);
    cli_.dataset = "idx:" + dir_.string();
    cli_.run.hyper.batch = 16;
    cli_.run.budget.target_accuracy = 0;
    data_ = app::load_run_data(cli_);
  }
  app::RunCli cli_;
  algorithms::RunData data_;
};

// Async SGD's master on node 0, worker w on node w + 1 of a network fast enough to cost nothing beside compute. With
// P workers of equal speed each push is P - 1 updates stale; a worker k times slower than the other P - 1 sees
// (P - 1) k of their updates between two of its pushes, while they all still run.
TEST_F(NumericOnSyntheticData, AStragglerSeesTheStalenessItsSlowdownImplies) {
  constexpr int kWorkers = 4;
  constexpr double kSlowdown = 4;
  constexpr int kIterations = 40;
  NumericOptions options;
  options.run = cli_.run;
  options.run.algorithm = "async-sgd";
  options.run.workers = kWorkers;
  options.run.budget.iterations = kIterations;
  options.run.budget.eval_every = kIterations;  // one round: the fast workers stop once they are done
  auto platform = flat_platform(kWorkers + 1, 1e-9, 1e15, 1e10);

  const auto even = simulate_numeric(platform, options, data_).result.staleness;
  ASSERT_EQ(even.total(), kWorkers * kIterations);
  EXPECT_EQ(even.max(), kWorkers - 1);
  EXPECT_GE(even.counts().at(kWorkers - 1), kWorkers * (kIterations - 1));  // all but the first pushes

  platform.noise.stragglers = {{kWorkers, kSlowdown}};  // the last worker's node
  const auto straggling = simulate_numeric(platform, options, data_).result.staleness;
  ASSERT_EQ(straggling.total(), kWorkers * kIterations);
  const auto expected = static_cast<std::int64_t>((kWorkers - 1) * kSlowdown);
  EXPECT_NEAR(static_cast<double>(straggling.max()), static_cast<double>(expected), 1.0);
  // The straggler's pushes while the others run: a 1 / kSlowdown share of its iterations, each about `expected`
  // updates stale.
  std::int64_t stale = 0;
  for (std::size_t k = static_cast<std::size_t>(expected - 1); k < straggling.counts().size(); ++k) {
    stale += straggling.counts()[k];
  }
  EXPECT_NEAR(static_cast<double>(stale), kIterations / kSlowdown, 2.0);
}

TEST_F(NumericOnSyntheticData, AWorldOverTheMemoryLimitIsRefusedWithTheEstimate) {
  NumericOptions options;
  options.run = cli_.run;
  options.run.workers = 64;
  options.run.budget.iterations = 10;
  options.memory_limit_bytes = 100e6;
  options.kernel_threads = 2;
  const auto estimate = estimate_numeric_memory(options.run, data_.test->size(), options.kernel_threads);
  EXPECT_GT(estimate.total_bytes, 64 * kRankOverheadBytes);
  // Rank 0 evaluates on one evaluator per pool thread, but on no more than the test set has batches: these 200
  // images are one batch of 200, 500 are two of 250.
  EXPECT_DOUBLE_EQ(estimate.total_bytes, estimate_numeric_memory(options.run, data_.test->size(), 1).total_bytes);
  EXPECT_DOUBLE_EQ(estimate_numeric_memory(options.run, 500, 2).total_bytes -
                       estimate_numeric_memory(options.run, 500, 1).total_bytes,
                   estimate_numeric_memory(options.run, 500, 1).evaluator_bytes);
  try {
    simulate_numeric(platforms::load_platform("cori-knl"), options, data_);
    FAIL() << "expected InputError";
  } catch (const InputError& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find(bytes_text(estimate.total_bytes)), std::string::npos) << message;
    EXPECT_NE(message.find("100 MB allowed"), std::string::npos) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  }
  // The estimate grows with the workers and the batch.
  auto more = options.run;
  more.workers = 128;
  EXPECT_GT(estimate_numeric_memory(more, 200).total_bytes, estimate.total_bytes);
  more.hyper.batch = 256;
  EXPECT_GT(estimate_numeric_memory(more, 200).per_worker_bytes, estimate.per_worker_bytes);
}

// OpenMP keeps this thread's pool after a kernel of two threads; a simulation started afterwards (as in `dsgd
// reproduce` after a native experiment) must still run its kernels on two threads, not wait for the pool's threads.
TEST_F(NumericOnSyntheticData, ASimulationAfterMultithreadedKernelsRunsItsOwnKernels) {
  {
    // One training step on two OpenMP threads in this (the forking) thread leaves its pool behind.
    nn::BackendOptions two;
    two.threads = 2;
    const auto backend = nn::make_backend("cpu", two);
    nn::Network network(build_model("lenet"), *backend, 16);
    network.initialize(1);
    const auto& train = *data_.train;
    std::vector<float> images(16 * train.image_size());
    std::vector<float> labels(16);
    std::vector<std::size_t> indices(16);
    for (std::size_t i = 0; i < indices.size(); ++i) indices[i] = i;
    data::fill_batch(train, indices, images, labels);
    network.train_step(images.data(), labels.data());
  }
  auto run = cli_.run;
  run.threads_per_rank = 2;
  run.budget.iterations = 4;
  run.budget.eval_every = 4;
  NumericOptions options;
  options.run = run;
  options.run.workers = 2;
  options.wall_timeout_s = 120;  // a hang becomes a TimeoutError, not a stuck test
  const auto simulated = simulate_numeric(platforms::load_platform("cori-knl"), options, data_);
  EXPECT_EQ(simulated.result.iterations, 4);
}

// Ranks computing at the same simulated time compute side by side on a pool of threads (simulate/simgrid/
// kernel_pool.hpp); every rank's kernels touch only its own state, so the weights, the curve and the simulated
// times are those of one thread computing them in turn. Three threads on any machine (more than its cores on a
// small one), two OpenMP threads per rank's kernels as `dsgd run --threads 2`: a synchronous algorithm whose batch
// copies overlap the exchange (sync-easgd3) and a parameter server's, whose pushes the platform orders.
TEST_F(NumericOnSyntheticData, GradientsSideBySideGiveTheOneThreadWeights) {
  for (const std::string algorithm : {"sync-easgd3", "async-sgd"}) {
    SCOPED_TRACE(algorithm);
    NumericOptions options;
    options.run = cli_.run;
    options.run.algorithm = algorithm;
    options.run.workers = 6;
    options.run.threads_per_rank = 2;
    options.run.hyper.learning_rate = 0.01F;
    options.run.budget.iterations = 12;
    options.run.budget.eval_every = 6;
    options.wall_timeout_s = 300;
    const auto platform = platforms::load_platform("cori-knl");
    options.kernel_threads = 1;
    const auto one = simulate_numeric(platform, options, data_).result;
    options.kernel_threads = 3;
    const auto pooled = simulate_numeric(platform, options, data_).result;
    EXPECT_EQ(pooled.parameters_hash, one.parameters_hash);
    ASSERT_EQ(pooled.curve.size(), one.curve.size());
    for (std::size_t i = 0; i < one.curve.size(); ++i) {
      EXPECT_EQ(pooled.curve[i].test_loss, one.curve[i].test_loss) << "evaluation " << i;
      EXPECT_EQ(pooled.curve[i].train_loss, one.curve[i].train_loss) << "evaluation " << i;
    }
    EXPECT_EQ(pooled.train_seconds, one.train_seconds);  // the platform's clock: the threads never enter it
    EXPECT_EQ(pooled.staleness.counts(), one.staleness.counts());
  }
}

// The pool's contract: every kernel runs once, a kernel's error comes back from its wait, and the waiting thread
// runs queued kernels itself (so a pool of two threads never waits for a busy pool thread).
TEST(KernelPool, RunsEveryKernelOnceAndRethrowsItsError) {
  KernelPool pool(2);
  std::vector<int> runs(64, 0);
  std::vector<KernelPool::TicketPtr> tickets;
  for (std::size_t i = 0; i < runs.size(); ++i) tickets.push_back(pool.submit([&runs, i] { ++runs[i]; }));
  const auto failing = pool.submit([] { throw InputError("kernel failed"); });
  for (const auto& ticket : tickets) ticket->wait();
  EXPECT_EQ(std::count(runs.begin(), runs.end(), 1), 64);
  EXPECT_THROW(failing->wait(), InputError);
  EXPECT_THROW(KernelPool{1}, InternalError);
  EXPECT_THROW(kernel_threads_for(-1), InputError);
  EXPECT_GE(kernel_threads_for(0), 1);
}

TEST_F(NumericOnSyntheticData, ATargetNeverReachedStopsAtTheBudget) {
  NumericOptions options;
  options.run = cli_.run;
  options.run.algorithm = "sync-sgd";
  options.run.workers = 2;
  options.run.budget.iterations = 20;
  options.run.budget.eval_every = 10;
  options.run.hyper.learning_rate = 1e-6F;  // so small that nothing is learnt
  options.run.budget.target_accuracy = 0.9;
  const auto run = simulate_numeric(platforms::load_platform("cori-knl"), options, data_).result;
  EXPECT_EQ(run.stop_reason, "iterations");
  EXPECT_EQ(run.iterations, 20);
  EXPECT_LT(run.time_to_target_s, 0);
  EXPECT_LT(run.curve.back().test_accuracy, 0.9);
}

}  // namespace
}  // namespace dsgd::simulate
