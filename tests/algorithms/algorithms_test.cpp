// algorithms/: the deterministic algorithms of the catalog give bit-identical weights across runs and across the
// threads, MPI (real mpirun, dsgd-mpi run) and SimGrid executors; every algorithm runs on all three; bad run options
// are refused (that every algorithm learns on threads: threads_catalog_test.cpp). The tests iterate over the catalog
// and never name an algorithm, so a new algorithm is tested without touching this file.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "tests/algorithms/training_runs.hpp"

namespace dsgd::algorithms {
namespace {

using testing::hex;

using Algorithms = testing::TrainingRuns;

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
    cli.run.hyper.bucket_bytes = 0;  // where an algorithm reduces gradient buckets on a stream: one per layer, the most
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
    // LARS's global rate (its local rates are some 1e-3 to 1e-1 here); without LARS (hybrid-sgd), the plain one.
    if (entry.info.whole_layers) cli.run.hyper.learning_rate = 0.5F;
    cli.run.hyper.lr_scaling = nn::LrScaling::kLinear;
    cli.run.hyper.reference_batch = 16;  // 3 workers x 16: 3 x the rate after warm-up
    cli.run.hyper.warmup_iterations = 10;
    cli.run.hyper.lars = entry.info.whole_layers;
    cli.run.hyper.lars_trust = 0.002F;
    const auto hashes = run_everywhere(cli);
    EXPECT_NE(hashes.threads, plain) << entry.info.name << ": the rules changed nothing";
    EXPECT_EQ(hashes.mpi, hashes.threads) << entry.info.name;
    EXPECT_EQ(hashes.simgrid, hashes.threads) << entry.info.name;
  }
}

// Every algorithm also trains on MPI and in SimGrid, with payloads and size-only (the deterministic ones' MPI and
// payload runs are the test above), and so does every sharded parameter server (--servers 2).
TEST_F(Algorithms, EveryAlgorithmRunsOnMpiAndSimgridWithAndWithoutPayloads) {
  for (const auto& entry : algorithm_catalog()) {
    for (const int servers : {1, 2}) {
      if (servers > 1 && !entry.info.shardable) continue;
      auto cli = with(entry.info.name);
      cli.run.hyper.servers = servers;
      cli.run.budget.iterations = 20;
      SCOPED_TRACE(entry.info.name + ", " + std::to_string(servers) + " servers");
      const auto seconds = [](const RunResult& result) {
        char text[32];
        std::snprintf(text, sizeof text, "%.17g", result.train_seconds);
        return std::string(text);
      };
      const double size_only_s = std::stod(run_simgrid(cli, /*payload=*/false, nullptr, seconds));
      EXPECT_GT(size_only_s, 0);
      if (entry.info.synchronous && servers == 1) continue;
      EXPECT_EQ(run_mpi(cli).size(), 16U);
      EXPECT_EQ(run_simgrid(cli, /*payload=*/true).size(), 16U);
    }
  }
}

// Compressed gradients (core/compressed_collectives.hpp) keep the replicas bit-identical on every executor: the
// codecs are deterministic (top-k breaks ties by index) and every worker decodes the same messages in rank order.
TEST_F(Algorithms, CompressedExchangesGiveTheSameWeightsOnThreadsMpiAndSimgrid) {
  for (const auto& entry : algorithm_catalog()) {
    if (!entry.info.compresses) continue;
    auto cli = with(entry.info.name);
    cli.run.budget.iterations = 20;
    const std::string plain = hex(run_threads(cli).parameters_hash);
    for (const Compression compression : {Compression::kFp16, Compression::kOneBit, Compression::kTopK}) {
      cli.run.hyper.compression = compression;
      const auto hashes = run_everywhere(cli);
      const std::string what = entry.info.name + " --compression " + std::string(to_string(compression));
      EXPECT_NE(hashes.threads, plain) << what << ": the compression changed nothing";
      EXPECT_EQ(hashes.mpi, hashes.threads) << what;
      EXPECT_EQ(hashes.simgrid, hashes.threads) << what;
    }
  }
}

// Bytes on the wire per iteration and worker (RunResult::bytes_sent_per_rank): the fp32 ring's 2 (P-1)/P x 4n, half
// of it in fp16, and P - 1 compressed messages for the allgathers of onebit and topk.
TEST_F(Algorithms, CompressionShrinksTheBytesOnTheWire) {
  const auto per_iteration = [&](const std::string& algorithm, Compression compression) {
    auto cli = with(algorithm);
    cli.run.hyper.compression = compression;
    const auto result = run_threads(cli);
    const auto bytes = bytes_sent_per_iteration(result);
    EXPECT_TRUE(bytes.has_value()) << algorithm;
    return bytes.value_or(0);
  };
  const ModelSpec model = build_model(cli_.run.model);
  const auto parameters = static_cast<std::size_t>(model.parameters());
  std::size_t layers = 0;
  for (const auto& layer : model.layers) layers += layer.parameters > 0 ? 1 : 0;
  const double p = cli_.run.workers;
  for (const auto& entry : algorithm_catalog()) {
    if (!entry.info.compresses) continue;
    const double none = per_iteration(entry.info.name, Compression::kNone);
    EXPECT_DOUBLE_EQ(none, 2 * (p - 1) / p * 4 * static_cast<double>(parameters)) << entry.info.name;
    EXPECT_DOUBLE_EQ(per_iteration(entry.info.name, Compression::kFp16), none / 2) << entry.info.name;
    EXPECT_DOUBLE_EQ(per_iteration(entry.info.name, Compression::kOneBit),
                     (p - 1) * static_cast<double>(onebit_bytes(parameters, layers)))
        << entry.info.name;
    EXPECT_DOUBLE_EQ(per_iteration(entry.info.name, Compression::kTopK),
                     (p - 1) * static_cast<double>(topk_bytes(topk_count(parameters, 0.01))))
        << entry.info.name;
  }
}

TEST_F(Algorithms, CompressionIsRefusedWhereTheAlgorithmCannotCompress) {
  for (const auto& entry : algorithm_catalog()) {
    auto cli = with(entry.info.name);
    cli.run.hyper.compression = Compression::kTopK;
    if (entry.info.compresses) {
      EXPECT_NO_THROW(check_run_options(cli.run)) << entry.info.name;
      cli.run.hyper.topk_ratio = 0;
    }
    EXPECT_THROW(check_run_options(cli.run), InputError) << entry.info.name;
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
