// algorithms/: every algorithm of the catalog learns a small generated task on the threads executor; the
// deterministic ones give bit-identical weights across runs and across the threads, MPI (real mpirun, dsgd-mpi run)
// and SimGrid executors; bad run options are refused. The tests iterate over the catalog and never name an
// algorithm, so a new algorithm is tested without touching this file.

#include <gtest/gtest.h>

#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <string>
#include <vector>

#include "algorithms/algorithm.hpp"
#include "algorithms/runner.hpp"
#include "app/run_common.hpp"
#include "core/subprocess.hpp"
#include "measure/mpi/launch.hpp"
#include "measure/threads/executor.hpp"
#include "reports/results.hpp"
#include "simulate/simgrid/executor.hpp"
#include "simulate/simgrid/platform_builder.hpp"
#include "tests/support/scratch_dir.hpp"
#include "tests/support/synthetic_images.hpp"

namespace dsgd::algorithms {
namespace {

namespace fs = std::filesystem;

const std::string kWorker = std::string(DSGD_BINARY_DIR) + "/app/dsgd-mpi";

std::string hex(std::uint64_t value) {
  char text[32];
  std::snprintf(text, sizeof text, "%016" PRIx64, value);
  return text;
}

class Algorithms : public testing::ScratchDirTest {
 protected:
  void SetUp() override {
    ScratchDirTest::SetUp();
    testing::write_synthetic_idx_folder(dir_, 960, 200);
    cli_.dataset = "idx:" + dir_.string();
    cli_.run.workers = 3;
    cli_.run.hyper.batch = 16;
    cli_.run.hyper.learning_rate = 0.01F;
    cli_.run.hyper.momentum = 0.5F;
    cli_.run.budget.iterations = 40;
    cli_.run.budget.eval_every = 20;
    data_ = app::load_run_data(cli_);
  }

  RunResult run_threads(const app::RunCli& cli, int ranks_per_node = 0) {
    RunResult result;
    WorldOptions world;
    world.size = world_size(cli.run);
    world.ranks_per_node = ranks_per_node;
    measure::threads::run(world, training_worker(cli.run, data_, &result));
    return result;
  }

  struct Hashes {
    std::string threads, mpi, simgrid;
  };

  // The final weights' hash of `cli`'s run on threads, on MPI (dsgd-mpi run under real mpirun, as `dsgd run
  // --executor mpi` starts it) and in SimGrid with payloads (the kernels run inside the simulation); ranks grouped
  // into nodes of `ranks_per_node` on all three if it is > 0 (WorldOptions::ranks_per_node).
  Hashes run_everywhere(const app::RunCli& cli, int ranks_per_node = 0) {
    Hashes hashes;
    hashes.threads = hex(run_threads(cli, ranks_per_node).parameters_hash);

    const auto file = dir_ / (cli.run.algorithm + ".json");
    std::vector<std::string> program = {kWorker, "--ranks-per-node", std::to_string(ranks_per_node), "run"};
    for (const auto& argument : app::run_arguments(cli)) program.push_back(argument);
    program.insert(program.end(), {"--results", file.string()});
    const auto process =
        run_process(measure::mpi::mpirun_command(world_size(cli.run), program), std::chrono::seconds(240));
    EXPECT_EQ(process.exit_code, 0) << cli.run.algorithm << ": " << process.output;
    if (process.exit_code == 0) {
      hashes.mpi = reports::read_results(file).benchmarks.at(0).labels.at("parameters_fnv1a");
    }

    WorldOptions world;
    world.size = world_size(cli.run);
    world.ranks_per_node = ranks_per_node;
    simulate::SimulationOptions options;
    options.fidelity = simulate::Fidelity::kMessage;
    RunResult simulated;
    options.collect = [&simulated] { return hex(simulated.parameters_hash); };
    hashes.simgrid = simulate::simgrid::run(simulate::flat_platform(world.size, 1e-6, 1e9, 1e12), world,
                                            training_worker(cli.run, data_, &simulated), options)
                         .collected;
    std::printf("%-15s threads %s, mpi %s, simgrid %s\n", cli.run.algorithm.c_str(), hashes.threads.c_str(),
                hashes.mpi.c_str(), hashes.simgrid.c_str());
    return hashes;
  }

