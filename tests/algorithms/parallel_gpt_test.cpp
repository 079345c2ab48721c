// algorithms/parallel_gpt: a tiny GPT trained with tensor x pipeline x data parallelism on the threads executor and
// in SimGrid (with payloads). A 2 x 2 x 2 grid's reduced gradients equal one rank's on the same batch within
// rounding, for every schedule; ZeRO 1-3 give the bits of replicated Adam; the threads and SimGrid executors give
// the same bits; the loss falls.

#include "algorithms/parallel_gpt.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "measure/threads/executor.hpp"
#include "platforms/catalog.hpp"
#include "simulate/simgrid/executor.hpp"
#include "tests/algorithms/parallel_gpt_runs.hpp"

namespace dsgd::algorithms {
namespace {

using namespace testing::parallel_gpt;

void run_on_threads(const ParallelGptOptions& run, Gathered& into, bool step_last, const TokenSource& source = tokens) {
  WorldOptions world;
  world.size = run.grid.size();
  world.timeout_s = 60;
  measure::threads::run(world,
                        [&](Comm& comm) { run_parallel_gpt(comm, run, source, gathering(into, comm, step_last)); });
}

// The shard's slice of the full tensor `full` (one rank's run).
std::vector<float> slice(const nn::GptTensor& shard, const std::vector<float>& full) {
  std::vector<float> out;
  for (std::int64_t r = 0; r < shard.shard_rows; ++r) {
    for (std::int64_t c = 0; c < shard.shard_columns; ++c) {
      const std::int64_t row = shard.split == nn::GptSplit::kRows ? shard.first + r : r;
      const std::int64_t column = shard.split == nn::GptSplit::kColumns ? shard.first + c : c;
      out.push_back(full[static_cast<std::size_t>(row * shard.columns + column)]);
    }
  }
  return out;
}

double largest(const std::vector<float>& values) {
  double out = 0;
  for (const float value : values) out = std::max(out, static_cast<double>(std::abs(value)));
  return out;
}

// One rank on the whole batch: replica r's micro-batch k is its micro-batch r x micro_batches + k.
void expect_grid_matches_one_rank(ParallelGptOptions grid_run) {
  Gathered grid;
  run_on_threads(grid_run, grid, false);
  ParallelGptOptions single = grid_run;
  const int per_replica = grid_run.micro_batches;
  single.grid = {1, 1, 1};
  single.virtual_stages = 1;
  single.schedule = PipelineSchedule::kOneForwardOneBackward;
  single.micro_batches = per_replica * grid_run.grid.dp;
  Gathered one;
  run_on_threads(single, one, false,
                 [per_replica](std::int64_t iteration, int, int micro_batch, std::span<std::int32_t> ids,
                               std::span<std::int32_t> targets) {
                   tokens(iteration, micro_batch / per_replica, micro_batch % per_replica, ids, targets);
                 });
  ASSERT_FALSE(grid.gradients.empty());
  for (const auto& [key, gradient] : grid.gradients) {
    const auto full = one.gradients.find({key.first, 0});
    ASSERT_NE(full, one.gradients.end()) << key.first;
    const auto expected = slice(grid.shapes.at(key), full->second);
    const double scale = std::max(largest(full->second), 1e-6);
    for (std::size_t i = 0; i < gradient.size(); ++i) {
      ASSERT_NEAR(gradient[i], expected[i], 1e-4 * scale) << key.first << " shard " << key.second << " element " << i;
    }
  }
  // The loss of the grid's last iteration equals the one rank's.
  const double loss = grid.losses.at(grid_run.grid.size() - 1).back();
  EXPECT_NEAR(loss, one.losses.at(0).back(), 1e-5 * loss);
}

TEST(ParallelGpt, A2x2x2GridGivesTheOneRankGradientIn1F1B) { expect_grid_matches_one_rank(options({2, 2, 2}, 4)); }

TEST(ParallelGpt, GpipeAndInterleavedGiveTheOneRankGradient) {
  auto gpipe = options({2, 2, 2}, 2);
  gpipe.schedule = PipelineSchedule::kGpipe;
  expect_grid_matches_one_rank(gpipe);
  auto interleaved = options({1, 2, 2}, 4);
  interleaved.schedule = PipelineSchedule::kInterleaved;
  interleaved.virtual_stages = 2;
  expect_grid_matches_one_rank(interleaved);
}

TEST(ParallelGpt, TiedEmbeddingsAcrossStagesGiveTheOneRankGradient) {
  expect_grid_matches_one_rank(options({2, 2, 1}, 2, true));
}

// Sharded Adam is element-wise Adam on shards: the weights after three steps are the replicated run's, bit for bit.
TEST(ParallelGpt, ZeroStagesGiveTheReplicatedBits) {
  auto run = options({2, 1, 4}, 2);
  run.iterations = 3;
  Gathered replicated;
  run_on_threads(run, replicated, true);
  for (const int stage : {1, 2, 3}) {
    auto zero = run;
    zero.zero_stage = stage;
    Gathered sharded;
    run_on_threads(zero, sharded, true);
    EXPECT_EQ(sharded.parameters, replicated.parameters) << "ZeRO-" << stage;
  }
}

TEST(ParallelGpt, ThreadsAndSimgridGiveTheSameBitsAndTheLossFalls) {
  auto run = options({2, 2, 2}, 4);
  run.iterations = 12;
  Gathered threads;
  run_on_threads(run, threads, true);
  const auto& losses = threads.losses.at(run.grid.size() - 1);
  EXPECT_LT(losses.back(), losses.front() * 0.8) << losses.front() << " -> " << losses.back();

  // SimGrid carries the payloads; its run happens in a forked child, so the hash comes back as the result's text.
  WorldOptions world;
  world.size = run.grid.size();
  world.timeout_s = 60;
  world.payload = true;
  Gathered in_simulation;
  simulate::SimulationOptions simulation;
  simulation.collect = [&in_simulation] { return std::to_string(weights_hash(in_simulation)); };
  const auto result = simulate::simgrid::run(
      platforms::load_platform("selene"), world,
      [&](Comm& comm) { run_parallel_gpt(comm, run, tokens, gathering(in_simulation, comm, true)); }, simulation);
  const std::uint64_t simulated = std::stoull(result.collected);
  // The simulated clock also ran the kernels, priced on selene's A100 by shape.
  EXPECT_GT(result.per_rank.front().seconds[static_cast<std::size_t>(Category::kForwardBackward)], 0);
  EXPECT_EQ(simulated, weights_hash(threads));
}

TEST(ParallelGpt, RefusesAGridThatDoesNotFit) {
  Gathered unused;
  auto run = options({2, 3, 1}, 2);  // 4 layers on 3 stages
  EXPECT_THROW(run_on_threads(run, unused, true), InputError);
}

}  // namespace
}  // namespace dsgd::algorithms
