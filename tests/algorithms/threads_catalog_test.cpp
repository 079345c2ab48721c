// algorithms/: every algorithm of the catalog learns a small generated task on the threads executor. This test
// needs neither SimGrid, mpirun nor the dsgd programs, so the quick ThreadSanitizer pass (scripts/tsan.sh --quick,
// docs/testing.md) builds and runs it where the whole algorithms_test would cost a build of everything: the
// Hogwild methods' shared vectors, the parameter servers' first-come-first-served replies, Dogwild's in-process
// datagrams and GeePS's push stream all run here. It never names an algorithm.

#include <gtest/gtest.h>

#include <cstdio>
#include <memory>
#include <utility>

#include "algorithms/algorithm.hpp"
#include "algorithms/runner.hpp"
#include "measure/threads/executor.hpp"
#include "tests/algorithms/small_run.hpp"
#include "tests/support/error_message.hpp"
#include "tests/support/scratch_dir.hpp"

namespace dsgd::algorithms {
namespace {

class ThreadsCatalog : public dsgd::testing::ScratchDirTest {
 protected:
  void SetUp() override {
    ScratchDirTest::SetUp();
    data_ = testing::small_run_data(dir_);
  }

  RunResult run(const std::string& algorithm) {
    options_.algorithm = algorithm;
    RunResult result;
    WorldOptions world;
    world.size = world_size(options_);
    measure::threads::run(world, training_worker(options_, data_, &result));
    return result;
  }

  RunData data_;
  RunOptions options_ = testing::small_run_options();
};

TEST_F(ThreadsCatalog, EveryAlgorithmLearns) {
  for (const auto& entry : algorithm_catalog()) {
    const RunResult result = run(entry.info.name);
    ASSERT_EQ(result.curve.size(), 2U) << entry.info.name;
    const double accuracy = result.curve.back().test_accuracy;
    std::printf("%-15s test accuracy %.3f after %lld iterations, %.2f s\n", entry.info.name.c_str(), accuracy,
                static_cast<long long>(result.iterations), result.train_seconds);
    EXPECT_GT(accuracy, 0.5) << entry.info.name << " (chance is 0.1)";
    EXPECT_EQ(result.iterations, 40) << entry.info.name;
    EXPECT_EQ(result.stop_reason, "iterations") << entry.info.name;
    EXPECT_EQ(result.ranks, world_size(options_)) << entry.info.name;
    // A worker computed; a master, if any, did not.
    const std::size_t worker = entry.info.has_master ? 1 : 0;
    EXPECT_GT(result.per_rank.at(worker)[Category::kForwardBackward], 0) << entry.info.name;
    // Two rounds: the first round's part of the worker's breakdown is some of it, not all.
    ASSERT_EQ(result.first_round_per_rank.size(), result.per_rank.size()) << entry.info.name;
    const double first_s = result.first_round_per_rank.at(worker)[Category::kForwardBackward];
    EXPECT_GT(first_s, 0) << entry.info.name;
    EXPECT_LT(first_s, result.per_rank.at(worker)[Category::kForwardBackward]) << entry.info.name;
    if (entry.info.has_master) {
      EXPECT_EQ(result.per_rank.at(0)[Category::kForwardBackward], 0) << entry.info.name;
    }
  }
}

// The same runs at the smallest size that still takes every algorithm through its exchanges and an evaluation
// between two rounds: what ThreadSanitizer needs (scripts/tsan.sh --quick), at a tenth of the learning test's work.
TEST_F(ThreadsCatalog, EveryAlgorithmExchangesOverTwoRounds) {
  options_.hyper.batch = 4;
  options_.budget.iterations = 4;
  options_.budget.eval_every = 2;
  for (const auto& entry : algorithm_catalog()) {
    const RunResult result = run(entry.info.name);
    EXPECT_EQ(result.curve.size(), 2U) << entry.info.name;
    EXPECT_EQ(result.iterations, 4) << entry.info.name;
    EXPECT_EQ(result.ranks, world_size(options_)) << entry.info.name;
    EXPECT_GT(result.per_rank.at(entry.info.has_master ? 1 : 0)[Category::kForwardBackward], 0) << entry.info.name;
  }
}

// A program's own algorithm (add_algorithm, examples/gossip_sgd.cpp) needs a name no other has and a factory.
TEST(AlgorithmCatalogAdditions, RefusesAnEmptyNameAMissingFactoryAndATakenName) {
  const auto size = algorithm_catalog().size();
  AlgorithmEntry copy = algorithm_catalog().front();
  EXPECT_EQ(dsgd::testing::input_error([&] { add_algorithm(copy); }),
            "add_algorithm: the catalog already has an algorithm named '" + copy.info.name + "'");
  AlgorithmEntry unnamed = copy;
  unnamed.info.name.clear();
  EXPECT_EQ(dsgd::testing::input_error([&] { add_algorithm(unnamed); }),
            "add_algorithm: an algorithm needs a name and a factory");
  AlgorithmEntry unmade = copy;
  unmade.info.name = "unmade-sgd";
  unmade.make = nullptr;
  EXPECT_EQ(dsgd::testing::input_error([&] { add_algorithm(unmade); }),
            "add_algorithm: an algorithm needs a name and a factory");
  EXPECT_EQ(algorithm_catalog().size(), size) << "nothing refused was added";
}

}  // namespace
}  // namespace dsgd::algorithms