  app::RunCli with(const std::string& algorithm) const {
    app::RunCli cli = cli_;
    cli.run.algorithm = algorithm;
    return cli;
  }

  app::RunCli cli_;
  RunData data_;
};

TEST(AlgorithmCatalog, NamesAreUniqueAndDescribed) {
  const auto names = algorithm_names();
  EXPECT_GE(names.size(), 9U);  // at least seed 000's nine methods (a new algorithm must not need this file)
  for (const auto& entry : algorithm_catalog()) {
    EXPECT_EQ(std::count(names.begin(), names.end(), entry.info.name), 1) << entry.info.name;
    EXPECT_FALSE(entry.info.description.empty()) << entry.info.name;
    EXPECT_EQ(entry.info.description.find('\n'), std::string::npos) << entry.info.name;
    EXPECT_EQ(&find_algorithm(entry.info.name), &entry);
  }
  try {
    find_algorithm("downpour");
    FAIL() << "expected UnknownNameError";
  } catch (const UnknownNameError& error) {
    EXPECT_NE(std::string(error.what()).find(names.front()), std::string::npos) << error.what();
  }
}

TEST_F(Algorithms, EveryAlgorithmLearnsOnThreads) {
  for (const auto& entry : algorithm_catalog()) {
    const auto cli = with(entry.info.name);
    const auto result = run_threads(cli);
    ASSERT_EQ(result.curve.size(), 2U) << entry.info.name;
    const double accuracy = result.curve.back().test_accuracy;
    std::printf("%-15s test accuracy %.3f after %lld iterations, %.2f s\n", entry.info.name.c_str(), accuracy,
                static_cast<long long>(result.iterations), result.train_seconds);
    EXPECT_GT(accuracy, 0.5) << entry.info.name << " (chance is 0.1)";
    EXPECT_EQ(result.iterations, 40) << entry.info.name;
    EXPECT_EQ(result.stop_reason, "iterations") << entry.info.name;
    EXPECT_EQ(result.ranks, world_size(cli.run)) << entry.info.name;
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

TEST_F(Algorithms, DeterministicAlgorithmsRepeatBitForBit) {
  for (const auto& entry : algorithm_catalog()) {
    if (!entry.info.synchronous) continue;
    auto cli = with(entry.info.name);
    const auto first = run_threads(cli);
    const auto second = run_threads(cli);
    EXPECT_EQ(hex(first.parameters_hash), hex(second.parameters_hash)) << entry.info.name;
    cli.run.hyper.seed = 2;
    EXPECT_NE(hex(run_threads(cli).parameters_hash), hex(first.parameters_hash)) << entry.info.name;
  }
}

TEST_F(Algorithms, DeterministicAlgorithmsGiveTheSameWeightsOnThreadsMpiAndSimgrid) {
  for (const auto& entry : algorithm_catalog()) {
    if (!entry.info.synchronous) continue;
    auto cli = with(entry.info.name);
    cli.run.budget.iterations = 20;
    const auto hashes = run_everywhere(cli);
    EXPECT_EQ(hashes.mpi, hashes.threads) << entry.info.name;
    EXPECT_EQ(hashes.simgrid, hashes.threads) << entry.info.name;
  }
}

// The hierarchical allreduces sum in an order set by the node map: equal maps (nodes of 2, the last one short), equal
// weights on every executor. dsgd-mpi gets --allreduce through run_arguments.
TEST_F(Algorithms, HierarchicalAllreducesGiveTheSameWeightsOnThreadsMpiAndSimgrid) {
  for (const auto& entry : algorithm_catalog()) {
    if (!entry.info.synchronous) continue;
    for (const auto algorithm : {AllreduceAlgorithm::kHierarchical, AllreduceAlgorithm::kHierarchical2d}) {
      auto cli = with(entry.info.name);
      cli.run.budget.iterations = 20;
      cli.run.hyper.allreduce = algorithm;
      const auto hashes = run_everywhere(cli, 2);
      EXPECT_EQ(hashes.mpi, hashes.threads) << entry.info.name << ", " << to_string(algorithm);
      EXPECT_EQ(hashes.simgrid, hashes.threads) << entry.info.name << ", " << to_string(algorithm);
    }
  }
}

// Linear scaling, warm-up and LARS live in each rank's optimiser and count its own steps, so they keep the
// deterministic algorithms deterministic on every executor; dsgd-mpi gets them through run_arguments.
TEST_F(Algorithms, LargeBatchRulesKeepTheSameWeightsOnThreadsMpiAndSimgrid) {
  for (const auto& entry : algorithm_catalog()) {
    if (!entry.info.synchronous) continue;
    auto cli = with(entry.info.name);
    cli.run.budget.iterations = 20;
    const std::string plain = hex(run_threads(cli).parameters_hash);
    cli.run.hyper.learning_rate = 0.5F;  // LARS's global rate: its local rates are some 1e-3 to 1e-1 here
    cli.run.hyper.lr_scaling = nn::LrScaling::kLinear;
    cli.run.hyper.reference_batch = 16;  // 3 workers x 16: 3 x the rate after warm-up
    cli.run.hyper.warmup_iterations = 10;
    cli.run.hyper.lars = true;
    cli.run.hyper.lars_trust = 0.002F;
    const auto hashes = run_everywhere(cli);
    EXPECT_NE(hashes.threads, plain) << entry.info.name << ": the rules changed nothing";
    EXPECT_EQ(hashes.mpi, hashes.threads) << entry.info.name;
    EXPECT_EQ(hashes.simgrid, hashes.threads) << entry.info.name;
  }
}

TEST(AlgorithmHyperparameters, LinearScalingTakesTheGlobalBatchOfAllWorkers) {
  Hyperparameters hyper;
  hyper.learning_rate = 0.25F;
  hyper.batch = 32;
  EXPECT_EQ(scaled_learning_rate(hyper, 8), 0.25F);  // no scaling
  hyper.lr_scaling = nn::LrScaling::kLinear;
  hyper.reference_batch = 64;
  EXPECT_EQ(scaled_learning_rate(hyper, 8), 1.0F);  // 32 x 8 = 256 images, 4 x the reference batch
  EXPECT_EQ(scaled_learning_rate(hyper, 1), 0.125F);
}

TEST_F(Algorithms, BadRunOptionsAreInputErrors) {
  auto cli = with(algorithm_names().front());
  cli.run.hyper.period = 3;  // eval_every 20 is no multiple of it
  EXPECT_THROW(check_run_options(cli.run), InputError);
  cli = with(algorithm_names().front());
  cli.run.budget = {};
  EXPECT_THROW(check_run_options(cli.run), InputError);
  cli = with(algorithm_names().front());
  cli.run.workers = 0;
  EXPECT_THROW(check_run_options(cli.run), InputError);
  EXPECT_THROW(check_run_options(with("downpour").run), UnknownNameError);
}

TEST_F(Algorithms, BadLargeBatchRulesAreInputErrors) {
  const auto message = [](const RunOptions& options) {
    try {
      check_run_options(options);
    } catch (const InputError& error) {
      return std::string(error.what());
    }
    return std::string("accepted");
  };
  auto options = with(algorithm_names().front()).run;
  EXPECT_EQ(message(options), "accepted");
  options.hyper.reference_batch = 0;
  EXPECT_EQ(message(options), "run: --reference-batch must be at least 1, got 0");
  options = with(algorithm_names().front()).run;
  options.hyper.lr_scaling = nn::LrScaling::kLinear;
  options.hyper.warmup_iterations = -5;
  EXPECT_EQ(message(options), "run: --warmup-iterations must be >= 0, got -5");
  options.hyper.warmup_iterations = 5;
  EXPECT_EQ(message(options), "accepted");
  options.hyper.lr_scaling = nn::LrScaling::kNone;
  EXPECT_EQ(message(options),
            "run: --warmup-iterations ramps --lr up to the scaled rate; it needs --lr-scaling linear");
  options = with(algorithm_names().front()).run;
  options.hyper.lars = true;
  options.hyper.lars_trust = 0;
  EXPECT_EQ(message(options), "run: --lars-trust must be > 0, got 0");
}

}  // namespace
}  // namespace dsgd::algorithms
