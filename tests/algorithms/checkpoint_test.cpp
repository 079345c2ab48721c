// Checkpoints of training runs (algorithms/run_checkpoint.hpp): every synchronous algorithm of the catalog, run to a
// checkpoint and resumed from it, ends with the weights (hash) and the accuracy history of an uninterrupted run --
// sync-sgd also with each allreduce, each compression, local steps, per-layer messages and the large-batch rules. A
// checkpoint written on MPI resumes on threads. What checkpoints do not cover is refused in one line.
#include <gtest/gtest.h>

#include "algorithms/run_checkpoint.hpp"
#include "tests/algorithms/training_runs.hpp"
#include "tests/support/error_message.hpp"

namespace dsgd::algorithms::testing {
namespace {

using dsgd::testing::input_error;

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

class AlgorithmsCheckpoint : public TrainingRuns {
 protected:
  void SetUp() override {
    TrainingRuns::SetUp();
    // 32 x 3 workers: the resumed half crosses an epoch of the 960 images (each worker draws its own order).
    cli_.run.hyper.batch = 32;
    cli_.run.budget.eval_every = 10;
  }

  // `cli` on threads, counting the evaluations this process made (a resumed run makes only its own).
  RunResult run_counting(const app::RunCli& cli, int* evaluations, int ranks_per_node = 0) {
    RunResult result;
    WorldOptions world;
    world.size = world_size(cli.run);
    world.ranks_per_node = ranks_per_node;
    measure::threads::run(world,
                          training_worker(cli.run, data_, &result, [evaluations](const RunPoint&) { ++*evaluations; }));
    return result;
  }

