// simulate/analytic/executor: the analytic level against the flow and message levels where they overlap (weak
// scaling of a synchronous algorithm on core-level KNL nodes on the dragonfly, with and without compute noise),
// what it refuses, and a million-core point.

#include "simulate/analytic/executor.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "algorithms/algorithm.hpp"
#include "core/collectives.hpp"
#include "platforms/catalog.hpp"
#include "simulate/weak_scaling.hpp"
#include "tests/support/error_message.hpp"
#include "tests/support/shared_chip_platform.hpp"

namespace dsgd::simulate {
namespace {

using testing::error_of;

// The first algorithm of the catalog that matches (which one does not matter here).
std::string algorithm_where(bool synchronous, bool has_master) {
  for (const auto& entry : algorithms::algorithm_catalog()) {
    if (entry.info.synchronous == synchronous && entry.info.has_master == has_master) return entry.info.name;
  }
  throw InternalError("the catalog has no such algorithm");
}

ScalingOptions knl_sweep(Fidelity fidelity) {
  ScalingOptions options;
  options.algorithm = algorithm_where(/*synchronous=*/true, /*has_master=*/false);
  options.model = "googlenet";
  options.hyper.batch = 8;
  options.workers = {4, 8, 16, 64};  // 1, 2, 4 and 16 nodes: one router, one chassis, two chassis
  options.iterations = 3;
  options.ranks_per_node = 4;
  options.fidelity = fidelity;
  return options;
}

// Three data-parallel iterations: a compute step, then one collective of 1 Mi floats.
SimulationResult iterations(const platforms::Platform& platform, int ranks, int ranks_per_node, Fidelity fidelity,
                            const std::function<void(Comm&, Floats)>& collective) {
  WorldOptions world;
  world.size = ranks;
  world.payload = false;
  SimulationOptions options;
  options.fidelity = fidelity;
  options.placement.ranks_per_node = ranks_per_node;
  options.noise_seed = 7;
  return simgrid::run(
      platform, world,
      [&collective](Comm& comm) {
        for (int iteration = 0; iteration < 3; ++iteration) {
          comm.compute({2e9, "conv", Category::kForwardBackward, {}, 0});
          collective(comm, Floats{nullptr, std::size_t{1} << 20});
        }
      },
      options);
}

const auto tree = [](Comm& comm, Floats buffer) {
  reduce(comm, buffer, 0);
  broadcast(comm, buffer, 0);
};

// Where transfers of a step share no link, the analytic level's time is the flow and message levels'.
void expect_levels_agree(const platforms::Platform& platform, int ranks_per_node,
                         const std::function<void(Comm&, Floats)>& collective, bool with_message = true) {
  for (const int ranks : {4, 8, 16, 64}) {
    SCOPED_TRACE(platform.name + ", " + std::to_string(ranks) + " ranks");
    const double analytic = iterations(platform, ranks, ranks_per_node, Fidelity::kAnalytic, collective).time_s;
    const double flow = iterations(platform, ranks, ranks_per_node, Fidelity::kFlow, collective).time_s;
    // Not exact: two transfers of a step inside a KNL node may meet at an MCDRAM controller (0.7% here).
    EXPECT_NEAR(analytic, flow, 1e-2 * flow);
    if (!with_message) continue;
    const double message = iterations(platform, ranks, ranks_per_node, Fidelity::kMessage, collective).time_s;
    EXPECT_NEAR(analytic, message, 1e-2 * message);
  }
}

TEST(AnalyticLevel, TreeCollectivesAgreeWithFlowAndMessageOnKnlNodesOfTheDragonfly) {
  expect_levels_agree(platforms::catalog_platform("cori-knl"), 4, tree);
}

TEST(AnalyticLevel, AgreesUnderComputeNoise) {
  // The flow level draws the same factors (per node and compute step of the algorithm), so the slowest node of
  // each step is the same one. The message level also runs the collectives' additions as noisy compute steps of
  // their ranks, so its draws differ from rank to rank.
  auto platform = platforms::catalog_platform("cori-knl");
  platform.noise.distribution = platforms::NoiseDistribution::kLognormal;
  platform.noise.spread = 0.1;
  expect_levels_agree(platform, 4, tree, /*with_message=*/false);
}

TEST(AnalyticLevel, EveryAllreduceAgreesOnAStarWithoutSharedLinks) {
  for (const auto algorithm : {AllreduceAlgorithm::kRing, AllreduceAlgorithm::kRecursiveDoubling,
                               AllreduceAlgorithm::kRabenseifner, AllreduceAlgorithm::kReduceBroadcast}) {
    SCOPED_TRACE(std::string(to_string(algorithm)));
    expect_levels_agree(flat_platform(64, 1.3e-6, 8e9, 1e12), 0,
                        [algorithm](Comm& comm, Floats buffer) { allreduce(comm, buffer, algorithm); });
  }
}

TEST(AnalyticLevel, IsALowerBoundWhereTransfersShareLinks) {
  // A ring on a star whose backbone every message crosses: the flow and message levels share the backbone among
  // the step's 8 transfers, the analytic level prices each transfer alone.
  const auto ring = [](Comm& comm, Floats buffer) { allreduce(comm, buffer, AllreduceAlgorithm::kRing); };
  auto platform = flat_platform(8, 1.3e-6, 8e9, 1e12);
  platform.network.topology.link_bandwidth_Bps = 8e9;
  const double analytic = iterations(platform, 8, 1, Fidelity::kAnalytic, ring).time_s;
  const double flow = iterations(platform, 8, 1, Fidelity::kFlow, ring).time_s;
  std::printf("ring over a shared backbone: analytic %.6g s, flow %.6g s\n", analytic, flow);
  EXPECT_LT(analytic, flow);
}

TEST(AnalyticLevel, AgreesOnKnlNodesWhoseLinksAreFullDuplex) {
  // A ring on 4 ranks per KNL of a dragonfly: each node sends one chunk out while it receives another, which
  // full-duplex links carry at once, so the flow level has nothing to share that the analytic level leaves out.
  const auto ring = [](Comm& comm, Floats buffer) { allreduce(comm, buffer, AllreduceAlgorithm::kRing); };
  const auto platform = platforms::catalog_platform("cori-knl");
  const double analytic = iterations(platform, 16, 4, Fidelity::kAnalytic, ring).time_s;
  const double flow = iterations(platform, 16, 4, Fidelity::kFlow, ring).time_s;
  EXPECT_NEAR(analytic, flow, 1e-4 * flow);
}

TEST(AnalyticLevel, NoiseSlowsLargerWorldsMore) {
  auto platform = platforms::catalog_platform("cori-knl");
  const auto quiet = simulate_weak_scaling(platform, knl_sweep(Fidelity::kAnalytic));
  platform.noise.distribution = platforms::NoiseDistribution::kLognormal;
  platform.noise.spread = 0.1;
  const auto noisy = simulate_weak_scaling(platform, knl_sweep(Fidelity::kAnalytic));
  // The expected maximum of n lognormal factors grows with n: the straggler effect.
  EXPECT_LT(noisy.back().efficiency, quiet.back().efficiency);
}

TEST(AnalyticLevel, RefusesWhatOneRepresentativeRankCannotStandFor) {
  const auto platform = platforms::catalog_platform("cori-knl");
  auto options = knl_sweep(Fidelity::kAnalytic);
  options.algorithm = algorithm_where(/*synchronous=*/true, /*has_master=*/true);
  const std::string master = error_of<InputError>([&] { simulate_weak_scaling(platform, options); });
  EXPECT_NE(master.find("without a master"), std::string::npos) << master;

  WorldOptions world;
  world.size = 8;
  world.payload = false;
  SimulationOptions analytic;
  analytic.fidelity = Fidelity::kAnalytic;
  const auto sends = [](Comm& comm) { comm.send(1, 3, nullptr, 64, Category::kNetwork); };
  const std::string p2p = error_of<UnavailableError>([&] { simgrid::run(platform, world, sends, analytic); });
  EXPECT_NE(p2p.find("rank 0 sends 64 bytes to rank 1"), std::string::npos) << p2p;
  world.payload = true;
  EXPECT_THROW(simgrid::run(
                   platform, world, [](Comm&) {}, analytic),
               InputError);
}

TEST(AnalyticLevel, ComputesOnASharedChipAsIfEveryRankComputed) {
  // A synchronous algorithm's ranks compute together, so the analytic level charges every step at the chip's full
  // load (all_computing_seconds); the message level's fluid chip gives the same where all ranks compute in step.
  struct Case {
    int nodes, chip_nodes, cores, ranks;
    double expected_s;  // per step
  };
  for (const Case& c : {Case{2, 2, 2, 2, testing::kBusyS}, Case{3, 3, 2, 3, 1.5 * testing::kBusyS},
                        Case{4, 4, 4, 2, testing::kAloneS + (testing::kBusyS - testing::kAloneS) / 3},
                        Case{2, 2, 2, 1, testing::kAloneS}}) {
    SCOPED_TRACE(std::to_string(c.ranks) + " ranks on a chip of " + std::to_string(c.chip_nodes) + " nodes, " +
                 std::to_string(c.cores) + " cores");
    const auto platform = testing::shared_chip_platform(c.nodes, c.chip_nodes, c.cores);
    WorldOptions world;
    world.size = c.ranks;
    world.payload = false;
    const auto two_steps = [](Comm& comm) {
      comm.compute(testing::conv_step());
      comm.compute(testing::conv_step());
    };
    SimulationOptions options;
    options.fidelity = Fidelity::kAnalytic;
    const double analytic = simgrid::run(platform, world, two_steps, options).time_s;
    EXPECT_NEAR(analytic, 2 * c.expected_s, 1e-12) << "expectation " << 2 * c.expected_s << " s";
    options.fidelity = Fidelity::kMessage;
    const double message = simgrid::run(platform, world, two_steps, options).time_s;
    EXPECT_NEAR(analytic, message, 1e-9 * message);
  }
}

// The binomial broadcast and reduce, enumerated in closed form (the default), price exactly as their recorded
// schedules do (SimulationOptions::analytic_recorded_schedules): the same steps, the same maxima, the same sums.
TEST(AnalyticLevel, TreeShortcutEqualsRecordedSchedules) {
  auto noisy = platforms::catalog_platform("cori-knl");
  noisy.noise.distribution = platforms::NoiseDistribution::kLognormal;
  noisy.noise.spread = 0.1;
  const auto rooted = [](int root) {
    return [root](Comm& comm, Floats buffer) {
      reduce(comm, buffer, root % comm.size());
      broadcast(comm, buffer, (root + 1) % comm.size());
    };
  };
  struct Case {
    platforms::Platform platform;
    int ranks_per_node;
  };
  int compared = 0;
  for (const auto& [platform, ranks_per_node] :
       {Case{platforms::catalog_platform("cori-knl"), 0}, Case{platforms::catalog_platform("cori-knl"), 4},
        Case{noisy, 68}, Case{flat_platform(1500, 1.3e-6, 8e9, 1e12), 0}}) {
    for (const int ranks : {1, 2, 3, 5, 17, 64, 100, 137, 1000}) {
      for (const int root : {0, 3}) {
        SCOPED_TRACE(platform.name + ", " + std::to_string(ranks) + " ranks, " + std::to_string(ranks_per_node) +
                     " per node, root " + std::to_string(root));
        WorldOptions world;
        world.size = ranks;
        world.payload = false;
        SimulationOptions options;
        options.fidelity = Fidelity::kAnalytic;
        options.placement.ranks_per_node = ranks_per_node;
        options.noise_seed = 7;
        const auto worker = [&](Comm& comm) {
          for (int iteration = 0; iteration < 3; ++iteration) {
            comm.compute({2e9, "conv", Category::kForwardBackward, {}, 0});
            rooted(root)(comm, Floats{nullptr, 12345});
          }
        };
        const auto shortcut = simgrid::run(platform, world, worker, options);
        options.analytic_recorded_schedules = true;
        const auto recorded = simgrid::run(platform, world, worker, options);
        EXPECT_EQ(shortcut.time_s, recorded.time_s);
        ASSERT_EQ(shortcut.per_rank.size(), 1U);
        EXPECT_EQ(shortcut.per_rank[0].seconds, recorded.per_rank[0].seconds);
        if (ranks > 1) {
          EXPECT_GT(shortcut.per_rank[0][Category::kGpuGpuPara], 0.0);
        }
        ++compared;
      }
    }
  }
  EXPECT_EQ(compared, 4 * 9 * 2);
}

// Table 4's algorithm (sync-easgd3: a tree reduce and broadcast per iteration) at one rank per core on 64 KNL nodes:
// the same seconds per iteration either way.
TEST(AnalyticLevel, TreeShortcutEqualsRecordedSchedulesInAWeakScalingSweep) {
  const auto platform = platforms::catalog_platform("knl-aries-1m");
  auto options = knl_sweep(Fidelity::kAnalytic);
  options.algorithm = "sync-easgd3";
  options.ranks_per_node = 0;
  options.workers = {68, 2 * 68 + 5, 64 * 68};
  const auto shortcut = simulate_weak_scaling(platform, options);
  options.analytic_recorded_schedules = true;
  const auto recorded = simulate_weak_scaling(platform, options);
  ASSERT_EQ(shortcut.size(), recorded.size());
  for (std::size_t i = 0; i < shortcut.size(); ++i) {
    EXPECT_EQ(shortcut[i].seconds_per_iteration, recorded[i].seconds_per_iteration) << shortcut[i].workers;
    EXPECT_EQ(shortcut[i].efficiency, recorded[i].efficiency) << shortcut[i].workers;
    EXPECT_EQ(shortcut[i].bytes_sent_per_iteration, recorded[i].bytes_sent_per_iteration) << shortcut[i].workers;
  }
}

TEST(AnalyticLevel, TenMillionCoresNeedNoSimGrid) {
  // knl-aries-10m: 147,072 KNL nodes, beyond what SimGrid can wire; the analytic level places its first node only.
  const auto platform = platforms::catalog_platform("knl-aries-10m");
  EXPECT_FALSE(simgrid_can_build(platform));
  EXPECT_EQ(platform.nodes.count * platform.nodes.cpu.cores(), 10000896);
}

TEST(AnalyticLevel, AMillionCoresOnTheExtendedDragonfly) {
  // 1,000,008 cores = 14,706 KNL nodes of 4 ranks: beyond SimGrid's dragonfly wiring, not beyond the analytic
  // level (its speed is a benchmark's business: simulate/bench).
  const auto platform = platforms::catalog_platform("knl-aries-1m");
  auto options = knl_sweep(Fidelity::kAuto);
  options.workers = {4, 1000008 / 17};
  const auto points = simulate_weak_scaling(platform, options);
  EXPECT_EQ(points.back().nodes, 14706);
  EXPECT_EQ(points.back().fidelity, Fidelity::kAnalytic);  // chosen by scale
  EXPECT_GT(points.back().efficiency, 0.0);
  EXPECT_LT(points.back().efficiency, 1.0);
  options.fidelity = Fidelity::kFlow;
  options.workers = {8};
  const std::string refused = error_of<InputError>([&] { simulate_weak_scaling(platform, options); });
  EXPECT_NE(refused.find("analytic"), std::string::npos) << refused;
}

}  // namespace
}  // namespace dsgd::simulate
