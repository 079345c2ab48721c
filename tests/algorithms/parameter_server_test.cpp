// algorithms/parameter_server: the parameter server sharded over --servers S ranks (ps-lite's key ranges). Every
// server updates its shard with the same element-wise rule, so with one worker (no race between pushes) the final
// weights cannot depend on S: that holds only if the shards split, travel and gather back exactly. With several
// workers the sharded server trains LeNet; the split rule and bad --servers are checked.

#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "core/collectives.hpp"
#include "tests/algorithms/training_runs.hpp"

namespace dsgd::algorithms {
namespace {

using testing::hex;
using ParameterServer = testing::TrainingRuns;

TEST(Shards, SplitTheParametersInOrderAsEvenlyAsPossible) {
  EXPECT_EQ(shard_of(10, 3, 0).offset, 0U);
  EXPECT_EQ(shard_of(10, 3, 0).count, 3U);
  EXPECT_EQ(shard_of(10, 3, 1).offset, 3U);
  EXPECT_EQ(shard_of(10, 3, 1).count, 3U);
  EXPECT_EQ(shard_of(10, 3, 2).offset, 6U);
  EXPECT_EQ(shard_of(10, 3, 2).count, 4U);
  for (const int shards : {1, 2, 5, 7}) {
    std::size_t next = 0;
    for (int index = 0; index < shards; ++index) {
      const Shard shard = shard_of(61706, shards, index);  // LeNet's parameters
      EXPECT_EQ(shard.offset, next);
      EXPECT_LE(shard.count, 61706U / shards + 1);
      EXPECT_GE(shard.count, 61706U / shards);
      next += shard.count;
    }
    EXPECT_EQ(next, 61706U);
  }
  EXPECT_THROW(shard_of(10, 3, 3), InputError);
  EXPECT_THROW(shard_of(10, 0, 0), InputError);
}

TEST_F(ParameterServer, OneWorkersWeightsDoNotDependOnTheNumberOfServers) {
  for (const auto& entry : algorithm_catalog()) {
    if (!entry.info.shardable) continue;
    auto cli = with(entry.info.name);
    cli.run.workers = 1;  // two rounds: the shards are gathered twice
    const std::string one = hex(run_threads(cli).parameters_hash);
    for (const int servers : {2, 3}) {
      cli.run.hyper.servers = servers;
      EXPECT_EQ(hex(run_threads(cli).parameters_hash), one) << entry.info.name << ", " << servers << " servers";
    }
    cli.run.hyper.servers = 2;
    EXPECT_EQ(run_mpi(cli), one) << entry.info.name << " on MPI, 2 servers";
    EXPECT_EQ(run_simgrid(cli, /*payload=*/true), one) << entry.info.name << " in SimGrid, 2 servers";
  }
}

TEST_F(ParameterServer, TwoServersTrainLeNet) {
  for (const int servers : {1, 2}) {
    auto cli = with("async-sgd");
    cli.run.hyper.servers = servers;
    cli.run.budget.iterations = 60;
    const RunResult result = run_threads(cli);
    ASSERT_EQ(result.curve.size(), 3U);
    const double first = result.curve.front().train_loss;
    const double last = result.curve.back().train_loss;
    std::printf("async-sgd, %d servers: train loss %.3f -> %.3f, test accuracy %.3f\n", servers, first, last,
                result.curve.back().test_accuracy);
    EXPECT_LT(last, 0.7 * first) << servers << " servers";
    EXPECT_GT(result.curve.back().test_accuracy, 0.5) << servers << " servers (chance is 0.1)";
    // Roles: servers 0..S-1 compute no gradients, the workers S..S+2 do; rank 0's shard saw every push.
    ASSERT_EQ(result.ranks, servers + 3);
    for (int rank = 0; rank < result.ranks; ++rank) {
      const double forward_backward_s = result.per_rank.at(static_cast<std::size_t>(rank))[Category::kForwardBackward];
      EXPECT_EQ(forward_backward_s > 0, rank >= servers) << "rank " << rank;
    }
    EXPECT_EQ(result.staleness.total(), 3 * 60);
  }
}

TEST_F(ParameterServer, ServersAreCountedAndChecked) {
  auto cli = with("async-easgd");
  cli.run.hyper.servers = 4;
  EXPECT_EQ(world_size(cli.run), 3 + 4);
  EXPECT_NO_THROW(check_run_options(cli.run));
  cli.run.hyper.servers = 0;
  EXPECT_THROW(check_run_options(cli.run), InputError);
  cli.run.hyper.servers = 1;
  cli.run.hyper.staleness_bound = -1;
  EXPECT_THROW(check_run_options(cli.run), InputError);
  for (const auto& entry : algorithm_catalog()) {
    if (entry.info.shardable) continue;
    auto other = with(entry.info.name);
    other.run.hyper.servers = 2;
    try {
      check_run_options(other.run);
      ADD_FAILURE() << entry.info.name << " took --servers 2";
    } catch (const InputError& error) {
      EXPECT_NE(std::string(error.what()).find("async-sgd"), std::string::npos) << error.what();
    }
  }
}

}  // namespace
}  // namespace dsgd::algorithms
