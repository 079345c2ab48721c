// algorithms/ssp_sgd: stale synchronous parallel. On a SimGrid star whose last worker computes 4 times slower
// (platform noise.stragglers), the realised staleness in clocks -- how many pushes the pushing worker trails the
// most advanced one -- never exceeds the bound s, reaches it when the others run ahead, and exceeds it without a
// bound. With s = 0 (BSP) the server applies each clock's pushes in worker order, so ssp-sgd --staleness-bound 0
// is deterministic: the same weights on threads, MPI and SimGrid.

#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "tests/algorithms/training_runs.hpp"

namespace dsgd::algorithms {
namespace {

using Ssp = testing::TrainingRuns;

constexpr int kWorkers = 4;
constexpr double kSlowdown = 4;
constexpr int kIterations = 40;
constexpr std::int64_t kUnbounded = 1000;  // more than any worker's pushes: asynchronous

struct Realised {
  long long max_clocks = -1;
  long long pushes = 0;
  double mean_clocks = 0;
  long long max_updates = 0;
  double seconds = 0;
};

TEST_F(Ssp, AStragglerIsHeldToTheBoundAndOnlyToIt) {
  const auto straggle = [&](std::int64_t bound, int servers) {
    auto cli = with("ssp-sgd");
    cli.run.workers = kWorkers;
    cli.run.hyper.staleness_bound = bound;
    cli.run.hyper.servers = servers;
    cli.run.budget.iterations = kIterations;
    cli.run.budget.eval_every = kIterations;  // one round: nobody waits for an evaluation
    // A network fast enough to cost nothing beside compute; the last worker's node 4 times slower.
    auto platform = simulate::flat_platform(servers + kWorkers, 1e-9, 1e15, 1e10);
    platform.noise.stragglers = {{servers + kWorkers - 1, kSlowdown}};
    const std::string text = run_simgrid(cli, /*payload=*/true, &platform, [](const RunResult& result) {
      char line[128];
      std::snprintf(line, sizeof line, "%lld %lld %.17g %lld %.17g",
                    static_cast<long long>(result.clock_staleness.max()),
                    static_cast<long long>(result.clock_staleness.total()), result.clock_staleness.mean(),
                    static_cast<long long>(result.staleness.max()), result.train_seconds);
      return std::string(line);
    });
    Realised realised;
    EXPECT_EQ(std::sscanf(text.c_str(), "%lld %lld %lf %lld %lf", &realised.max_clocks, &realised.pushes,
                          &realised.mean_clocks, &realised.max_updates, &realised.seconds),
              5)
        << text;
    std::printf(
        "s = %4lld, %d servers: clock staleness max %lld (mean %.2f) over %lld pushes, update staleness max "
        "%lld, %.4g simulated s\n",
        static_cast<long long>(bound), servers, realised.max_clocks, realised.mean_clocks, realised.pushes,
        realised.max_updates, realised.seconds);
    EXPECT_EQ(realised.pushes, kWorkers * kIterations);
    return realised;
  };
  for (const int servers : {1, 2}) {
    SCOPED_TRACE(std::to_string(servers) + " servers");
    EXPECT_EQ(straggle(0, servers).max_clocks, 0);
    // The fast workers run ahead until the bound holds them.
    EXPECT_EQ(straggle(2, servers).max_clocks, 2);
    // Unbounded, they finish 40 pushes while the straggler has made about 10.
    EXPECT_GT(straggle(kUnbounded, servers).max_clocks, 2);
  }
}

TEST_F(Ssp, BoundZeroGivesTheSameWeightsOnThreadsMpiAndSimgrid) {
  for (const int servers : {1, 2}) {
    auto cli = with("ssp-sgd");
    cli.run.hyper.staleness_bound = 0;
    cli.run.hyper.servers = servers;
    cli.run.budget.iterations = 20;
    const auto hashes = run_everywhere(cli);
    EXPECT_EQ(hashes.mpi, hashes.threads) << servers << " servers";
    EXPECT_EQ(hashes.simgrid, hashes.threads) << servers << " servers";
    EXPECT_EQ(testing::hex(run_threads(cli).parameters_hash), hashes.threads) << servers << " servers, again";
  }
}

}  // namespace
}  // namespace dsgd::algorithms
