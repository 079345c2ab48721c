// algorithms/sync_sgd.cpp with compressed gradients learns LeNet on real Fashion-MNIST (Debian's
// dataset-fashion-mnist) on 2 workers of the threads executor: every compression reaches the bar below within a
// small budget, as the uncompressed run does. The 85% takes minutes, not a unit test's seconds: the numbers
// for it were measured with `dsgd run --algo sync-sgd --compression X --workers 4 --target-accuracy 0.85`
// (algorithms/README.md "Compressed gradients").

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include "algorithms/runner.hpp"
#include "app/run_common.hpp"
#include "measure/threads/executor.hpp"

namespace dsgd::algorithms {
namespace {

constexpr int kWorkers = 2;
constexpr std::int64_t kIterations = 150;  // per worker: 2 x 32 x 150 = 9,600 images, a sixth of an epoch
constexpr double kBar = 0.70;              // test accuracy on 2,000 test images (chance: 0.1)

TEST(SyncSgdCompression, EveryCompressionLearnsFashionMnist) {
  if (!std::filesystem::exists("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz")) {
    GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  }
  app::RunCli cli;
  cli.dataset = "fashion-mnist";
  cli.test_images = 2000;
  cli.run.algorithm = "sync-sgd";
  cli.run.model = "lenet";
  cli.run.workers = kWorkers;
  cli.run.hyper.batch = 32;
  cli.run.hyper.learning_rate = 0.01F;
  cli.run.hyper.momentum = 0.9F;
  cli.run.budget.iterations = kIterations;
  cli.run.budget.eval_every = kIterations;
  const RunData data = app::load_run_data(cli);
  for (const Compression compression : kCompressions) {
    cli.run.hyper.compression = compression;
    RunResult result;
    WorldOptions world;
    world.size = world_size(cli.run);
    measure::threads::run(world, training_worker(cli.run, data, &result));
    ASSERT_FALSE(result.curve.empty());
    const double accuracy = result.curve.back().test_accuracy;
    std::printf("sync-sgd --compression %-6s: test accuracy %.4f after %lld iterations, %.1f s, %.0f bytes/iteration\n",
                std::string(to_string(compression)).c_str(), accuracy, static_cast<long long>(result.iterations),
                result.train_seconds, bytes_sent_per_iteration(result).value_or(0));
    EXPECT_GE(accuracy, kBar) << to_string(compression);
  }
}

}  // namespace
}  // namespace dsgd::algorithms