  // `cli` to `total` iterations uninterrupted, and to `stop` with a checkpoint then resumed to `total`: the same final
  // weights and history, and the resumed run trained only the rest.
  void expect_resume_is_exact(app::RunCli cli, std::int64_t stop, std::int64_t total, int ranks_per_node = 0) {
    const std::string label = cli.run.algorithm + " " + std::string(to_string(cli.run.hyper.allreduce)) + " " +
                              std::string(to_string(cli.run.hyper.compression));
    cli.run.budget.iterations = total;
    int evaluations = 0;
    const RunResult straight = run_counting(cli, &evaluations, ranks_per_node);
    const auto file = dir_ / "run.ckpt";
    std::filesystem::remove(file);
    cli.run.checkpoint = {file.string(), 0, /*resume=*/true};  // no file yet: a fresh start
    cli.run.budget.iterations = stop;
    run_counting(cli, &evaluations, ranks_per_node);
    EXPECT_THROW(check_resume(cli.run), InputError) << "--iterations " << stop << " is spent";
    cli.run.budget.iterations = total;
    EXPECT_EQ(check_resume(cli.run), stop);
    evaluations = 0;
    const RunResult resumed = run_counting(cli, &evaluations, ranks_per_node);
    EXPECT_EQ(evaluations, (total - stop) / cli.run.budget.eval_every) << label;
    EXPECT_EQ(hex(resumed.parameters_hash), hex(straight.parameters_hash)) << label;
    EXPECT_EQ(resumed.iterations, total) << label;
    ASSERT_EQ(resumed.curve.size(), straight.curve.size()) << label;
    for (std::size_t i = 0; i < straight.curve.size(); ++i) {
      EXPECT_EQ(resumed.curve[i].iterations, straight.curve[i].iterations) << label;
      EXPECT_EQ(resumed.curve[i].test_accuracy, straight.curve[i].test_accuracy) << label << " point " << i;
      EXPECT_EQ(resumed.curve[i].train_loss, straight.curve[i].train_loss) << label << " point " << i;
    }
    // Every rank's breakdown covers both halves.
    ASSERT_EQ(resumed.per_rank.size(), straight.per_rank.size());
    EXPECT_GT(resumed.per_rank.back()[Category::kForwardBackward], 0);
    EXPECT_EQ(read_checkpoint(file).iteration, total);
  }
};

TEST_F(AlgorithmsCheckpoint, EverySynchronousAlgorithmResumesBitIdentically) {
  int covered = 0;
  for (const auto& entry : algorithm_catalog()) {
    if (!entry.info.synchronous) continue;
    auto cli = with(entry.info.name);
    if (entry.info.name == "a-bsp-sgd") cli.run.hyper.period = 5;
    expect_resume_is_exact(cli, 20, 40);
    ++covered;
  }
  EXPECT_GE(covered, 7);
}

TEST_F(AlgorithmsCheckpoint, SyncSgdResumesWithEveryAllreduceAndCompression) {
  for (const auto allreduce : kAllreduceAlgorithms) {
    auto cli = with("sync-sgd");
    cli.run.hyper.allreduce = allreduce;
    expect_resume_is_exact(cli, 20, 30, /*ranks_per_node=*/2);
  }
  for (const auto compression : kCompressions) {
    auto cli = with("sync-sgd");
    cli.run.hyper.compression = compression;
    expect_resume_is_exact(cli, 20, 30);
  }
  auto cli = with("sync-sgd");
  cli.run.hyper.per_layer = true;
  cli.run.hyper.period = 2;
  expect_resume_is_exact(cli, 20, 30);
  // The warm-up's schedule and LARS's rates continue from the optimiser's step count.
  cli = with("sync-sgd");
  cli.run.hyper.lr_scaling = nn::LrScaling::kLinear;
  cli.run.hyper.warmup_iterations = 30;
  cli.run.hyper.lars = true;
  expect_resume_is_exact(cli, 10, 40);
}

// A checkpoint written by dsgd-mpi run (rank 0 gathers the ranks' states over MPI) resumes on threads.
TEST_F(AlgorithmsCheckpoint, ACheckpointWrittenOnMpiResumesOnThreads) {
  auto cli = with("sync-sgd");
  cli.run.budget.iterations = 30;
  const std::string straight = hex(run_threads(cli).parameters_hash);
  const auto file = dir_ / "mpi.ckpt";
  cli.run.checkpoint = {file.string(), 0, false};
  cli.run.budget.iterations = 20;
  ASSERT_FALSE(run_mpi(cli).empty());
  EXPECT_EQ(read_checkpoint(file).iteration, 20);
  cli.run.checkpoint.resume = true;
  cli.run.budget.iterations = 30;
  EXPECT_EQ(hex(run_threads(cli).parameters_hash), straight);
}

TEST_F(AlgorithmsCheckpoint, WhatCheckpointsDoNotCoverIsRefused) {
  auto cli = with("async-sgd");
  cli.run.checkpoint.path = (dir_ / "x.ckpt").string();
  EXPECT_EQ(input_error([&] { check_run_options(cli.run); }),
            "run: --checkpoint resumes the deterministic algorithms only; async-sgd is asynchronous");
  cli = with("sync-sgd");
  cli.run.checkpoint.path = (dir_ / "x.ckpt").string();
  cli.run.checkpoint.every = 15;
  EXPECT_TRUE(contains(input_error([&] { check_run_options(cli.run); }),
                       "--checkpoint-every (15) must be a multiple of --eval-every (10)"));
  cli.run.checkpoint = {};
  cli.run.checkpoint.resume = true;
  EXPECT_TRUE(contains(input_error([&] { check_run_options(cli.run); }), "need --checkpoint FILE"));
}

// Another option, other data or a spent budget: the resumed run is refused, naming the first field that differs.
TEST_F(AlgorithmsCheckpoint, AMismatchedCheckpointIsRefused) {
  auto cli = with("sync-sgd");
  const auto file = dir_ / "run.ckpt";
  cli.run.checkpoint = {file.string(), 0, true};
  cli.run.budget.iterations = 10;
  run_threads(cli);
  cli.run.budget.iterations = 20;
  auto other = cli;
  other.run.hyper.learning_rate = 0.02F;
  EXPECT_EQ(input_error([&] { check_resume(other.run); }),
            "checkpoint " + file.string() + " does not match this run: lr is 0.00999999978 there, 0.0199999996 here");
  other = cli;
  other.run.workers = 2;
  EXPECT_TRUE(contains(input_error([&] { run_threads(other); }), "workers is 3 there, 2 here"));
  // Other data of the same shape: rank 0 compares the data's CRC-32.
  dsgd::testing::write_idx(dir_ / "other", "train", dsgd::testing::make_images(960, 99));
  dsgd::testing::write_idx(dir_ / "other", "t10k", dsgd::testing::make_images(200, 2));
  other = cli;
  other.dataset = "idx:" + (dir_ / "other").string();
  data_ = app::load_run_data(other);
  EXPECT_TRUE(contains(input_error([&] { run_threads(other); }), "train_data is 960 images 1x28x28"));
  cli.run.budget.iterations = 10;
  EXPECT_TRUE(contains(input_error([&] { check_resume(cli.run); }), "--iterations 10 is spent"));
}

}  // namespace
}  // namespace dsgd::algorithms::testing
